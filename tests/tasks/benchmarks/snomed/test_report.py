"""The SNOMED report on two hand-made runs (one model each) whose every number is worked out below."""

import json
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tasks.benchmarks.snomed.case import Case
from tasks.benchmarks.snomed.cases.loading import case_set_fingerprint, run_case_set_facts
from tasks.benchmarks.snomed.cases.settings import CaseSetSettings
from tasks.benchmarks.snomed.contracts import CONVERSATIONS, PREDICTIONS, SCORES
from tasks.benchmarks.snomed.report import ReportSettings, build_report, compute_metrics, default_report_dir
from tasks.benchmarks.snomed.run_data import load_runs
from tasks.benchmarks.snomed.scoring import CaseOutcome, summarise_run
from tasks.benchmarks.snomed.tables import build_tables, report_notes, run_summary
from tasks.core.preflight import UserError
from tasks.evals.outputs import write_table
from tasks.report.stats import seeded_rng
from tests.snomed_fixtures import write_case_set as write_snomed_case_set

SINUSITIS, BRONCHITIS, HYPERTENSION = "444814009", "10509002", "59621000"
MADE_UP = "123456789012"  # invalid and malformed
DISPLAYS = {
    SINUSITIS: "Viral sinusitis (disorder)",
    BRONCHITIS: "Acute bronchitis (disorder)",
    HYPERTENSION: "Essential hypertension (disorder)",
}
GOLD = {"c1": (BRONCHITIS, SINUSITIS), "c2": (HYPERTENSION,), "c3": ()}
SETTINGS = ReportSettings(n_resamples=200, seed=3)
CLINICIAN_CALL = {"prompt_tokens": 100, "completion_tokens": 10, "cost_usd": 0.125}
PATIENT_CALL = {"prompt_tokens": 50, "completion_tokens": 5, "cost_usd": 0.0625}

# Per interview: (status, predicted, invalid, malformed, questions asked, turn of the leaking reply).
# alpha: c1 half right with a made-up code and a leak of bronchitis at turn 2; c2 perfect; c3 failed.
# beta: c1 perfect; c2 no final answer (its reply cut at max_tokens); c3 empty gold answered with nothing
# (perfect).
INTERVIEWS: dict[str, dict[str, tuple[Any, ...]]] = {
    "alpha": {
        "c1": ("answered", (SINUSITIS, MADE_UP), (MADE_UP,), (MADE_UP,), 2, 2),
        "c2": ("answered", (HYPERTENSION,), (), (), 1, None),
        "c3": ("failed", (), (), (), 0, None),
    },
    "beta": {
        "c1": ("answered", (SINUSITIS, BRONCHITIS), (), (), 3, None),
        "c2": ("no_answer", (), (), (), 4, None),
        "c3": ("answered", (), (), (), 1, None),
    },
}

# Beta's c2 turn 3: a reply in Russian ("Yes"), which names nothing the leak check can read.
UNREAD_REPLY, UNREAD_TEXT = ("beta", "c2", 3), "\u0414\u0430"

# Not the defaults, so that the report shows these and not what it would assume.
CASE_SET_SETTINGS = CaseSetSettings(gold_scope="active", gold_tags=("disorder",))


def write_case_set(root: Path) -> Path:
    """The cases c1-c3 with their gold codes, written as `threadmed snomed cases` writes a case set."""
    cases = [
        Case(
            case_id=case_id,
            source="fhir",
            patient_id=f"p-{case_id}",
            reference_date=None,
            age_years=40,
            sex="female",
            conditions=(),
            observations=(),
            gold_codes=gold,
            gold_displays=tuple(DISPLAYS[code] for code in gold),
        )
        for case_id, gold in GOLD.items()
    ]
    return write_snomed_case_set(root / "cases", cases, CASE_SET_SETTINGS)


