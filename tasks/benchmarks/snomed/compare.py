"""SNOMED runs as a Comparison (tasks/report/compare.py): each interview (a case in one epoch) is an item,
scored by F1 and exact match as the report scores it, and resampled by case."""

from pathlib import Path

from tasks.benchmarks.snomed.report import browser_data, outcomes_of
from tasks.benchmarks.snomed.run_data import check_run_folder, load_runs
from tasks.benchmarks.snomed.scoring import score_outcome
from tasks.report.compare import (
    GRADED,
    PASS_FAIL,
    Comparison,
    ComparisonSource,
    Metric,
    case_comparison,
    case_epoch_item,
    item_scores,
)

# F1 first: the primary score, whose largest differences are listed.
METRICS = [Metric("f1", GRADED), Metric("exact_match", PASS_FAIL)]


def load_comparison(run_dirs: list[Path]) -> Comparison:
    """The runs' interviews as item scores (a failed interview is unscored) and their interview browser."""
    run = load_runs(run_dirs)
    scores = []
    for model in run.models:
        for outcome in outcomes_of(run, model):
            score = None if outcome.status == "failed" else score_outcome(outcome)
            scores += item_scores(
                case_epoch_item(model, outcome.case_id, outcome.epoch),
                {metric.name: None if score is None else getattr(score, metric.name) for metric in METRICS},
            )
    return case_comparison(
        "SNOMED diagnosis", METRICS, run.models, scores, browser_data(run), Path(__file__).parent
    )


COMPARISON = ComparisonSource(
    check_run_folder, "predictions.parquet", load_comparison, graded_tables=("scores.parquet",)
)
