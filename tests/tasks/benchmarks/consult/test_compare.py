"""`compare` on hand-made consultation runs (test_report.EPISODES): the composite and each stage's score with
Wilcoxon p-values from scipy, over the episodes both models completed."""

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from scipy import stats

from tasks.benchmarks.compare import compare_models
from tasks.benchmarks.consult.composite import composite
from tasks.report.settings import CompareSettings
from tests.tasks.benchmarks.consult.test_report import EPISODES, PRIMARY, make_run


def stage_scores(model: str, case_id: str) -> dict[str, float]:
    return composite(dict(zip(PRIMARY, EPISODES[model][case_id][0], strict=True)))._asdict()


def test_composite_and_stages_are_compared_on_the_episodes_both_completed(tmp_path: Path) -> None:
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
    # alpha's c3 failed: c1 and c2 are the pairs, where both scores are defined (beta's c1 has no FQR grade
    # read, so neither its follow-up stage nor its composite is).
    expected = []
    for metric, stage in [
        ("composite", "score"),
        *((s, s) for s in ("history", "diagnosis", "treatment", "follow_up")),
    ]:
        pairs = [
            (stage_scores("alpha", case_id)[stage], stage_scores("beta", case_id)[stage])
            for case_id in ("c1", "c2")
        ]
        alpha, beta = np.array([pair for pair in pairs if None not in pair]).T
        test = stats.wilcoxon(alpha, beta)
        expected.append(
            {"metric": metric, "n_pairs": len(alpha), "mean_a": pytest.approx(alpha.mean()),
             "mean_b": pytest.approx(beta.mean()), "difference": pytest.approx((alpha - beta).mean()),
             "test": "Wilcoxon", "statistic": test.statistic, "p_value": pytest.approx(test.pvalue)}
        )  # fmt: skip
    assert [{key: row[key] for key in expected[0]} for row in rows] == expected
    items = pq.read_table(out / "compare_items.parquet").to_pylist()
    # the items compared on the composite: c2 alone
    assert {row["link"] for row in items} == {"#compare?a=alpha&b=beta&case=c2&epoch=0"}
