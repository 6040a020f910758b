"""The consultation report on two hand-made runs (one model each, three cases) whose every number is worked
out below."""

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from prefect import flow
from prefect.artifacts import Artifact

from tasks.benchmarks.consult.composite import composite
from tasks.benchmarks.consult.contracts import MESSAGES, PRIMARY_METRICS, SCORES, SECONDARY_METRICS
from tasks.benchmarks.consult.notes import cut_notes, report_notes
from tasks.benchmarks.consult.report import (
    build_report,
    compute_metrics,
    default_report_dir,
    publish_report_artifacts,
)
from tasks.benchmarks.consult.report_metrics import ReportSettings
from tasks.benchmarks.consult.run_data import INQUIRY_DATA, load_runs
from tasks.benchmarks.consult.tables import build_tables
from tasks.benchmarks.consult.terminal import terminal_tables
from tasks.core.preflight import UserError
from tasks.core.provenance import folder_tag
from tasks.evals.outputs import write_table
from tasks.report.stats import bootstrap_mean, seeded_rng

SETTINGS = ReportSettings(n_resamples=200, seed=3)
AGENT_CALL = {"prompt_tokens": 100, "completion_tokens": 10, "cost_usd": 0.125}
DEPARTMENTS = {"c1": "respiratory", "c2": "respiratory", "c3": "ent"}
PRIMARY = PRIMARY_METRICS
SECONDARY = SECONDARY_METRICS[1:]  # questions comes from the turns
JUDGE = {"judge_model": "threadmed/consult-judge", "rubric_version": "judge_fqr_v1"}
# The judge's calls of each completed episode (a failed agent call leaves no follow-up to grade).
JUDGE_CALLS = {
    "judge_calls": 2,
    "judge_prompt_tokens": 80,
    "judge_completion_tokens": 8,
    "judge_cost_usd": 0.02,
}
# alpha c1's first plan, the critic's finding on it, and its one follow-up (a constraint it revised for).
PLAN = [
    {
        "drug": "Amoxil",
        "generic": "amoxicillin",
        "dose": 500.0,
        "unit": "mg",
        "frequency_per_day": 3.0,
        "days": 5.0,
        "route": "oral",
    }
]
VIOLATION = {
    "kind": "allergy",
    "severity": "hard",
    "drug": "amoxicillin",
    "other": None,
    "entry": "drug amoxicillin: allergy_class penicillins",
    "source": "BNF",
    "detail": "the patient is allergic to penicillins",
}
# beta's plan for c1: a drug the critic cannot resolve, so it is unverified (never counted as safe).
UNVERIFIED_PLAN = [{**PLAN[0], "drug": "Elixir of vigour", "generic": None}]
UNVERIFIED = {
    "kind": "unverified",
    "severity": "unverified",
    "drug": "Elixir of vigour",
    "other": None,
    "entry": "drugs_v1: no match",
    "source": "consultation KB v1",
    "detail": "'Elixir of vigour' matches no drug of the knowledge base",
}
FOLLOW_UP = {
    "index": 0,
    "kind": "constraint",
    "text": "I can't swallow tablets",
    "constraint": "no_tablets",
    "core": True,
    "answer": "Take the liquid instead.",
    "revision_parse": "ok",
    "revised_plan": [{**PLAN[0], "unit": "ml", "dose": 10.0}],
    "plan_drugs": ["amoxicillin"],
    "violations_after": [],
    "correct": True,
    "judge_status": "ok",
    "judge_reason": "switches to a liquid",
}
PARSE_ERROR = "treatment: RecursionError: maximum recursion depth exceeded while decoding a JSON array"
# beta c2's one follow-up: its revision did not parse, so no plan in force can be read after it.
UNREAD_FOLLOW_UP = {
    **FOLLOW_UP,
    "answer": '[{"drug": "amoxicillin", "dose": [[[',
    "revision_parse": "unparseable",
    "revised_plan": None,
    "plan_drugs": None,
    "violations_after": None,
    "correct": False,
    "judge_reason": "no plan can be read",
}
GOLD = {
    "c1": [
        {"condition_id": "bronchitis", "title": "Acute bronchitis", "core": True, "severity": 2},
        {"condition_id": "pneumonia", "title": "Pneumonia", "core": False, "severity": 3},
    ],
    "c2": [{"condition_id": "cold", "title": "Common cold", "core": True, "severity": 1}],
    "c3": [{"condition_id": "otitis", "title": "Otitis media", "core": True, "severity": 2}],
}


def differential(*items: tuple[str, bool, str | None]) -> list[dict[str, Any]]:
    return [
        {
            "rank": rank,
            "diagnosis": name,
            "icd11": None,
            "core": core,
            "condition_id": condition,
            "match": "unmatched" if condition is None else "exact",
        }
        for rank, (name, core, condition) in enumerate(items, start=1)
    ]


