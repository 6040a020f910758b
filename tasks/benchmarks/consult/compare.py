"""Consultation runs as a Comparison (tasks/report/compare.py): each episode (a case in one epoch) is an
item, scored by its composite and by each stage's score (composite.py), and resampled by case."""

from pathlib import Path

from tasks.benchmarks.consult.composite import composite
from tasks.benchmarks.consult.contracts import STAGE_METRICS
from tasks.benchmarks.consult.report import browser_data, check_run_folder, load_runs
from tasks.report.compare import (
    GRADED,
    Comparison,
    ComparisonSource,
    Metric,
    case_comparison,
    case_epoch_item,
    item_scores,
)

# The composite first (the primary score), then the four stages' scores it averages.
METRICS = [Metric("composite", GRADED), *(Metric(stage, GRADED) for stage in STAGE_METRICS)]


def load_comparison(run_dirs: list[Path]) -> Comparison:
    """The runs' episodes as item scores (a failed episode, or an undefined stage, is unscored; with an FQR
    judge panel, the panel's FQR as the report computes it) and their episode browser."""
    run = load_runs(run_dirs)
    scores = []
    for row in run.scores:
        stages = composite(row)._asdict()
        values = {"composite": row["composite"], **{stage: stages[stage] for stage in STAGE_METRICS}}
        completed = row["status"] == "completed"
        scores += item_scores(
            case_epoch_item(row["model"], row["case_id"], row["epoch"]),
            {name: value if completed else None for name, value in values.items()},
        )
    return case_comparison(
        "Full-cycle consultation", METRICS, run.models, scores, browser_data(run), Path(__file__).parent
    )


COMPARISON = ComparisonSource(check_run_folder, "scores.parquet", load_comparison)