def messages(key: dict[str, Any], status: str, questions: int, leak_turn: int | None) -> list[dict[str, Any]]:
    """Turn 0: the clinician's system prompt (not in the browser) and the scripted opening; turns 1..q:
    question and reply; turn q + 1: the final answer."""
    rows = [
        {
            **key,
            "turn": 0,
            "role": "system",
            "sent_to": "clinician",
            "status": "scripted",
            "text": "Be a doctor",
        },
        {**key, "turn": 0, "role": "patient", "speaker": "patient-sim", "status": "scripted", "text": "Hi"},
    ]
    for turn in range(1, questions + 1):
        leaked = [BRONCHITIS] if turn == leak_turn else []
        rows.append(
            {
                **key,
                "turn": turn,
                "role": "clinician",
                "speaker": key["model"],
                "status": "ok",
                "text": f"Question {turn}?",
                **CLINICIAN_CALL,
            }
        )
        rows.append(
            {
                **key,
                "turn": turn,
                "role": "patient",
                "speaker": "patient-sim",
                "status": "ok",
                "text": UNREAD_TEXT
                if (key["model"], key["case_id"], turn) == UNREAD_REPLY
                else f"Reply {turn}",
                "leaked_codes": leaked,
                **PATIENT_CALL,
            }
        )
    final = {**key, "turn": questions + 1, "role": "clinician", "speaker": key["model"]}
    if status == "failed":
        rows.append({**final, "status": "failed", "error": "rate limited"})
    elif status == "no_answer":
        cut = {"text": '<Final Answer>: ["3622', "finish_reason": "length"}
        rows.append({**final, "status": "ok", **cut, **CLINICIAN_CALL})
    else:
        rows.append({**final, "status": "ok", "text": "<Final Answer>: [...]", **CLINICIAN_CALL})
    return [{**row, "message": index} for index, row in enumerate(rows)]


def score_row(key: dict[str, Any], status: str, predicted: tuple[str, ...], gold: tuple[str, ...]) -> dict:
    if status == "failed":
        return {**key, "status": status, "gold_codes": list(gold), "n_gold": len(gold)}
    answered = status == "answered"  # an interview without a readable answer scores 0, an empty gold too
    scored = set(predicted) if answered else set()
    hits, n_gold = sorted(scored & set(gold)), len(gold)
    precision = len(hits) / len(scored) if scored else float(answered and not gold)
    recall = len(hits) / n_gold if gold else float(answered)
    f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    return {
        **key,
        "status": status,
        "gold_codes": list(gold),
        "hit_codes": hits,
        "missed_codes": sorted(set(gold) - scored),
        "wrong_codes": sorted(scored - set(gold)),
        "n_gold": n_gold,
        "n_predicted": len(scored),
        "n_correct": len(hits),
        "exact_match": float(answered and scored == set(gold)),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "empty_gold": not gold,
    }


def make_run(root: Path, run_id: str, models: list[str], fingerprint: str | None = None) -> Path:
    """A run folder as `snomed evaluate` writes one; over the case set of `write_case_set` unless given
    another case set's fingerprint."""
    run_dir = root / run_id
    run_dir.mkdir()
    conversations, predictions, scores = [], [], []
    for model in models:
        for case_id, (status, predicted, invalid, malformed, questions, leak) in INTERVIEWS[model].items():
            key = {"run_id": run_id, "model": model, "case_id": case_id, "epoch": 0}
            conversations += messages(key, status, questions, leak)
            predictions.append(
                {
                    **key,
                    "status": status,
                    "final_answer": None if status == "failed" else "<Final Answer>",
                    "predicted_codes": list(predicted),
                    "invalid_codes": list(invalid),
                    "malformed_codes": list(malformed),
                    "questions_asked": questions,
                    "patient_replies": questions,
                    "leaking_replies": int(leak is not None),
                    "error": "rate limited" if status == "failed" else None,
                }
            )
            scores.append(score_row(key, status, predicted, GOLD[case_id]))
    write_table(conversations, CONVERSATIONS, run_dir / "conversations.parquet")
    write_table(predictions, PREDICTIONS, run_dir / "predictions.parquet")
    write_table(scores, SCORES, run_dir / "scores.parquet")
    case_set = write_case_set(root)
    manifest = {
        "run_id": run_id,
        "dataset": {"dir": str(case_set), "fingerprint": fingerprint or case_set_fingerprint(case_set)},
        "config": {
            "models": [{"name": model, "model": f"provider/{model}"} for model in models],
            "patient": {"name": "patient-sim", "model": "offline/patient"},
            "epochs": 1,
            "max_turns": 20,
            "disclosure": "symptoms",
            "patient_prompt_form": "lay",
        },
        "case_set": run_case_set_facts(case_set),
    }
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    return run_dir


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    return [make_run(tmp_path, "r1", ["alpha"]), make_run(tmp_path, "r2", ["beta"])]


@pytest.fixture
def metrics(runs: list[Path]) -> dict[str, Any]:
    return compute_metrics(load_runs(runs), SETTINGS)[0]