# Per episode: the primary metrics in PRIMARY_METRICS order (history, diagnosis, then PSC, DDIV, PCR, FQR,
# DCSR), the secondary metrics in SECONDARY order, the MNI target, the AIUs revealed per turn (turn 0: the
# opening; an empty list is a deflected question), the differential and its parse status, then the plan's
# parse status, the follow-ups graded and ungraded, and the revised plans that did not parse. None: failed.
# An unparseable output scores the worst of its stage's metrics, as the scorer gives it (beta c2).
EPISODES: dict[str, dict[str, Any]] = {
    "alpha": {
        "c1": (
            (0.8, 0.2, 0.6, 0.5, None, 1.0, 1.0, 0.9, 1.0, 0.0, 0.0, 1.0, 1.0),
            (0.5, 1.0, 1.0, 2.0, 0.5, 1.0, 1.0, 0.0, 0.0),
            ["a1", "a2"],
            [[], ["a1", "x1"], []],
            differential(("Acute bronchitis", True, "bronchitis"), ("Flu-ish", False, None)),
            "ok",
            ("ok", 2, 0, 0),
        ),
        "c2": (
            (0.4, 0.6, 0.2, 0.25, 0.5, 0.0, 0.0, 0.3, 0.0, None, 0.5, 0.5, None),
            (0.0, None, 0.0, 1.0, 0.0, 0.5, 0.0, 0.5, None),
            ["b1"],
            [[], ["b1"]],
            differential(("Sinusitis", True, "sinusitis")),
            "ok",
            ("ok", 2, 1, 0),
        ),
        "c3": None,
    },
    "beta": {
        "c1": (
            (1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.5, 1.0, 1.0, 0.5, 0.0, None, 0.0),
            (0.0, 1.0, 1.0, 2.0, 0.0, 1.0, 1.0, 0.0, 1.0),
            ["a1", "a2"],
            [[], ["a2"], [], ["a1"]],
            differential(("Acute bronchitis", True, "bronchitis"), ("Pneumonia", False, "pneumonia")),
            "ok",
            ("ok", 0, 1, 0),  # no grade read: FQR undefined, and so are its follow-up stage and composite
        ),
        "c2": (
            (0.5, 0.5, 0.5, 0.5, None, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, None),
            (1.0, None, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, None),
            ["b1"],
            [["b1"], []],
            [],
            "unparseable",
            ("unparseable", 1, 0, 1),
        ),
        "c3": (
            (0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0),
            (0.5, 0.0, 1.0, 1.0, 0.0, 0.5, 1.0, 0.0, 0.0),
            [],
            [[], ["o1"], []],
            differential(("Otitis media", True, "otitis")),
            "ok",
            ("ok", 1, 0, 0),
        ),
    },
}


def episode_messages(
    key: dict[str, Any], revealed: list[list[str]] | None, cut: bool = False
) -> list[dict[str, Any]]:
    """Turn 0: the opening; turns 1..q: question and answer; turn q + 1: the differential, `cut` at
    max_tokens or whole."""
    if revealed is None:
        return [
            {**key, "turn": 0, "role": "patient", "stage": "history", "status": "simulated", "text": "Hi"},
            {
                **key,
                "turn": 1,
                "role": "agent",
                "stage": "history",
                "status": "failed",
                "error": "rate limited",
            },
        ]
    rows = []
    for turn, aius in enumerate(revealed):
        answer = {**key, "turn": turn, "role": "patient", "stage": "history", "status": "simulated"}
        if turn == 0:
            rows.append({**answer, "text": "Hi, I feel unwell", "revealed": aius})
            continue
        question = {**key, "turn": turn, "role": "agent", "stage": "history", "status": "ok", **AGENT_CALL}
        rows.append({**question, "text": f"Question {turn}?"})
        rows.append(
            {
                **answer,
                "text": f"Answer {turn}",
                "template": f"t{turn}",
                "revealed": aius,
                "deflected": not aius,
            }
        )
    final = {
        **key,
        "turn": len(revealed),
        "role": "agent",
        "stage": "diagnosis",
        "status": "ok",
        **AGENT_CALL,
    }
    if cut:
        return [*rows, {**final, "text": '[{"title": "Acute bron', "finish_reason": "length"}]
    return [*rows, {**final, "text": "[differential]", "finish_reason": "stop"}]


