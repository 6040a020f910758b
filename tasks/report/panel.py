"""A judge panel's grade and how its judges differ, for any benchmark whose scores are a judge's grades.

Pure functions on (answers x graders) arrays of grades, NaN where a grader gave none. A grader is a
judge, or one epoch of a judge when its self-consistency is measured.
"""

from collections.abc import Sequence
from itertools import combinations
from typing import NamedTuple

import numpy as np

CONSENSUS_RULE = (
    "Per answer, the median of the judges' grades, the lower middle one with an even count; a judge's epochs "
    "count as one judge, graded by the same rule over its epochs, so sampling a judge again does not "
    "outvote another."
)


class Differing(NamedTuple):
    """Among the `n` answers every grader graded, the `count` whose grades are not all equal."""

    n: int
    count: int
    share: float | None


def consensus_grade(grades: Sequence[float]) -> float:
    """The median of several grades of one item; of an even count, the lower of the two middle grades, which
    stays on the scale and is the conservative choice."""
    ordered = np.sort(np.asarray(grades, dtype=float))
    if len(ordered) == 0:
        raise ValueError("no grades to take the consensus of")
    return float(ordered[(len(ordered) - 1) // 2])


def consensus_grades(grades: np.ndarray) -> np.ndarray:
    """consensus_grade of each row over its graded entries; NaN for a row nobody graded."""
    return np.array(
        [consensus_grade(row[~np.isnan(row)]) if not np.isnan(row).all() else np.nan for row in grades]
    )


def differing(grades: np.ndarray) -> Differing:
    """How often the graders differ (judges of a panel, or the epochs of one judge: its drift), over the
    rows every grader graded; `share` is None when there is none."""
    complete = grades[~np.isnan(grades).any(axis=1)]
    count = int((complete != complete[:, :1]).any(axis=1).sum())
    return Differing(len(complete), count, count / len(complete) if len(complete) else None)


class PanelJudge(NamedTuple):
    """One judge of a panel: its label, and the grader columns (one per epoch) holding its grades."""

    label: str
    model: str
    epochs: list[int]
    columns: list[int]
    runs: list[str]


def group_graders(judge_of_run: Sequence[tuple[str, int]]) -> dict[tuple[str, int], list[int]]:
    """Each run's (judge identity, epoch) -> the runs of every grader: judges in order of first
    appearance, a judge's epochs in increasing order. A grader is a column of the panel's grades."""
    by_judge: dict[str, dict[int, list[int]]] = {}
    for index, (judge, epoch) in enumerate(judge_of_run):
        by_judge.setdefault(judge, {}).setdefault(epoch, []).append(index)
    return {
        (judge, epoch): runs for judge, epochs in by_judge.items() for epoch, runs in sorted(epochs.items())
    }


def panel_judges(
    graders: dict[tuple[str, int], list[int]],
    models: Sequence[str],
    names: Sequence[str],
    run_ids: Sequence[str],
) -> list[PanelJudge]:
    """The judges of `graders` (group_graders), given each run's judge model, full name (model, prompts,
    params) and run id; a judge is labelled by its model, or by its full name when two share a model."""
    judges: dict[str, PanelJudge] = {}
    for column, ((identity, epoch), runs) in enumerate(graders.items()):
        first = runs[0]
        judge = judges.setdefault(identity, PanelJudge(names[first], models[first], [], [], []))
        judge.epochs.append(epoch)
        judge.columns.append(column)
        judge.runs.extend(run_ids[i] for i in runs)
    labels = [judge.model for judge in judges.values()]
    return [
        judge._replace(label=judge.model) if labels.count(judge.model) == 1 else judge
        for judge in judges.values()
    ]


def grader_labels(judges: Sequence[PanelJudge]) -> list[str]:
    """A name per grader column: its judge's label, with the epoch when the judge has several."""
    labels = [""] * sum(len(judge.columns) for judge in judges)
    for judge in judges:
        for column, epoch in zip(judge.columns, judge.epochs, strict=True):
            labels[column] = judge.label if len(judge.columns) == 1 else f"{judge.label} epoch {epoch}"
    return labels


def judge_grades(grades: np.ndarray, judges: Sequence[PanelJudge]) -> np.ndarray:
    """(answers x graders) -> (answers x judges): each judge's grade is the consensus of its epochs', so
    sampling a judge again does not outvote another judge."""
    return np.column_stack([consensus_grades(grades[:, judge.columns]) for judge in judges])


def judge_pairs(grades: np.ndarray, judges: Sequence[PanelJudge]) -> list[tuple[str, str, Differing]]:
    """Every pair of judges (in panel order) with how often they differ over the answers both graded;
    `grades` is (answers x judges)."""
    return [
        (judges[a].label, judges[b].label, differing(grades[:, [a, b]]))
        for a, b in combinations(range(len(judges)), 2)
    ]


def drift(grades: np.ndarray, judge: PanelJudge) -> Differing | None:
    """How often a judge's epochs differ (its self-consistency); None for a judge graded once."""
    return differing(grades[:, judge.columns]) if len(judge.columns) > 1 else None
