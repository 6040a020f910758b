"""`compare` on hand-made SNOMED runs (test_report.INTERVIEWS): F1 with Wilcoxon, exact match with McNemar,
each p-value from scipy; the interviews that differ most link to the browser's side-by-side view."""

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from scipy import stats

from tasks.benchmarks.compare import compare_models, runs_benchmark
from tasks.report.settings import CompareSettings
from tests.tasks.benchmarks.snomed.test_report import make_run


def test_models_of_two_runs_are_compared_on_the_interviews_both_scored(tmp_path: Path) -> None:
    runs = [make_run(tmp_path, "r1", ["alpha"]), make_run(tmp_path, "r2", ["beta"])]
    assert runs_benchmark(runs).name == "snomed"  # these folders name no benchmark: their files say it
    out = Path(
        compare_models.fn(
            run_dirs=[str(run) for run in runs],
            out_dir=str(tmp_path / "out"),
            models=None,
            settings=CompareSettings(n_resamples=200),
        )
    )
    rows = pq.read_table(out / "compare_differences.parquet").to_pylist()
    # alpha's c3 failed: the pairs are c1 (alpha half right, beta perfect) and c2 (alpha perfect, beta no
    # answer).
    f1_alpha, f1_beta = np.array([0.5, 1.0]), np.array([1.0, 0.0])
    wilcoxon = stats.wilcoxon(f1_alpha, f1_beta)
    common = {"model_a": "alpha", "model_b": "beta", "stratum": "", "group": "all", "n_pairs": 2}
    assert [{key: row[key] for key in (*common, "metric", "mean_a", "mean_b", "difference", "test")}
            for row in rows] == [
        {**common, "metric": "f1", "mean_a": 0.75, "mean_b": 0.5, "difference": 0.25, "test": "Wilcoxon"},
        {**common, "metric": "exact_match", "mean_a": 0.5, "mean_b": 0.5, "difference": 0.0,
         "test": "McNemar exact"},
    ]  # fmt: skip
    assert [(row["statistic"], row["p_value"]) for row in rows] == [
        (wilcoxon.statistic, pytest.approx(wilcoxon.pvalue)),
        (1.0, stats.binomtest(1, 2, 0.5).pvalue),
    ]
    items = pq.read_table(out / "compare_items.parquet").to_pylist()
    assert [(row["item"], row["difference"], row["link"]) for row in items] == [
        ("c2 epoch 0", 1.0, "#compare?a=alpha&b=beta&case=c2&epoch=0"),
        ("c1 epoch 0", -0.5, "#compare?a=alpha&b=beta&case=c1&epoch=0"),
    ]
