"""A judge panel's grade and how its judges differ, for any benchmark whose scores are a judge's grades.

Pure functions on (answers x graders) arrays of grades, NaN where a grader gave none. A grader is a
judge, or one epoch of a judge when its self-consistency is measured.
"""

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np


class Differing(NamedTuple):
    """Among the `n` answers every grader graded, the `count` whose grades are not all equal."""

    n: int
    count: int
    share: float | None


def consensus_grade(grades: Sequence[float]) -> float:
    """Several grades of one answer -> the median, and with an even count the lower of the two middle
    grades: it stays on the rubric's scale (0 / 0.5 / 1) and leans conservative."""
    return float(np.sort(np.asarray(grades, dtype=float))[(len(grades) - 1) // 2])


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