def score_row(key: dict[str, Any], case_id: str, episode: tuple[Any, ...] | None) -> dict[str, Any]:
    base = {**key, "department": DEPARTMENTS[case_id], "difficulty": "easy", "gold": GOLD[case_id]}
    if episode is None:
        return {**base, "status": "failed", "error": "rate limited", "error_class": "RateLimitError"}
    primary, secondary, mni_target, revealed, items, parse, (plan_parse, judged, ungraded, revisions) = (
        episode
    )
    first = case_id == "c1" and key["model"] == "alpha"
    unverified = case_id == "c1" and key["model"] == "beta"
    unread = plan_parse == "unparseable"
    return {
        **base,
        **JUDGE,
        **JUDGE_CALLS,
        "status": "completed",
        "questions": len(revealed) - 1,
        "diagnosis_parse": parse,
        "differential": items,
        "mni_target": mni_target,
        "plan_parse": plan_parse,
        "plan": None if unread else PLAN if first else UNVERIFIED_PLAN if unverified else [],
        "plan_advice": None if unread else "Rest and fluids." if first else "",
        "violations": None if unread else [VIOLATION] if first else [UNVERIFIED] if unverified else [],
        "follow_ups": [FOLLOW_UP] if first else [UNREAD_FOLLOW_UP] if revisions else [],
        "revisions_unparseable": revisions,
        "parse_errors": [PARSE_ERROR] if unread else [],
        "fqr_judged": judged,
        "fqr_unparseable": ungraded,
        **dict(zip(PRIMARY, primary, strict=True)),
        **dict(zip(SECONDARY, secondary, strict=True)),
        "composite": composite(dict(zip(PRIMARY, primary, strict=True))).score,
    }


