"""Statistics every benchmark's report shares: bootstrap intervals, rank tests, correlations, seeded streams.

Pure functions on plain numpy arrays: each returns a NamedTuple and draws randomness only from the `rng`
it is given. Undefined values (an empty group, a zero denominator) are None, never NaN; agreement
statistics say why with an `Undefined` value (statistic_columns stores either kind as row columns, and
tasks/report/tables.py format_statistic is the one way they are shown).
"""

import hashlib
from typing import NamedTuple

import numpy as np

from tasks.report.settings import LEVEL, N_RESAMPLES

# Fewer items than this give an agreement statistic no interval: a percentile bootstrap resamples the n
# items only, so from 1 item the "95% interval" is a point, and measured (2,000 simulated samples), the
# nominal 95% interval of a share of 0.7 covers it 62% of the time from 3 items, 81% from 5 and 96% from 10.
# A floor, not a guarantee: for a share of 0.9 it covers 66% from 10 items (README).
MIN_INTERVAL_ITEMS = 10


class BootstrapCI(NamedTuple):
    estimate: float | None
    low: float | None
    high: float | None
    n: int
    n_resamples: int
    no_interval: str | None = None  # why low and high are None while the estimate is defined


class Undefined(NamedTuple):
    """A statistic the data do not define, and why ('the consensus gave only 1 on the 5 items'): never a
    number, never 0."""

    reason: str
    n: int


def too_few_for_interval(n: int) -> str | None:
    """Why n items give no interval (fewer than MIN_INTERVAL_ITEMS), or None when they are enough."""
    if n >= MIN_INTERVAL_ITEMS:
        return None
    return f"{n} item{'' if n == 1 else 's'}, fewer than {MIN_INTERVAL_ITEMS}"


def statistic_columns(name: str, value: BootstrapCI | Undefined) -> dict[str, object]:
    """A statistic as the columns of a stored row (JSON, CSV, Parquet): `name` and, with an interval,
    `name_low` and `name_high` (null when undefined or without an interval), and `name_undefined`, why the
    statistic is undefined ('undefined: ...') or has no interval ('no interval: ...'), null when neither."""
    if isinstance(value, Undefined):
        return {
            name: None,
            f"{name}_low": None,
            f"{name}_high": None,
            f"{name}_undefined": f"undefined: {value.reason}",
        }
    note = (
        None if value.no_interval is None or value.estimate is None else f"no interval: {value.no_interval}"
    )
    return {
        name: value.estimate,
        f"{name}_low": value.low,
        f"{name}_high": value.high,
        f"{name}_undefined": note,
    }


def value_columns(name: str, value: float | Undefined | None) -> dict[str, object]:
    """A statistic without an interval as the columns of a stored row: `name` (null when undefined) and
    `name_undefined`, why it is undefined ('undefined: ...'), null when defined."""
    if isinstance(value, Undefined):
        return {name: None, f"{name}_undefined": f"undefined: {value.reason}"}
    return {name: value, f"{name}_undefined": None}


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
    undefined (NaN: say, one grade only) is left out; without any defined replicate the bounds are None, and
    `no_interval` says so."""
    defined = replicates[np.isfinite(replicates)]
    if estimate is None:
        return BootstrapCI(estimate, None, None, n, n_resamples)
    if len(defined) == 0:
        return BootstrapCI(estimate, None, None, n, n_resamples, "undefined in every resample")
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
    from scipy import stats  # here, not at the top: every run imports this module, few run a rank test

    result = stats.mannwhitneyu(x, y, alternative=alternative)
    return RankTest(float(result.statistic), float(result.pvalue), alternative, len(x), len(y))


def spearman(x: np.ndarray, y: np.ndarray) -> Correlation:
    """Spearman rank correlation with its two-sided p; r and p are None when either side is constant."""
    n = len(x)
    if n < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return Correlation(None, None, n)
    from scipy import stats  # as in mann_whitney

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
