"""`compare` on hand-made consultation runs (test_report.EPISODES): the composite and each stage's score as
the report computes them over the episodes both models completed, with a paired bootstrap over cases."""

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tasks.benchmarks.compare import compare_models
from tasks.benchmarks.consult.composite import episodes_composite
from tasks.benchmarks.consult.report import compute_metrics
from tasks.benchmarks.consult.run_data import load_runs
from tasks.report.settings import CompareSettings
from tests.tasks.benchmarks.consult.report_fixtures import SETTINGS, make_run

FIELDS = {"composite": "score", "history": "history", "diagnosis": "diagnosis"}
FIELDS |= {"treatment": "treatment", "follow_up": "follow_up"}


def test_composite_and_stages_are_the_reports_over_the_episodes_both_completed(tmp_path: Path) -> None:
    runs = [make_run(tmp_path, "r1", ["alpha"]), make_run(tmp_path, "r2", ["beta"])]
    out = Path(
        compare_models.fn(
            run_dirs=[str(run) for run in runs],
            out_dir=str(tmp_path / "out"),
            models=None,
            settings=CompareSettings(n_resamples=200),
        )
    )
    rows = pq.read_table(out / "compare_differences.parquet").to_pylist()
    # alpha's c3 failed: c1 and c2 are the pairs. beta's c1 has no FQR grade read, so its own composite is
    # undefined, but its other metrics count, as in the report: the pair stays.
    scores = load_runs(runs).scores
    paired = {
        model: episodes_composite([r for r in scores if r["model"] == model and r["case_id"] in ("c1", "c2")])
        for model in ("alpha", "beta")
    }
    assert [
        {key: row[key] for key in ("metric", "n_pairs", "mean_a", "mean_b", "difference", "test")}
        for row in rows
    ] == [
        {
            "metric": metric,
            "n_pairs": 2,
            "mean_a": getattr(paired["alpha"], field),
            "mean_b": getattr(paired["beta"], field),
            "difference": getattr(paired["alpha"], field) - getattr(paired["beta"], field),
            "test": "paired bootstrap",
        }
        for metric, field in FIELDS.items()
    ]
    for row in rows:
        assert row["ci_low"] <= row["difference"] <= row["ci_high"]
        assert 1 / 201 <= row["p_value"] <= 1  # (1 + resamples as far from the difference) / (1 + 200)
    # Over the same episodes, the report shows the same numbers: alpha's (its c3 failed) to the last digit.
    report = compute_metrics(load_runs(runs[:1]), SETTINGS)[0]["models"]["alpha"]["composite"]
    assert {metric: row["mean_a"] for metric, row in zip(FIELDS, rows, strict=True)} == {
        metric: report[field] for metric, field in FIELDS.items()
    }
    items = pq.read_table(out / "compare_items.parquet").to_pylist()
    # The items listed on the composite: c2 alone, the one both episodes' own composites are defined on.
    assert [(row["item"], row["score_a"], row["score_b"]) for row in items] == [
        (
            "c2 epoch 0",
            pytest.approx(scores_of(scores, "alpha", "c2")),
            pytest.approx(scores_of(scores, "beta", "c2")),
        )
    ]
    assert {row["link"] for row in items} == {"#compare?a=alpha&b=beta&case=c2&epoch=0"}


def scores_of(scores: list[dict], model: str, case_id: str) -> float | None:
    return next(r["composite"] for r in scores if (r["model"], r["case_id"]) == (model, case_id))
