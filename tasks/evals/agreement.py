"""Agreement between graders of the same items: Cohen's kappa, Krippendorff's alpha, exact agreement, the
confusion matrix and a grader's drift between repeated gradings, with seeded bootstrap intervals over items
(the consensus grade of a panel is tasks/report/panel.py's).

Generic: grades are numbers on an ordered scale the caller gives (a rubric's 0 / 0.5 / 1); a missing grade is
NaN, and any other grade off the scale is a ValueError naming it, never read as not graded. Kappa is
scikit-learn's `cohen_kappa_score` and alpha the `krippendorff` package's; the tests check both against
published examples. A statistic the data do not define is `Undefined` with the reason, never
0 and never NaN: no item graded by both graders; kappa or alpha from fewer than MIN_ITEMS items; kappa or
alpha of a pair in which a grader gave one grade only (every kappa is then 0 by construction, or 0/0, and
alpha reflects only the other grader's spread, near or below 0: neither measures agreement); alpha over
graders who all gave one same grade (no disagreement to expect: the package returns NaN). A statistic from
fewer than MIN_INTERVAL_ITEMS items has no interval, with the reason.
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
    Undefined,
    bootstrap_mean,
    percentile_interval,
    resample_distinct,
    too_few_for_interval,
)

# Kappa and alpha of fewer items are undefined (one item has no spread to correct for chance with).
MIN_ITEMS = 2
# Cohen's kappa with disagreements weighted 1 (unweighted), by distance or by squared distance on the scale.
KAPPA_WEIGHTS: dict[str, str | None] = {
    "kappa": None,
    "kappa_linear": "linear",
    "kappa_quadratic": "quadratic",
}
# A statistic: an estimate (with an interval, or the reason it has none), or why it is undefined.
Statistic = BootstrapCI | Undefined


class PairAgreement(NamedTuple):
    """Two graders on the items both graded; `confusion[i][j]` counts items the first graded scale[i] and
    the second scale[j]."""

    n: int
    exact: Statistic
    kappa: Statistic
    kappa_linear: Statistic
    kappa_quadratic: Statistic
    alpha_ordinal: Statistic
    confusion: list[list[int]]


def _without_interval(estimate: float, n: int, n_resamples: int) -> BootstrapCI | None:
    """The estimate without an interval when n items are too few for one; None when they are enough."""
    reason = too_few_for_interval(n)
    return None if reason is None else BootstrapCI(estimate, None, None, n, n_resamples, reason)


def one_grade_only(first: np.ndarray, second: np.ndarray, names: tuple[str, str]) -> Undefined | None:
    """Why a pair's kappa and alpha are undefined: too few items, or a grader who gave one grade only (its
    names say who); None when both graders gave two grades or more on at least MIN_ITEMS items."""
    n = len(first)
    if n == 0:
        return Undefined("no item graded by both", 0)
    if n < MIN_ITEMS:
        return Undefined(f"{n} item graded by both, fewer than {MIN_ITEMS}", n)
    constant = [
        (name, grades[0]) for name, grades in zip(names, (first, second), strict=True) if np.ptp(grades) == 0
    ]
    if not constant:
        return None
    who = " and ".join(name for name, _ in constant)
    grades = " and ".join(dict.fromkeys(f"{grade:g}" for _, grade in constant))
    return Undefined(
        f"{who} gave only {grades} on the {n} items, so there is no agreement beyond chance to measure", n
    )


def scale_positions(grades: np.ndarray, scale: Sequence[float]) -> np.ndarray:
    """Each grade's position on the ordered `scale` (0, 1, ...); ValueError for a grade off the scale."""
    grades = np.asarray(grades, dtype=float)
    positions = np.searchsorted(scale, grades)
    off = (positions >= len(scale)) | (np.asarray(scale)[np.minimum(positions, len(scale) - 1)] != grades)
    if off.any():
        raise ValueError(f"grade {grades[off][0]} is not on the scale {list(scale)}")
    return positions


def cohen_kappa(
    first: np.ndarray,
    second: np.ndarray,
    scale: Sequence[float],
    weights: str | None,
    names: tuple[str, str] = ("the first grader", "the second grader"),
) -> float | Undefined:
    """scikit-learn's Cohen's kappa of two graders' grades (unweighted, 'linear' or 'quadratic'); Undefined
    with fewer than MIN_ITEMS items or when a grader gave one grade only (one_grade_only)."""
    undefined = one_grade_only(np.asarray(first, dtype=float), np.asarray(second, dtype=float), names)
    if undefined is not None:
        return undefined
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        value = cohen_kappa_score(
            scale_positions(first, scale),
            scale_positions(second, scale),
            labels=list(range(len(scale))),
            weights=weights,
        )
    return float(value)


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


def _given_on_scale(grades: np.ndarray, scale: Sequence[float]) -> np.ndarray:
    """`grades` as floats; ValueError for a grade given (not NaN) that is off the scale."""
    grades = np.asarray(grades, dtype=float)
    scale_positions(grades[~np.isnan(grades)], scale)
    return grades


