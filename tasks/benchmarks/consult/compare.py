"""Consultation runs as a Comparison (tasks/report/compare.py): each episode (a case in one epoch) is an
item, resampled by case, and the scores are the composite and the four stage scores as the report computes
them (composite.py): a STATISTIC of the primary metrics' means over the episodes both models completed, so
compare's means, differences and paired bootstrap tests are of the numbers the report shows."""

from functools import partial
from pathlib import Path

import numpy as np

from tasks.benchmarks.consult.browser import browser_data
from tasks.benchmarks.consult.composite import Composite, completed, composite_scores
from tasks.benchmarks.consult.contracts import PRIMARY_METRICS, STAGE_METRICS
from tasks.benchmarks.consult.run_data import check_run_folder, load_runs
from tasks.report.compare import (
    STATISTIC,
    Comparison,
    ComparisonSource,
    Metric,
    case_comparison,
    case_epoch_item,
    item_scores,
)


def composite_field(means: np.ndarray, field: str) -> np.ndarray:
    """One of `Composite`'s fields (a stage score or the composite) of the primary metrics' means."""
    return composite_scores(means)[..., Composite._fields.index(field)]


# The composite first (the primary score), then the four stage scores it averages.
METRICS = [
    Metric(name, STATISTIC, PRIMARY_METRICS, partial(composite_field, field=field))
    for name, field in (("composite", "score"), *((stage, stage) for stage in STAGE_METRICS))
]


def load_comparison(run_dirs: list[Path]) -> Comparison:
    """The runs' completed episodes' primary metrics as item scores (None where a metric is undefined; a
    failed episode is in no pair; with an FQR judge panel, the panel's FQR as the report computes it) and
    their episode browser."""
    run = load_runs(run_dirs)
    scores = []
    for row in completed(run.scores):
        scores += item_scores(
            case_epoch_item(row["model"], row["case_id"], row["epoch"]),
            {name: row[name] for name in PRIMARY_METRICS},
        )
    return case_comparison(
        "Full-cycle consultation", METRICS, run.models, scores, browser_data(run), Path(__file__).parent
    )


COMPARISON = ComparisonSource(check_run_folder, "scores.parquet", load_comparison)
