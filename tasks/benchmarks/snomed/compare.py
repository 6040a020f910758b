"""SNOMED runs as a Comparison (tasks/report/compare.py): each interview (a case in one epoch) is an item,
scored by F1 and exact match as the report scores it, and resampled by case."""

from pathlib import Path
from urllib.parse import urlencode

from tasks.benchmarks.snomed.report import browser_data, check_run_folder, load_runs, outcomes_of
from tasks.benchmarks.snomed.scoring import score_outcome
from tasks.report.compare import GRADED, PASS_FAIL, Comparison, ComparisonSource, ItemScore, Metric
from tasks.report.html import browser_parts, data_parts

F1 = Metric("f1", GRADED)
EXACT_MATCH = Metric("exact_match", PASS_FAIL)


def load_comparison(run_dirs: list[Path]) -> Comparison:
    """The runs' interviews as item scores (a failed interview is unscored) and their interview browser."""
    run = load_runs(run_dirs)
    scores = []
    for model in run.models:
        for outcome in outcomes_of(run, model):
            score = None if outcome.status == "failed" else score_outcome(outcome)
            common = {
                "stratum": "",
                "group": "",
                "item": f"{outcome.case_id} epoch {outcome.epoch}",
                "cluster": outcome.case_id,
                "model": model,
                "locator": urlencode({"case": outcome.case_id, "epoch": outcome.epoch}),
            }
            for metric in (F1, EXACT_MATCH):
                value = None if score is None else getattr(score, metric.name)
                scores.append(ItemScore(metric=metric.name, score=value, **common))
    return Comparison(
        title="SNOMED diagnosis",
        metrics=[F1, EXACT_MATCH],
        models=run.models,
        scores=scores,
        page={**data_parts(browser_data(run), packed=False), **browser_parts(Path(__file__).parent)},
    )


COMPARISON = ComparisonSource(
    check_run_folder=check_run_folder,
    run_table="predictions.parquet",
    item_column="case_id",
    item_noun="case",
    load=load_comparison,
)
