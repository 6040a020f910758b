"""Statistics every benchmark's report shares: bootstrap intervals, rank tests, correlations, seeded streams.

Pure functions on plain numpy arrays: each returns a NamedTuple and draws randomness only from the `rng`
it is given. Undefined values (an empty group, a zero denominator) are None, never NaN.
"""

import hashlib
from typing import NamedTuple

import numpy as np
from scipy import stats

from tasks.report.settings import LEVEL, N_RESAMPLES


class BootstrapCI(NamedTuple):
    estimate: float | None
    low: float | None
    high: float | None
    n: int
    n_resamples: int


class RankTest(NamedTuple):
    statistic: float
    p_value: float
    alternative: str
    n_x: int
    n_y: int


class Correlation(NamedTuple):
    r: float | None
    p_value: float | None
    n: int


def seeded_rng(seed: int, *labels: str) -> np.random.Generator:
    """A generator for one named statistic: the same labels give the same stream whatever else is computed.

    Keying streams by name keeps a model's intervals unchanged when a model is added to or dropped
    from a report, which a single shared stream consumed in order would not.
    """
    digest = hashlib.sha256("\x1f".join(labels).encode()).digest()
    return np.random.default_rng(np.random.SeedSequence([seed, int.from_bytes(digest[:16], "little")]))


def resample_distinct(
    units: np.ndarray, rng: np.random.Generator, n_resamples: int
) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap resamples of the rows of `units`: (distinct rows, counts of shape resamples x distinct rows).

    Identical units are merged first, so one resample is a multinomial draw of counts over the distinct
    units: the same distribution as drawing n indices, at a cost of resamples x distinct units (3 for judge
    scores, 9 for two graders' grades on a 3-point scale) instead of resamples x n.
    """
    distinct, counts = np.unique(units, axis=0, return_counts=True)
    n = len(units)
    return distinct, rng.multinomial(n, counts / n, size=n_resamples)


def percentile_interval(
    estimate: float | None, replicates: np.ndarray, n: int, *, n_resamples: int, level: float = LEVEL
) -> BootstrapCI:
    """The percentile interval of a statistic's bootstrap replicates. A resample in which the statistic is
    undefined (NaN: say, one grade only) is left out; without any defined replicate the bounds are None."""
    defined = replicates[np.isfinite(replicates)]
    if estimate is None or len(defined) == 0:
        return BootstrapCI(estimate, None, None, n, n_resamples)
    low, high = np.quantile(defined, [(1 - level) / 2, (1 + level) / 2])
    return BootstrapCI(estimate, float(low), float(high), n, n_resamples)


def bootstrap_ratio(
    numerators: np.ndarray,
    denominators: np.ndarray,
    rng: np.random.Generator,
    *,
    n_resamples: int = N_RESAMPLES,
    level: float = LEVEL,
) -> BootstrapCI:
    """Percentile interval of sum(numerators) / sum(denominators), resampling the units with replacement.

    A unit is a QA pair (numerator = score, denominator = 1) or a cluster (numerator = sum of its scores,
    denominator = its count).
    """
    numerators = np.asarray(numerators, dtype=float)
    denominators = np.asarray(denominators, dtype=float)
    n = len(numerators)
    if n == 0 or denominators.sum() == 0:
        return BootstrapCI(None, None, None, n, n_resamples)
    units, weights = resample_distinct(np.column_stack([numerators, denominators]), rng, n_resamples)
    resampled = (weights @ units[:, 0]) / (weights @ units[:, 1])
    estimate = numerators.sum() / denominators.sum()
    return percentile_interval(float(estimate), resampled, n, n_resamples=n_resamples, level=level)


def bootstrap_mean(
    values: np.ndarray,
    rng: np.random.Generator,
    *,
    clusters: np.ndarray | None = None,
    n_resamples: int = N_RESAMPLES,
    level: float = LEVEL,
) -> BootstrapCI:
    """Percentile interval of the mean of `values`, resampling values, or whole clusters when given.

    `n` of the result is the number of values either way.
    """
    values = np.asarray(values, dtype=float)
    if clusters is None:
        return bootstrap_ratio(values, np.ones_like(values), rng, n_resamples=n_resamples, level=level)
    _, cluster_index = np.unique(clusters, return_inverse=True)
    sums = np.bincount(cluster_index, weights=values)
    sizes = np.bincount(cluster_index).astype(float)
    result = bootstrap_ratio(sums, sizes, rng, n_resamples=n_resamples, level=level)
    return result._replace(n=len(values))


def mann_whitney(x: np.ndarray, y: np.ndarray, *, alternative: str) -> RankTest | None:
    """Mann-Whitney U of x against y (scipy's tie and continuity corrections); None if either is empty."""
    if len(x) == 0 or len(y) == 0:
        return None
    result = stats.mannwhitneyu(x, y, alternative=alternative)
    return RankTest(float(result.statistic), float(result.pvalue), alternative, len(x), len(y))


def spearman(x: np.ndarray, y: np.ndarray) -> Correlation:
    """Spearman rank correlation with its two-sided p; r and p are None when either side is constant."""
    n = len(x)
    if n < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return Correlation(None, None, n)
    result = stats.spearmanr(x, y)
    return Correlation(float(result.statistic), float(result.pvalue), n)


def significance_stars(p_value: float | None) -> str:
    """'***' < 0.001, '**' < 0.01, '*' < 0.05, else 'ns'; '' when there is no test."""
    if p_value is None:
        return ""
    for threshold, stars in ((0.001, "***"), (0.01, "**"), (0.05, "*")):
        if p_value < threshold:
            return stars
    return "ns"
