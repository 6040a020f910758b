"""Agreement between graders of the same items: Cohen's kappa, Krippendorff's alpha, exact agreement, the
confusion matrix and a grader's drift between repeated gradings, with seeded bootstrap intervals over items
(the consensus grade of a panel is tasks/report/panel.py's).

Generic: grades are numbers on an ordered scale the caller gives (a rubric's 0 / 0.5 / 1); a missing grade is
NaN. Kappa is scikit-learn's `cohen_kappa_score` and alpha the `krippendorff` package's; the tests check
both against published examples. Undefined values (no variance, fewer than two items) are None, never NaN.
"""

import warnings
from collections.abc import Sequence
from typing import NamedTuple

import krippendorff
import numpy as np
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import cohen_kappa_score

from tasks.report.stats import (
    LEVEL,
    N_RESAMPLES,
    BootstrapCI,
    bootstrap_mean,
    percentile_interval,
    resample_distinct,
)

MIN_ITEMS = 2
# Cohen's kappa with disagreements weighted 1 (unweighted), by distance or by squared distance on the scale.
KAPPA_WEIGHTS: dict[str, str | None] = {
    "kappa": None,
    "kappa_linear": "linear",
    "kappa_quadratic": "quadratic",
}


class PairAgreement(NamedTuple):
    """Two graders on the items both graded; `confusion[i][j]` counts items the first graded scale[i] and
    the second scale[j]."""

    n: int
    exact: BootstrapCI
    kappa: BootstrapCI
    kappa_linear: BootstrapCI
    kappa_quadratic: BootstrapCI
    alpha_ordinal: BootstrapCI
    confusion: list[list[int]]