def make_run(
    root: Path, run_id: str, models: list[str], fingerprint: str = "fp-cases-1", policy: str = "v1"
) -> Path:
    run_dir = root / run_id
    run_dir.mkdir()
    messages, scores = [], []
    for model in models:
        for case_id, episode in EPISODES[model].items():
            key = {"run_id": run_id, "model": model, "case_id": case_id, "epoch": 0}
            if episode is None:
                messages += episode_messages(key, None)
            else:  # an unparseable differential was cut at max_tokens
                messages += episode_messages(key, episode[3], cut=episode[5] == "unparseable")
            scores.append(score_row(key, case_id, episode))
    write_table(messages, MESSAGES, run_dir / "messages.parquet")
    write_table(scores, SCORES, run_dir / "scores.parquet")
    manifest = {
        "run_id": run_id,
        "dataset": {"dir": str(root / "cases"), "fingerprint": fingerprint},
        "config": {
            "models": [{"name": model, "model": f"provider/{model}"} for model in models],
            "epochs": 1,
            "max_questions": 12,
            "gamma": 0.95,
            "policy_version": policy,
        },
        "prompts": {},
        "summary": {},
        "notes": [],
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


def interval(model: str, name: str, pairs: list[tuple[str, float]]) -> dict[str, Any]:
    """The interval with the model's and metric's own stream over (case, value) pairs (checks the stream)."""
    ci = bootstrap_mean(
        np.array([value for _, value in pairs]),
        seeded_rng(3, "consult", model, name),
        clusters=np.array([case for case, _ in pairs]),
        n_resamples=200,
    )
    return {"n": ci.n, "mean": ci.estimate, "ci": [ci.low, ci.high]}


def expected_primary(model: str) -> dict[str, Any]:
    episodes = {case: e for case, e in EPISODES[model].items() if e is not None}
    return {
        name: interval(model, name, [(case, e[0][i]) for case, e in episodes.items() if e[0][i] is not None])
        for i, name in enumerate(PRIMARY)
    }


def test_metrics_whole_value_for_each_model(metrics: dict[str, Any]) -> None:
    alpha = {
        # c3 failed: two episodes, both respiratory
        "n_episodes": 2,
        "n_failed": 1,
        "n_diagnosis_unparseable": 0,
        "n_plan_unparseable": 0,
        "n_revisions_unparseable": 0,
        "fqr_judged": 4,  # c1 2, c2 2
        "fqr_unparseable": 1,
        "unverified": {"items": 1, "unverified": 0, "rate": 0.0, "plans": 0},  # c1's one item is checked
        "replies_cut": {},
        "fqr_truncated": 0,
        "n_judge_cut": 0,
        "judge": {
            "models": ["threadmed/consult-judge"],
            "rubric_versions": ["judge_fqr_v1"],
            "offline": True,
        },
        **expected_primary("alpha"),
        "secondary": {
            "questions": 1.5,
            "deflection_rate": 0.25,
            "red_flag_coverage": 1.0,  # undefined for c2
            "top1_accuracy": 0.5,
            "differential_length": 1.5,
            "unmatched_rate": 0.25,
            "plan_completeness": 0.75,
            "regimen_coverage": 0.5,
            "dose_error_rate": 0.25,
            "needless_churn": 0.0,  # undefined for c2
        },
        # history: MNI-Comp .6, 1 - CPRw .6, IGE .4, Hit@1 .375, 1 - POVR .5 (c2 only) -> 2.475 / 5
        # diagnosis: recall .5, F1 .5, SWDS .6 -> 1.6 / 3
        # treatment: PSC .5, 1 - DDIV 1 (c1 only), 1 - PCR .75 -> .75; follow-up: FQR .75, DCSR 1 -> .875
        "composite": {
            "history": 0.495,
            "diagnosis": 1.6 / 3,
            "treatment": 0.75,
            "follow_up": 0.875,
            "score": (0.495 + 1.6 / 3 + 0.75 + 0.875) / 4,
        },
        "departments": {
            "respiratory": {
                "n": 2,
                "mni_comp": 0.6,
                "cprw": 0.4,
                "ige": 0.4,
                "hit_at_1": 0.375,
                "povr": 0.5,
                "core_dx_recall": 0.5,
                "core_dx_f1": 0.5,
                "swds": 0.6,
                "psc": 0.5,
                "ddiv": 0.0,
                "pcr": 0.25,
                "fqr": 0.75,
                "dcsr": 1.0,
                "composite": (0.495 + 1.6 / 3 + 0.75 + 0.875) / 4,  # alpha's cases are all respiratory
            },
        },
        # c1: 2 questions + differential, c2: 1 + differential, c3: one failed call (no tokens)
        "usage": {
            "agent": {"calls": 6, "prompt_tokens": 500, "completion_tokens": 50, "cost_usd": 0.625, "cut": 0},
            "judge": {"calls": 4, "prompt_tokens": 160, "completion_tokens": 16, "cost_usd": 0.04},  # c1, c2
        },
    }
    beta = {
        "n_episodes": 3,
        "n_failed": 0,
        "n_diagnosis_unparseable": 1,
        "n_plan_unparseable": 1,
        "n_revisions_unparseable": 1,
        "fqr_judged": 2,  # c1 0, c2 1, c3 1
        "fqr_unparseable": 1,
        "unverified": {"items": 1, "unverified": 1, "rate": 1.0, "plans": 1},  # c1's unresolved drug
        "replies_cut": {"diagnosis": 1},  # c2's differential
        "fqr_truncated": 0,
        "n_judge_cut": 0,
        "judge": {
            "models": ["threadmed/consult-judge"],
            "rubric_versions": ["judge_fqr_v1"],
            "offline": True,
        },
        **expected_primary("beta"),
        "secondary": {
            "questions": 2.0,
            "deflection_rate": 0.5,
            "red_flag_coverage": 0.5,  # undefined for c2
            "top1_accuracy": 2 / 3,
            "differential_length": 1.0,
            "unmatched_rate": 1 / 3,  # the worst for the unparseable c2
            "plan_completeness": 0.5,  # the worst, 0, for the unparseable plan of c2
            "regimen_coverage": 2 / 3,
            "dose_error_rate": 1 / 3,  # the worst for c2
            "needless_churn": 0.5,
        },
        # history: MNI-Comp .5, 1 - CPRw .5, IGE .5, Hit@1 .5, 1 - POVR .5 -> .5
        # diagnosis: recall 2/3, F1 .5, SWDS 2/3 -> 11/18
        # treatment: PSC 2/3, 1 - DDIV .5 (c2's unread plan: DDIV 1), 1 - PCR 2/3 (c2: PCR 1) -> 11/18;
        # follow-up: FQR .5 (c2, c3; c1 has no grade read), DCSR .5
        "composite": {
            "history": 0.5,
            "diagnosis": 11 / 18,
            "treatment": 11 / 18,
            "follow_up": 0.5,
            "score": (0.5 + 11 / 18 + 11 / 18 + 0.5) / 4,
        },
        "departments": {
            "ent": {
                "n": 1,
                **dict(zip(PRIMARY, EPISODES["beta"]["c3"][0], strict=True)),
                # history 0, diagnosis 1, treatment 1, follow-up 1
                "composite": 0.75,
            },
            "respiratory": {
                "n": 2,
                "mni_comp": 0.75,
                "cprw": 0.25,
                "ige": 0.75,
                "hit_at_1": 0.75,
                "povr": 0.0,
                "core_dx_recall": 0.5,
                "core_dx_f1": 0.25,
                "swds": 0.5,
                "psc": 0.5,
                "ddiv": 0.75,
                "pcr": 0.5,
                "fqr": 0.0,
                "dcsr": 0.0,
                # history .8, diagnosis 1.25 / 3, treatment (.5 + .25 + .5) / 3, follow-up 0
                "composite": (0.8 + 1.25 / 3 + 1.25 / 3 + 0) / 4,
            },
        },
        "usage": {
            "agent": {"calls": 9, "prompt_tokens": 900, "completion_tokens": 90, "cost_usd": 1.125, "cut": 1},
            "judge": {"calls": 6, "prompt_tokens": 240, "completion_tokens": 24, "cost_usd": 0.06},
        },
    }
    assert rounded(metrics["models"]) == rounded({"alpha": alpha, "beta": beta})
    means = [round(metrics["models"]["alpha"][name]["mean"], 12) for name in ("mni_comp", "povr", "swds")]
    assert means == [0.6, 0.5, 0.6]  # the hand-computed means, not only the shared bootstrap's
    assert metrics["models"]["alpha"]["povr"]["n"] == 1


def test_runs_reference_failures_and_settings_are_recorded(metrics: dict[str, Any], runs) -> None:
    assert metrics["runs"] == [
        {
            "run_id": run_id,
            "path": str(path),
            "models": [model],
            "epochs": 1,
            "max_questions": 12,
            "gamma": 0.95,
            "policy_version": "v1",
        }
        for run_id, path, model in (("r1", runs[0], "alpha"), ("r2", runs[1], "beta"))
    ]
    assert metrics["case_set"] == {"dir": str(runs[0].parent / "cases"), "fingerprint": "fp-cases-1"}
    stored = json.loads((INQUIRY_DATA / "mined_v1" / "reference.json").read_text())
    assert metrics["reference"] == {
        **stored,
        "policy_version": "v1",
        "rows_never_mined": ["cardiac", "exposures_travel_contacts", "mental_health"],
    }
    assert metrics["failed"] == [{"model": "alpha", "case_id": "c3", "epoch": 0, "error": "rate limited"}]
    assert metrics["parse_errors"] == [{"model": "beta", "case_id": "c2", "epoch": 0, "error": PARSE_ERROR}]
    assert metrics["settings"] == {
        "n_resamples": 200,
        "seed": 3,
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
    assert f"r1 ({first}): fp-cases-1" in str(error.value) and f"r2 ({other}): fp-cases-2" in str(error.value)


def test_a_model_in_two_runs_is_refused(tmp_path: Path) -> None:
    first, again = make_run(tmp_path, "r1", ["alpha"]), make_run(tmp_path, "r2", ["alpha", "beta"])
    with pytest.raises(UserError, match=r"a model appears in several runs \('alpha' in r1"):
        load_runs([first, again])


def test_an_unfinished_run_is_refused(tmp_path: Path) -> None:
    run = make_run(tmp_path, "r1", ["alpha"])
    (run / "scores.parquet").unlink()
    with pytest.raises(UserError, match=r"is not a finished consultation run \(no scores\.parquet\)"):
        load_runs([run])


def test_without_a_mined_reference_the_table_has_no_reference_row(tmp_path: Path) -> None:
    metrics = compute_metrics(load_runs([make_run(tmp_path, "r1", ["alpha"], policy="v0")]), SETTINGS)[0]
    assert metrics["reference"] is None
    assert [row[0] for row in build_tables(metrics)[0].rows] == ["alpha"]


def test_report_folder_markdown_figures_and_stats(runs) -> None:
    run_dirs = [str(r) for r in runs]
    report_dir = Path(
        build_report.fn(run_dirs=run_dirs, out_dir=default_report_dir(run_dirs), settings=SETTINGS)
    )
    assert report_dir == runs[0] / "report-merged"
    for name in ("fig_mni_coverage", "fig_questions", "fig_stages"):
        assert (report_dir / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    metrics = json.loads(
        (report_dir / "metrics.json").read_text(), parse_constant=lambda c: pytest.fail(f"{c} in JSON")
    )
    # alpha: c1 covers 0, 1/2, 1/2 (2 questions), c2 0, 1; beta: c1 0, 1/2, 1/2, 1; c2 1 from the opening;
    # c3 has no MNI target. Every curve runs to turn 3 (the most questions asked); shorter ones stay flat.
    coverage = pq.read_table(report_dir / "stats_mni_coverage.parquet").to_pylist()
    assert [(row["model"], row["turn"], row["episodes"], row["mni_coverage"]) for row in coverage] == [
        ("alpha", 0, 2, 0.0),
        ("alpha", 1, 2, 0.75),
        ("alpha", 2, 2, 0.75),
        ("alpha", 3, 2, 0.75),
        ("beta", 0, 2, 0.5),
        ("beta", 1, 2, 0.75),
        ("beta", 2, 2, 0.75),
        ("beta", 3, 2, 1.0),
    ]
    episodes = pq.read_table(report_dir / "stats_episodes.parquet").to_pylist()
    assert [(row["model"], row["case_id"], row["department"], row["questions"]) for row in episodes] == [
        ("alpha", "c1", "respiratory", 2),
        ("alpha", "c2", "respiratory", 1),
        ("beta", "c1", "respiratory", 3),
        ("beta", "c2", "respiratory", 1),
        ("beta", "c3", "ent", 2),
    ]
    markdown = (report_dir / "report.md").read_text()
    mni = metrics["models"]["alpha"]["mni_comp"]["ci"]
    assert f"| alpha | 2 | 60.0 [{100 * mni[0]:.1f}, {100 * mni[1]:.1f}] |" in markdown
    assert "| 1.5 | 25.0 | 100.0 | 49.5 |" in markdown  # questions, deflection, red flags, stage score
    reference = metrics["reference"]
    assert (
        f"| empirical reference ({reference['dialogues']} real dialogues) | — | — | — | — | "
        f"{100 * reference['hit_at_k_mean']:.1f} | {100 * reference['povr_mean']:.1f} | — | — | — | — |"
        in markdown
    )
    assert (
        "rows never mined (no real dialogue asks the template, so its top 3 is the tie rule's): cardiac, "
        "exposures_travel_contacts, mental_health." in markdown
    )
    assert "| 1.0 | 33.3 | 1 | 61.1 |" in markdown  # beta's diagnosis: length, unmatched, unparseable, stage
    # treatment: complete %, regimen cov. %, dose errors %, unverified %, unparseable, stage score
    assert "| 50.0 | 66.7 | 33.3 | 100.0 | 1 | 61.1 |" in markdown
    # follow-up: FQR, DCSR, churn, revisions unparsed, graded, ungraded, judge, stage score
    assert (
        "| alpha | 2 | 75.0 [50.0, 100.0] | 100.0 [100.0, 100.0] | 0.0 | 0 | 4 | 1 | 0 | "
        "threadmed/consult-judge (offline heuristic) | 87.5 |" in markdown
    )
    assert "| beta | 3 | 50.0 [0.0, 100.0] | 50.0 [0.0, 100.0] | 50.0 | 1 | 2 | 1 | " in markdown
    # the leaderboard, best first: alpha (49.5 + 53.3 + 75 + 87.5) / 4, beta (50 + 61.1 + 61.1 + 50) / 4
    assert (
        "| 1 | alpha | 49.5 | 53.3 | 75.0 | 87.5 | 66.3 |\n| 2 | beta | 50.0 | 61.1 | 61.1 | 50.0 | 55.6 |"
        in markdown
    )
    assert (
        "| ent | beta | 1 | 0.0 | 100.0 | 0.0 | 0.0 | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 | 0.0 | 0.0 "
        "| 100.0 | 100.0 | 75.0 |" in markdown
    )
    assert (
        "- 1 episode(s) failed (provider errors) and are excluded from every metric: alpha / c3 / epoch 0. "
        "Re-running the run finishes them." in markdown
    )
    assert (
        "- 1 differential(s) did not parse after the re-ask and score the worst of every diagnosis metric "
        "(beta 1)." in markdown
    )
    assert (
        "- 1 treatment plan(s) did not parse after the re-ask and score the worst of every treatment metric "
        "(PSC 0), never as a safe or empty plan (beta 1)." in markdown
    )
    assert (
        "- 1 revised plan(s) did not parse after the re-ask: no plan in force can be read after them (DCSR 0 "
        "when no later revision parses) (beta 1)." in markdown
    )
    assert (
        "- 1 agent repl(ies) made a parser raise (a parser bug) and were scored as unparseable, their "
        f"episodes kept: beta / c2 / epoch 0: {PARSE_ERROR}." in markdown
    )
    assert (
        "- 2 follow-up grade(s) did not parse after the re-ask and are left out of FQR, not scored 0 "
        "(alpha 1, beta 1)." in markdown
    )
    assert "- FQR is graded by threadmed/consult-judge, an offline heuristic standing in" in markdown
    assert "2 of the 4 stages" not in markdown and "(partial)" not in markdown
    stages = ["### History taking", "### Diagnosis", "### Treatment plan", "### Follow-up", "### Leaderboard"]
    assert sorted(stages, key=markdown.index) == stages
    assert "![MNI coverage against turns" in markdown and "![The primary metrics of each stage" in markdown
    primary = pq.read_table(report_dir / "stats_primary.parquet").to_pylist()
    assert [row for row in primary if row["model"] == "alpha" and row["stage"] == "follow_up"] == [
        {
            "model": "alpha",
            "stage": "follow_up",
            "metric": "fqr",
            "n": 2,
            "mean": 0.75,
            "low": 0.5,
            "high": 1.0,
        },
        {
            "model": "alpha",
            "stage": "follow_up",
            "metric": "dcsr",
            "n": 1,
            "mean": 1.0,
            "low": 1.0,
            "high": 1.0,
        },
        {
            "model": "alpha",
            "stage": "follow_up",
            "metric": "stage",
            "n": 2,
            "mean": 0.875,
            "low": None,
            "high": None,
        },
    ]


def page_data(page: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
    assert found is not None
    return json.loads(found.group(1))


def test_page_holds_the_browser_with_questions_and_the_differential_against_gold(
    tmp_path: Path, runs
) -> None:
    report_dir = Path(
        build_report.fn(run_dirs=[str(r) for r in runs], out_dir=str(tmp_path / "out"), settings=SETTINGS)
    )
    page = (report_dir / "index.html").read_text()
    assert 'id="pick-model"' in page and '<figure id="fig_mni_coverage">' in page
    assert "http://" not in page and "https://" not in page  # self-contained
    data = page_data(page)
    assert (data["models"], data["cases"]) == (["alpha", "beta"], ["c1", "c2", "c3"])
    alpha_c1 = data["episodes"][0]
    messages = alpha_c1.pop("messages")
    assert alpha_c1 == {
        "model": 0,
        "case": 0,
        "epoch": 0,
        "status": "completed",
        "department": "respiratory",
        "difficulty": "easy",
        "questions": 2,
        "diagnosis_parse": "ok",
        "plan_parse": "ok",
        "revisions_unparseable": 0,
        "parse_errors": [],
        "mni_target": ["a1", "a2"],
        # composite: history (.8 + .8 + .6 + .5) / 4, diagnosis .9667, treatment 1, follow-up 1
        "metrics": {
            **dict(zip(PRIMARY, EPISODES["alpha"]["c1"][0], strict=True)),
            "composite": pytest.approx((0.675 + 2.9 / 3 + 1 + 1) / 4),
        },
        "error": None,
        "differential": [
            {**item, "kind": kind}
            for item, kind in zip(EPISODES["alpha"]["c1"][4], ("hit", "unmatched"), strict=True)
        ],
        "gold": [{**GOLD["c1"][0], "listed": True}, {**GOLD["c1"][1], "listed": False}],
        "plan": PLAN,
        "plan_advice": "Rest and fluids.",
        "violations": [VIOLATION],
        "follow_ups": [FOLLOW_UP],
    }
    assert messages == [
        [0, "patient", "history", "simulated", "Hi, I feel unwell", None, [], False],
        [1, "agent", "history", "ok", "Question 1?", None, [], False],
        [1, "patient", "history", "simulated", "Answer 1", "t1", ["a1", "x1"], False],
        [2, "agent", "history", "ok", "Question 2?", None, [], False],
        [2, "patient", "history", "simulated", "Answer 2", "t2", [], True],
        [3, "agent", "diagnosis", "ok", "[differential]", None, [], False],
    ]
    failed = data["episodes"][2]
    assert (failed["status"], failed["error"], failed["differential"], failed["metrics"]["mni_comp"]) == (
        "failed",
        "rate limited",
        [],
        None,
    )
    assert [item["kind"] for item in data["episodes"][1]["differential"]] == ["wrong"]  # alpha c2
    assert [item["kind"] for item in data["episodes"][3]["differential"]] == ["hit", "listed"]  # beta c1


def test_published_tables_are_rebuilt_from_the_stored_metrics(metrics: dict[str, Any]) -> None:
    stored = json.loads(json.dumps(metrics))
    tables = build_tables(stored)
    keys = ["history", "diagnosis", "treatment", "follow-up", "composite", "departments", "usage"]
    assert [table.key for table in tables] == keys
    assert tables == build_tables(metrics)


def test_the_cost_table_counts_the_judges_calls_beside_the_agents(metrics: dict[str, Any]) -> None:
    [usage] = [table for table in build_tables(metrics) if table.key == "usage"]
    assert usage.rows == [
        ["alpha", "agent", "6", "500", "50", "0.6250", "0"],
        ["alpha", "judge", "4", "160", "16", "0.0400", "—"],
        ["beta", "agent", "9", "900", "90", "1.1250", "1"],
        ["beta", "judge", "6", "240", "24", "0.0600", "—"],
    ]


def test_replies_cut_at_max_tokens_are_noted_by_model_and_stage(metrics: dict[str, Any]) -> None:
    assert cut_notes(metrics) == [
        "1 agent repl(ies) were cut at max_tokens (beta: diagnosis 1): a cut differential or plan is parsed "
        "as given; a cut follow-up answer was judged as given (the config's `truncated: judge`). A larger "
        "max_tokens avoids this."
    ]
    marked = {
        "a": {"replies_cut": {"history": 2, "follow_up": 1}, "fqr_truncated": 1},
        "b": {"replies_cut": {}, "fqr_truncated": 0},
    }
    assert cut_notes({"models": marked}) == [
        "3 agent repl(ies) were cut at max_tokens (a: history 2, follow-up 1): a cut differential or plan is "
        "parsed as given; 1 cut follow-up answer(s) were left ungraded (the config's `truncated: mark`) and "
        "out of FQR, any other was judged as given. A larger max_tokens avoids this."
    ]
    assert cut_notes({"models": {"b": marked["b"]}}) == []


def test_follow_up_grades_missing_for_a_cut_judge_reply_are_noted_by_model(metrics: dict[str, Any]) -> None:
    cut = {
        **metrics,
        "models": {**metrics["models"], "alpha": {**metrics["models"]["alpha"], "n_judge_cut": 2}},
    }
    assert [note for note in report_notes(cut) if "(judge cut)" in note] == [
        "2 follow-up grade(s) are missing because the judge's reply was still cut at its max_tokens after "
        "the last re-ask (judge cut): left out of FQR, not scored 0; a larger judge max_tokens avoids "
        "this (alpha 2)."
    ]
    assert [note for note in report_notes(metrics) if "(judge cut)" in note] == []


def test_the_terminal_composite_says_what_it_is_to_the_reader(metrics: dict[str, Any]) -> None:
    composite = terminal_tables(metrics)[-1]
    assert (composite.title, composite.caption) == (
        "Composite, %",
        "The stage scores of the tables above and their mean; the stage tables show where a model is weak.",
    )


@pytest.mark.usefixtures("prefect_harness")
def test_artifacts_are_published_from_the_stored_report(tmp_path: Path, runs) -> None:
    report_dir = build_report.fn(
        run_dirs=[str(r) for r in runs], out_dir=str(tmp_path / "out"), settings=SETTINGS
    )
    keys = flow(publish_report_artifacts.fn)(report_dir=report_dir)
    names = ["history", "diagnosis", "treatment", "follow-up", "composite", "departments", "usage", "summary"]
    prefix = f"consult-report-r1-and-1-more-{folder_tag(report_dir)}"  # the first run, the others, the folder
    assert keys == [f"{prefix}-{name}" for name in names]
    summary = Artifact.get(key=f"{prefix}-summary")
    assert summary is not None and summary.data == (Path(report_dir) / "report.md").read_text()


def test_a_model_with_no_fqr_grade_read_has_no_follow_up_stage_and_no_composite_never_dcsr_alone(
    tmp_path: Path,
) -> None:
    run = make_run(tmp_path, "r2", ["beta"])
    rows = [
        {**row, "fqr": None, "fqr_judged": 0, "fqr_unparseable": 1, "composite": None}
        for row in pq.read_table(run / "scores.parquet").to_pylist()
    ]
    write_table(rows, SCORES, run / "scores.parquet")
    metrics = compute_metrics(load_runs([run]), SETTINGS)[0]
    beta = metrics["models"]["beta"]
    assert (beta["fqr"]["mean"], beta["dcsr"]["mean"], beta["composite"]["follow_up"]) == (None, 0.5, None)
    assert beta["composite"]["score"] is None
    follow_up = next(table for table in build_tables(metrics) if table.key == "follow-up")
    # FQR, DCSR, churn, revisions unparsed, graded, ungraded, judge cut, judge, stage score
    assert follow_up.rows[0][2:] == [
        "—", "50.0 [0.0, 100.0]", "50.0", "1", "0", "3", "0", "threadmed/consult-judge (offline heuristic)",
        "—",
    ]  # fmt: skip
    leaderboard = next(table for table in build_tables(metrics) if table.key == "composite")
    assert leaderboard.rows == [["1", "beta", "50.0", "61.1", "61.1", "—", "—"]]


def test_the_terminal_tables_count_each_stages_unparsed_outputs(metrics: dict[str, Any]) -> None:
    tables = {table.key: table for table in terminal_tables(metrics)}
    rows = {
        key: {row[0]: row[1:] for row in tables[f"{key}-terminal"].rows}
        for key in ("diagnosis", "treatment", "follow-up")
    }
    assert (
        rows["diagnosis"]["differentials unparsed"],
        rows["treatment"]["plans unparsed"],
        rows["follow-up"]["revisions unparsed"],
    ) == (["0", "1"], ["0", "1"], ["0", "1"])