def rounded(value: Any) -> Any:
    """Floats to 12 digits, recursively, so whole values compare despite float sums."""
    if isinstance(value, float):
        return round(value, 12)
    if isinstance(value, dict):
        return {key: rounded(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(item) for item in value]
    return value


def interval(model: str, outcomes: list[CaseOutcome], name: str) -> dict[str, Any]:
    """The macro estimate scoring gives with the model's own named stream (checks the stream and outcomes)."""
    ci = getattr(summarise_run(outcomes, seeded_rng(3, "snomed", model), n_resamples=200), name)
    return {"n": ci.n, "mean": ci.estimate, "ci": [ci.low, ci.high]}


def usage(
    model: str, clinician_calls: int, patient_calls: int, failed_calls: int = 0, cut: int = 0
) -> dict[str, Any]:
    ok = clinician_calls - failed_calls
    return {
        "clinician": {
            "model": model,
            "calls": clinician_calls,
            "prompt_tokens": 100 * ok,
            "completion_tokens": 10 * ok,
            "cost_usd": 0.125 * ok,
            "cut": cut,
        },
        "patient": {
            "model": "patient-sim",
            "calls": patient_calls,
            "prompt_tokens": 50 * patient_calls,
            "completion_tokens": 5 * patient_calls,
            "cost_usd": 0.0625 * patient_calls,
            "cut": 0,
        },
    }


def recall_row(code: str, n_gold: int, found: int) -> dict[str, Any]:
    return {
        "code": code,
        "display": DISPLAYS[code],
        "n_gold": n_gold,
        "found": found,
        "missed": n_gold - found,
        "recall": found / n_gold,
    }


def test_metrics_whole_value_for_each_model(metrics: dict[str, Any]) -> None:
    alpha_outcomes = [
        CaseOutcome("c1", 0, "answered", (SINUSITIS, MADE_UP), GOLD["c1"], (MADE_UP,), (MADE_UP,), 2, 2, 1),
        CaseOutcome("c2", 0, "answered", (HYPERTENSION,), GOLD["c2"], (), (), 1, 1, 0),
        CaseOutcome("c3", 0, "failed", (), (), (), (), 0, 0, 0),
    ]
    beta_outcomes = [
        CaseOutcome("c1", 0, "answered", (SINUSITIS, BRONCHITIS), GOLD["c1"], (), (), 3, 3, 0),
        CaseOutcome("c2", 0, "no_answer", (), GOLD["c2"], (), (), 4, 4, 0),
        CaseOutcome("c3", 0, "answered", (), (), (), (), 1, 1, 0),
    ]
    names = ("exact_match", "precision", "recall", "f1")
    alpha = {
        "run_id": "r1",
        "disclosure": "symptoms",
        "epochs": 1,
        # c3 failed: 2 scored interviews, per-case EM (0, 1), P (.5, 1), R (.5, 1), F1 (.5, 1)
        "n_cases": 2,
        "n_failed": 1,
        "n_unparseable": 0,
        "n_empty_gold": 0,
        **{name: interval("alpha", alpha_outcomes, name) for name in names},
        # 2 correct of 3 predicted and 3 gold codes
        "micro": {"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3},
        "invalid_code_rate": 1 / 3,
        "malformed_code_rate": 1 / 3,
        "not_code_rate": 0.0,
        "no_answer_rate": 0.0,
        "leak_rate": 1 / 3,
        "n_unverified_replies": 0,
        "mean_questions": 1.5,
        "condition_recall": [
            recall_row(BRONCHITIS, 1, 0),
            recall_row(SINUSITIS, 1, 1),
            recall_row(HYPERTENSION, 1, 1),
        ],
        "f1_by_gold_count": [
            {"n_gold": 1, "n_cases": 1, "mean_f1": 1.0},
            {"n_gold": 2, "n_cases": 1, "mean_f1": 0.5},
        ],
        # c1: 2 questions + final, c2: 1 + final, c3: one failed call (no tokens)
        "usage": usage("alpha", clinician_calls=6, patient_calls=3, failed_calls=1),
    }
    beta = {
        "run_id": "r2",
        "disclosure": "symptoms",
        "epochs": 1,
        "n_cases": 3,
        "n_failed": 0,
        "n_unparseable": 0,
        "n_empty_gold": 1,
        **{name: interval("beta", beta_outcomes, name) for name in names},
        "micro": {"precision": 1.0, "recall": 2 / 3, "f1": 0.8},
        "invalid_code_rate": 0.0,
        "malformed_code_rate": 0.0,
        "not_code_rate": 0.0,
        "no_answer_rate": 1 / 3,
        "leak_rate": 0.0,  # of the 7 replies read whole
        "n_unverified_replies": 1,
        "mean_questions": 8 / 3,
        "condition_recall": [
            recall_row(BRONCHITIS, 1, 1),
            recall_row(SINUSITIS, 1, 1),
            recall_row(HYPERTENSION, 1, 0),
        ],
        "f1_by_gold_count": [
            {"n_gold": 0, "n_cases": 1, "mean_f1": 1.0},
            {"n_gold": 1, "n_cases": 1, "mean_f1": 0.0},
            {"n_gold": 2, "n_cases": 1, "mean_f1": 1.0},
        ],
        "usage": usage("beta", clinician_calls=11, patient_calls=8, cut=1),
    }
    assert rounded(metrics["models"]) == rounded({"alpha": alpha, "beta": beta})
    assert [metrics["models"]["alpha"][name]["mean"] for name in names] == [0.5, 0.75, 0.75, 0.75]
    assert [round(metrics["models"]["beta"][name]["mean"], 12) for name in names] == [round(2 / 3, 12)] * 4


def test_runs_case_set_leaks_failures_and_settings_are_recorded(metrics: dict[str, Any], runs) -> None:
    assert metrics["runs"] == [
        {
            "run_id": run_id,
            "path": str(path),
            "models": [model],
            "patient": "patient-sim",
            "disclosure": "symptoms",
            "patient_prompt_form": "lay",
            "epochs": 1,
            "max_turns": 20,
        }
        for run_id, path, model in (("r1", runs[0], "alpha"), ("r2", runs[1], "beta"))
    ]
    assert metrics["case_set"] == {
        "dir": str(runs[0].parent / "cases"),
        "fingerprint": case_set_fingerprint(runs[0].parent / "cases"),
        "gold_scope": "active",
        "gold_tags": ["disorder"],
        "found": True,
    }
    assert metrics["leaks"] == [
        {
            "model": "alpha",
            "case_id": "c1",
            "epoch": 0,
            "turn": 2,
            "codes": [BRONCHITIS],
            "disclosure": "symptoms",
        }
    ]
    assert metrics["unverified_replies"] == [
        {"model": "beta", "case_id": "c2", "epoch": 0, "turn": 3, "letters": "\u0434\u0430"}
    ]
    assert metrics["failed"] == [{"model": "alpha", "case_id": "c3", "epoch": 0, "error": "rate limited"}]
    assert metrics["settings"] == {
        "n_resamples": 200,
        "seed": 3,
        "top_conditions": 20,
        "level": 0.95,
        "method": "percentile, resampling cases",
    }


def test_merging_changes_no_models_numbers(metrics: dict[str, Any], runs) -> None:
    alone = compute_metrics(load_runs(runs[:1]), SETTINGS)[0]
    assert alone["models"]["alpha"] == metrics["models"]["alpha"]


def test_runs_over_different_case_sets_are_refused(tmp_path: Path) -> None:
    first = make_run(tmp_path, "r1", ["alpha"])
    other = make_run(tmp_path, "r2", ["beta"], fingerprint="fp-cases-2")
    with pytest.raises(UserError, match="different case sets") as error:
        load_runs([first, other])
    fingerprint = case_set_fingerprint(tmp_path / "cases")
    assert f"r1 ({first}): {fingerprint}" in str(error.value) and f"r2 ({other}): fp-cases-2" in str(
        error.value
    )


def test_a_model_in_two_runs_is_refused(tmp_path: Path) -> None:
    first, again = make_run(tmp_path, "r1", ["alpha"]), make_run(tmp_path, "r2", ["alpha", "beta"])
    with pytest.raises(UserError) as error:
        load_runs([first, again])
    assert str(error.value) == (
        f"a model appears in several runs ('alpha' in r1 ({first}), r2 ({again})): "
        "report those runs separately or rename the model"
    )


def test_a_case_set_changed_since_the_run_is_not_read_for_its_displays(tmp_path: Path) -> None:
    run = make_run(tmp_path, "r1", ["alpha"])
    (tmp_path / "cases" / "cases.parquet").write_bytes(b"not the cases the run used")
    metrics = compute_metrics(load_runs([run]), SETTINGS)[0]
    assert metrics["case_set"]["found"] is False
    assert {row["display"] for row in metrics["models"]["alpha"]["condition_recall"]} == {None}


def test_an_unfinished_run_is_refused(tmp_path: Path) -> None:
    run = make_run(tmp_path, "r1", ["alpha"])
    (run / "scores.parquet").unlink()
    with pytest.raises(UserError, match=r"no scores\.parquet"):
        load_runs([run])


@pytest.mark.parametrize("gold_codes", ["no scores row", None])
def test_an_interview_without_its_gold_codes_is_refused_never_scored_against_an_empty_gold_set(
    tmp_path: Path, gold_codes: str | None
) -> None:
    # beta's c3 answered nothing: against the empty gold set it was taken for, a perfect score
    run = make_run(tmp_path, "r1", ["beta"])
    scores = [row for row in pq.read_table(run / "scores.parquet").to_pylist() if row["case_id"] != "c3"]
    if gold_codes is None:
        key = {"run_id": "r1", "model": "beta", "case_id": "c3", "epoch": 0}
        scores.append({**score_row(key, "answered", (), ()), "gold_codes": None})
    write_table(scores, SCORES, run / "scores.parquet")
    with pytest.raises(UserError) as error:
        compute_metrics(load_runs([run]), SETTINGS)
    assert str(error.value) == (
        "run r1: scores.parquet holds no gold codes for the interview of model 'beta', case 'c3', epoch 0, "
        "which predictions.parquet holds: the run's tables disagree; re-run the run to rewrite them"
    )


def test_report_folder_markdown_figures_and_stats(tmp_path: Path, runs) -> None:
    report_dir = Path(
        build_report.fn(
            run_dirs=[str(r) for r in runs],
            out_dir=default_report_dir([str(r) for r in runs]),
            settings=SETTINGS,
        )
    )
    assert report_dir == runs[0] / "report-merged"
    for name in ("fig_f1_distribution", "fig_f1_questions", "fig_condition_recall"):
        assert (report_dir / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    json.loads(
        (report_dir / "metrics.json").read_text(), parse_constant=lambda c: pytest.fail(f"{c} in JSON")
    )
    assert pq.read_table(report_dir / "stats_interviews.parquet").to_pylist() == [
        {"model": "alpha", "case_id": "c1", "epoch": 0, "n_gold": 2, "questions_asked": 2, "f1": 0.5},
        {"model": "alpha", "case_id": "c2", "epoch": 0, "n_gold": 1, "questions_asked": 1, "f1": 1.0},
        {"model": "beta", "case_id": "c1", "epoch": 0, "n_gold": 2, "questions_asked": 3, "f1": 1.0},
        {"model": "beta", "case_id": "c2", "epoch": 0, "n_gold": 1, "questions_asked": 4, "f1": 0.0},
        {"model": "beta", "case_id": "c3", "epoch": 0, "n_gold": 0, "questions_asked": 1, "f1": 1.0},
    ]
    condition_rows = pq.read_table(report_dir / "stats_condition_recall.parquet").to_pylist()
    assert [(row["rank"], row["model"], row["code"], row["recall"]) for row in condition_rows] == [
        (0, "alpha", BRONCHITIS, 0.0),
        (0, "beta", BRONCHITIS, 1.0),
        (1, "alpha", SINUSITIS, 1.0),
        (1, "beta", SINUSITIS, 1.0),
        (2, "alpha", HYPERTENSION, 1.0),
        (2, "beta", HYPERTENSION, 0.0),
    ]
    markdown = (report_dir / "report.md").read_text()
    metrics = json.loads((report_dir / "metrics.json").read_text())
    # The settings block shows the case set's manifest (CASE_SET_SETTINGS), not blanks or defaults.
    assert markdown.splitlines()[2] == (
        f"Runs: r1, r2. Case set: {case_set_fingerprint(tmp_path / 'cases')[:12]} (gold scope active, tags "
        "disorder). Disclosure: symptoms. Patient prompt form: lay. Epochs: 1. Intervals: 95% percentile, "
        "resampling cases, 200 resamples, seed 3."
    )
    f1 = metrics["models"]["alpha"]["f1"]["ci"]
    assert (
        "| alpha | 2 | 50.0 [" in markdown
        and f"75.0 [{100 * f1[0]:.1f}, {100 * f1[1]:.1f}] | 66.7 | 33.3 | 0.0 | 1.5 | 33.3 | 0.8125 |"
        in markdown
    )
    assert f"| {BRONCHITIS} | Acute bronchitis (disorder) | 0.0 (0/1) | 100.0 (1/1) |" in markdown
    assert (
        "- 1 interview(s) failed (provider errors) and are excluded from every metric: alpha / c3 / epoch 0. "
        "Re-running the run finishes them." in markdown
    )
    assert (
        "- 1 patient repl(ies) named a gold condition under the `symptoms` disclosure, where the patient "
        "must never name a diagnosis: a simulator defect that makes these interviews easier "
        f"(alpha / c1 / epoch 0 turn 2: {BRONCHITIS})." in markdown
    )
    assert (
        "- 1 patient repl(ies) hold letters the leak check cannot read (a script other than Latin) and "
        "named nothing it read (beta / c2 / epoch 0 turn 3: \u0434\u0430): they are left out of leak %, "
        "not counted as replies that named nothing." in markdown
    )
    assert (
        "- 1 repl(ies) were cut at max_tokens (beta: clinician 1): a cut final answer is not read (the "
        "clinician is asked again; its last one cut makes the interview unparseable), a cut patient reply is "
        "what the clinician heard. A larger max_tokens avoids this." in markdown
    )
    assert "| beta | clinician | beta | 11 | 1100 | 110 | 1.3750 | 1 |" in markdown
    assert "![F1 per interview, by model" in markdown
    assert "Disclosure: symptoms. Patient prompt form: lay. Epochs: 1." in markdown


def test_runs_with_different_patient_prompt_forms_say_so(tmp_path: Path) -> None:
    lay, named = make_run(tmp_path, "r1", ["alpha"]), make_run(tmp_path, "r2", ["beta"])
    manifest = json.loads((named / "manifest.json").read_text())
    manifest["config"]["patient_prompt_form"] = "named"
    (named / "manifest.json").write_text(json.dumps(manifest))
    metrics = compute_metrics(load_runs([lay, named]), SETTINGS)[0]
    assert [run["patient_prompt_form"] for run in metrics["runs"]] == ["lay", "named"]
    assert "Patient prompt form: lay, named." in run_summary(metrics)
    assert (
        "The merged runs differ in patient_prompt_form (lay, named): models from different runs are not "
        "directly comparable." in report_notes(metrics)
    )


def page_data(page: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
    assert found is not None
    return json.loads(found.group(1))


def test_page_holds_the_browser_with_hits_misses_and_leaks(tmp_path: Path, runs) -> None:
    report_dir = Path(
        build_report.fn(run_dirs=[str(r) for r in runs], out_dir=str(tmp_path / "out"), settings=SETTINGS)
    )
    page = (report_dir / "index.html").read_text()
    assert 'id="pick-model"' in page and '<figure id="fig_condition_recall">' in page
    assert "http://" not in page and "https://" not in page  # self-contained
    data = page_data(page)
    assert (data["models"], data["cases"], data["displays"]) == (
        ["alpha", "beta"],
        ["c1", "c2", "c3"],
        DISPLAYS,
    )
    alpha_c1 = data["interviews"][0]
    turns = alpha_c1.pop("turns")
    assert alpha_c1 == {
        "model": 0,
        "case": 0,
        "epoch": 0,
        "status": "answered",
        "f1": 0.5,
        "final_answer": "<Final Answer>",
        "hits": [SINUSITIS],
        "wrong": [],
        "invalid": [],
        "malformed": [MADE_UP],
        "missed": [BRONCHITIS],
        "error": None,
    }
    assert turns == [
        [0, "patient", "patient-sim", "scripted", "Hi", []],
        [1, "clinician", "alpha", "ok", "Question 1?", []],
        [1, "patient", "patient-sim", "ok", "Reply 1", []],
        [2, "clinician", "alpha", "ok", "Question 2?", []],
        [2, "patient", "patient-sim", "ok", "Reply 2", [BRONCHITIS]],
        [3, "clinician", "alpha", "ok", "<Final Answer>: [...]", []],
    ]
    failed = data["interviews"][2]
    assert (failed["status"], failed["f1"], failed["hits"], failed["missed"], failed["error"]) == (
        "failed",
        None,
        [],
        [],
        "rate limited",
    )
    no_answer = data["interviews"][4]
    assert (no_answer["status"], no_answer["f1"], no_answer["missed"]) == ("no_answer", 0.0, [HYPERTENSION])


def test_published_tables_are_rebuilt_from_the_stored_metrics(
    metrics: dict[str, Any], tmp_path: Path
) -> None:
    stored = json.loads(json.dumps(metrics))
    tables = build_tables(stored, stored["settings"]["top_conditions"])
    assert [table.key for table in tables] == [
        "results",
        "answers",
        "condition-recall",
        "f1-by-gold-count",
        "usage",
    ]
    assert tables == build_tables(metrics, SETTINGS.top_conditions)