def _defined(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def scale_positions(grades: np.ndarray, scale: Sequence[float]) -> np.ndarray:
    """Each grade's position on the ordered `scale` (0, 1, ...); ValueError for a grade off the scale."""
    grades = np.asarray(grades, dtype=float)
    positions = np.searchsorted(scale, grades)
    off = (positions >= len(scale)) | (np.asarray(scale)[np.minimum(positions, len(scale) - 1)] != grades)
    if off.any():
        raise ValueError(f"grade {grades[off][0]} is not on the scale {list(scale)}")
    return positions


def cohen_kappa(
    first: np.ndarray, second: np.ndarray, scale: Sequence[float], weights: str | None
) -> float | None:
    """scikit-learn's Cohen's kappa of two graders' grades (unweighted, 'linear' or 'quadratic'); None
    with fewer than two items or when chance agreement is total (both always give one same grade)."""
    if len(first) < MIN_ITEMS:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        value = cohen_kappa_score(
            scale_positions(first, scale),
            scale_positions(second, scale),
            labels=list(range(len(scale))),
            weights=weights,
        )
    return _defined(value)


def kappa_of_confusions(confusions: np.ndarray, weights: str | None) -> np.ndarray:
    """scikit-learn's kappa formula on a stack of confusion matrices (resamples x V x V) at once, NaN where
    undefined: a bootstrap needs thousands of kappas, and one library call costs about a millisecond."""
    size = confusions.shape[-1]
    positions = np.arange(size)
    distance = np.abs(positions[:, None] - positions[None, :])
    penalty = {None: (distance > 0).astype(float), "linear": distance, "quadratic": distance**2}[weights]
    totals = confusions.sum(axis=(1, 2))
    expected = confusions.sum(axis=2)[:, :, None] * confusions.sum(axis=1)[:, None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = expected / totals[:, None, None]
        return 1 - (confusions * penalty).sum(axis=(1, 2)) / (expected * penalty).sum(axis=(1, 2))


def value_counts(grades: np.ndarray, scale: Sequence[float]) -> np.ndarray:
    """Graders x items grades (NaN: not graded) -> items x scale counts of each grade, as Krippendorff's."""
    grades = np.asarray(grades, dtype=float)
    return (grades.T[:, :, None] == np.asarray(scale, dtype=float)[None, None, :]).sum(axis=1)


def _alpha_of_counts(counts: np.ndarray) -> float:
    """Ordinal alpha of items x scale counts; NaN when undefined (fewer than two pairable values, or no
    expected disagreement because one grade only was given)."""
    if counts.sum() < MIN_ITEMS:
        return np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        return krippendorff.alpha(value_counts=counts, level_of_measurement="ordinal")


def ordinal_alpha(
    grades: np.ndarray,
    scale: Sequence[float],
    rng: np.random.Generator,
    *,
    n_resamples: int = N_RESAMPLES,
    level: float = LEVEL,
) -> BootstrapCI:
    """Krippendorff's alpha for ordinal data of graders x items grades (NaN: not graded), bootstrapped over
    the items graded at least twice (`n`); None with fewer than two of them or a single grade given."""
    counts = value_counts(grades, scale)
    counts = counts[counts.sum(axis=1) >= 2]  # an item graded once has no pair to agree on
    n = len(counts)
    if n < MIN_ITEMS:
        return BootstrapCI(None, None, None, n, n_resamples)
    distinct, weights = resample_distinct(counts, rng, n_resamples)
    replicates = np.array([_alpha_of_counts(np.repeat(distinct, draw, axis=0)) for draw in weights])
    return percentile_interval(
        _defined(_alpha_of_counts(counts)), replicates, n, n_resamples=n_resamples, level=level
    )


def pair_agreement(
    first: np.ndarray,
    second: np.ndarray,
    scale: Sequence[float],
    rng: np.random.Generator,
    *,
    n_resamples: int = N_RESAMPLES,
    level: float = LEVEL,
) -> PairAgreement:
    """Exact agreement, the three kappas, ordinal alpha and the confusion matrix of two graders over the items
    both graded (NaN: not graded); kappas and exact agreement share one set of resamples of the items."""
    both = ~np.isnan(np.asarray(first, dtype=float)) & ~np.isnan(np.asarray(second, dtype=float))
    first, second = np.asarray(first, dtype=float)[both], np.asarray(second, dtype=float)[both]
    size, n = len(scale), len(first)
    confusion = np.zeros((size, size), dtype=np.int64)
    np.add.at(confusion, (scale_positions(first, scale), scale_positions(second, scale)), 1)
    alpha = ordinal_alpha(np.vstack([first, second]), scale, rng, n_resamples=n_resamples, level=level)
    if n == 0:
        empty = BootstrapCI(None, None, None, n, n_resamples)
        return PairAgreement(n, empty, empty, empty, empty, alpha, confusion.tolist())
    cells = scale_positions(first, scale) * size + scale_positions(second, scale)
    distinct, weights = resample_distinct(cells[:, None], rng, n_resamples)
    distinct = distinct[:, 0]
    confusions = (weights @ np.eye(size * size)[distinct]).reshape(n_resamples, size, size)
    agreed = (distinct // size == distinct % size).astype(float)

    def interval(estimate: float | None, replicates: np.ndarray) -> BootstrapCI:
        return percentile_interval(estimate, replicates, n, n_resamples=n_resamples, level=level)

    kappas = {
        name: interval(cohen_kappa(first, second, scale, weight), kappa_of_confusions(confusions, weight))
        for name, weight in KAPPA_WEIGHTS.items()
    }
    exact = interval(float(np.mean(first == second)), weights @ agreed / n)
    return PairAgreement(n, exact, **kappas, alpha_ordinal=alpha, confusion=confusion.tolist())


def drift(
    gradings: np.ndarray,
    rng: np.random.Generator,
    *,
    n_resamples: int = N_RESAMPLES,
    level: float = LEVEL,
) -> BootstrapCI:
    """Share of items whose grade changes between repeated gradings (items x repeats, NaN: not graded), over
    the items graded at least twice (`n`), bootstrapped over them."""
    gradings = np.asarray(gradings, dtype=float).reshape(len(gradings), -1)
    repeated = (~np.isnan(gradings)).sum(axis=1) >= 2
    graded = gradings[repeated]
    changed = (np.nanmax(graded, axis=1) != np.nanmin(graded, axis=1)) if len(graded) else np.array([])
    return bootstrap_mean(changed.astype(float), rng, n_resamples=n_resamples, level=level)
