"""The consultation report's metrics.json on the hand-made runs, every number worked out by hand; merging
runs, and the runs a report refuses.
"""

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from tasks.benchmarks.consult.contracts import SCORES
from tasks.benchmarks.consult.report import compute_metrics
from tasks.benchmarks.consult.run_data import INQUIRY_DATA, load_runs
from tasks.benchmarks.consult.tables import build_tables
from tasks.core.preflight import UserError
from tasks.evals.outputs import write_table
from tasks.report.stats import bootstrap_mean, seeded_rng
from tests.tasks.benchmarks.consult.report_fixtures import EPISODES, PARSE_ERROR, PRIMARY, SETTINGS, make_run


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
