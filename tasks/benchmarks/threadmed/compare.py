"""ThReadMed-QA runs as a Comparison (tasks/report/compare.py): each judged turn is an item, paired across
models within a condition, grouped by the report's turn groups and resampled by thread."""

from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import numpy as np

from tasks.benchmarks.threadmed import metrics as m
from tasks.benchmarks.threadmed.browser import browser_data
from tasks.benchmarks.threadmed.run_data import check_run_folder, load_runs
from tasks.report.compare import GRADED, PASS_FAIL, Comparison, ComparisonSource, Metric, item_scores
from tasks.report.html import browser_parts, data_parts

# The judge's grade (0, 0.5, 1), and whether it is 1 (the report's correct share).
SCORE = Metric("score", GRADED)
CORRECT = Metric("correct", PASS_FAIL)


def turn_group(turn: int) -> str:
    """The name of the report's turn group (metrics.TURN_GROUPS) holding `turn`."""
    return next(
        name for name, first, last in m.TURN_GROUPS if turn >= first and (last is None or turn <= last)
    )


def load_comparison(run_dirs: list[Path]) -> Comparison:
    """The runs' judged turns (a judge panel's grade when the runs make one) as item scores, and their
    conversation browser."""
    run = load_runs(run_dirs)
    turns = run.turns
    scores = []
    for i in range(len(turns.turn)):
        thread, turn, score = str(turns.thread_id[i]), int(turns.turn[i]), turns.score[i]
        condition = str(turns.condition[i])
        common = {
            "stratum": condition,
            "group": turn_group(turn),
            "item": f"{thread} turn {turn}",
            "cluster": thread,
            "model": str(turns.model[i]),
            "locator": urlencode({"condition": condition, "thread": thread, "turn": turn}),
        }
        scored = not np.isnan(score)
        scores += item_scores(
            common,
            {
                SCORE.name: float(score) if scored else None,
                CORRECT.name: float(score == m.CORRECT) if scored else None,
            },
        )
    data = browser_data(turns, run.models, run.conditions, run.judges)
    return Comparison(
        title="ThReadMed-QA",
        metrics=[SCORE, CORRECT],
        models=run.models,
        scores=scores,
        page={**data_parts(data.index, data.chunks), **browser_parts(Path(__file__).parent)},
    )


def planned_conditions(config: dict[str, Any]) -> list[str]:
    return list(config["conditions"])


COMPARISON = ComparisonSource(
    check_run_folder=check_run_folder,
    run_table="responses.parquet",
    load=load_comparison,
    item_column="thread_id",
    item_noun="thread",
    group_column="condition",
    planned_groups=planned_conditions,
    planned_field="threads",
    graded_tables=("judgments.parquet",),
)