def value_counts(grades: np.ndarray, scale: Sequence[float]) -> np.ndarray:
    """Graders x items grades (NaN: not graded) -> items x scale counts of each grade, as Krippendorff's;
    ValueError for a grade off the scale (it would count as not graded)."""
    grades = _given_on_scale(grades, scale)
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
) -> Statistic:
    """Krippendorff's alpha for ordinal data of graders x items grades (NaN: not graded), bootstrapped over
    the items graded at least twice (`n`); Undefined with fewer than MIN_ITEMS of them or when every grade
    given is one same grade (the package's NaN: no disagreement to expect)."""
    counts = value_counts(grades, scale)
    counts = counts[counts.sum(axis=1) >= 2]  # an item graded once has no pair to agree on
    n = len(counts)
    if n == 0:
        return Undefined("no item graded twice or more", 0)
    if n < MIN_ITEMS:
        return Undefined(f"{n} item graded twice or more, fewer than {MIN_ITEMS}", n)
    given = np.flatnonzero(counts.sum(axis=0))
    if len(given) == 1:
        grade = f"{scale[given[0]]:g}"
        return Undefined(f"every grade given was {grade}, so there is no disagreement to expect", n)
    estimate = float(_alpha_of_counts(counts))
    few = _without_interval(estimate, n, n_resamples)
    if few is not None:
        return few
    distinct, weights = resample_distinct(counts, rng, n_resamples)
    replicates = np.array([_alpha_of_counts(np.repeat(distinct, draw, axis=0)) for draw in weights])
    return percentile_interval(estimate, replicates, n, n_resamples=n_resamples, level=level)


def pair_agreement(
    first: np.ndarray,
    second: np.ndarray,
    scale: Sequence[float],
    rng: np.random.Generator,
    *,
    n_resamples: int = N_RESAMPLES,
    level: float = LEVEL,
    names: tuple[str, str] = ("the first grader", "the second grader"),
) -> PairAgreement:
    """Exact agreement, the three kappas, ordinal alpha and the confusion matrix of two graders (`names`, as
    reasons name them) over the items both graded (NaN: not graded); kappas and exact agreement share one set
    of resamples of the items. Undefined and interval-less cases as the module says."""
    first, second = _given_on_scale(first, scale), _given_on_scale(second, scale)
    both = ~np.isnan(first) & ~np.isnan(second)
    first, second = first[both], second[both]
    size, n = len(scale), len(first)
    confusion = np.zeros((size, size), dtype=np.int64)
    np.add.at(confusion, (scale_positions(first, scale), scale_positions(second, scale)), 1)
    if n == 0:
        nobody = Undefined("no item graded by both", 0)
        return PairAgreement(0, nobody, nobody, nobody, nobody, nobody, confusion.tolist())
    undefined = one_grade_only(first, second, names)
    alpha = undefined or ordinal_alpha(
        np.vstack([first, second]), scale, rng, n_resamples=n_resamples, level=level
    )
    estimates: dict[str, float | Undefined] = {"exact": float(np.mean(first == second))}
    estimates |= {
        name: cohen_kappa(first, second, scale, weight, names) for name, weight in KAPPA_WEIGHTS.items()
    }
    if too_few_for_interval(n) is not None:
        few = [
            value if isinstance(value, Undefined) else _without_interval(value, n, n_resamples)
            for value in estimates.values()
        ]
        return PairAgreement(n, *few, alpha, confusion.tolist())
    cells = scale_positions(first, scale) * size + scale_positions(second, scale)
    distinct, weights = resample_distinct(cells[:, None], rng, n_resamples)
    distinct = distinct[:, 0]
    confusions = (weights @ np.eye(size * size)[distinct]).reshape(n_resamples, size, size)
    agreed = (distinct // size == distinct % size).astype(float)
    replicates = {"exact": weights @ agreed / n} | {
        name: kappa_of_confusions(confusions, weight) for name, weight in KAPPA_WEIGHTS.items()
    }
    intervals = [
        value
        if isinstance(value, Undefined)
        else percentile_interval(value, replicates[name], n, n_resamples=n_resamples, level=level)
        for name, value in estimates.items()
    ]
    return PairAgreement(n, *intervals, alpha, confusion.tolist())


def drift(
    gradings: np.ndarray,
    rng: np.random.Generator,
    *,
    n_resamples: int = N_RESAMPLES,
    level: float = LEVEL,
) -> Statistic:
    """Share of items whose grade changes between repeated gradings (items x repeats, NaN: not graded), over
    the items graded at least twice (`n`), bootstrapped over them; Undefined when there is none."""
    gradings = np.asarray(gradings, dtype=float).reshape(len(gradings), -1)
    repeated = (~np.isnan(gradings)).sum(axis=1) >= 2
    graded = gradings[repeated]
    if len(graded) == 0:
        return Undefined("no item graded twice or more", 0)
    changed = (np.nanmax(graded, axis=1) != np.nanmin(graded, axis=1)).astype(float)
    few = _without_interval(float(changed.mean()), len(changed), n_resamples)
    return few or bootstrap_mean(changed, rng, n_resamples=n_resamples, level=level)
