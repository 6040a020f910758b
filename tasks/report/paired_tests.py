"""The paired tests `compare` runs on two models' scores of the same items (tasks/report/compare.py): the
Wilcoxon signed-rank test of graded scores, McNemar's exact test of pass/fail ones, and the paired bootstrap
of a statistic computed from several metrics' means (a composite), whose value is recomputed on each
resample of clusters as Koehn (2004) does for corpus BLEU.

Pure functions on numpy arrays; randomness only from the `rng` given.
"""

from collections.abc import Callable
from statistics import fmean
from typing import NamedTuple

import numpy as np

from tasks.report.settings import CompareSettings
from tasks.report.stats import BootstrapCI, percentile_interval

WILCOXON, MCNEMAR, PAIRED_BOOTSTRAP = "Wilcoxon", "McNemar exact", "paired bootstrap"


class PairedTest(NamedTuple):
    name: str
    statistic: float
    p_value: float
    n: int


def wilcoxon_test(a: np.ndarray, b: np.ndarray) -> PairedTest | None:
    """Wilcoxon signed-rank of the pairs (a, b), two-sided, scipy's defaults (zero differences dropped);
    None when no pair differs (the test is undefined)."""
    if not np.any(a != b):
        return None
    from scipy import stats  # here, not at the top: importing scipy.stats takes most of a second

    result = stats.wilcoxon(a, b, alternative="two-sided")
    return PairedTest(WILCOXON, float(result.statistic), float(result.pvalue), len(a))


def mcnemar_test(a: np.ndarray, b: np.ndarray) -> PairedTest | None:
    """McNemar's exact test of paired pass/fail outcomes (1 pass, 0 fail): a two-sided binomial test of the
    pairs only a passes among the discordant pairs, against one half. None without a discordant pair.
    The statistic is the count of pairs only a passes."""
    only_a = int(np.sum((a == 1) & (b == 0)))
    only_b = int(np.sum((a == 0) & (b == 1)))
    if only_a + only_b == 0:
        return None
    from scipy import stats  # as in wilcoxon_test

    result = stats.binomtest(only_a, only_a + only_b, 0.5, alternative="two-sided")
    return PairedTest(MCNEMAR, float(only_a), float(result.pvalue), len(a))


def column_means(values: np.ndarray) -> np.ndarray:
    """Each column's mean over its defined (not NaN) entries, NaN where none is. `fmean` sums exactly, so the
    mean is the benchmark's own to the last digit whatever the items' order."""
    return np.array(
        [fmean(column[~np.isnan(column)]) if (~np.isnan(column)).any() else np.nan for column in values.T]
    )


def resampled_means(values: np.ndarray, cluster_index: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """Each column's mean over its defined entries in each resample (`draws`: resamples x clusters, how often
    each cluster is drawn): resamples x columns, NaN where no drawn item defines it."""
    defined = ~np.isnan(values)
    sums = np.zeros((draws.shape[1], values.shape[1]))
    counts = np.zeros_like(sums)
    np.add.at(sums, cluster_index, np.where(defined, values, 0.0))
    np.add.at(counts, cluster_index, defined)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (draws @ sums) / (draws @ counts)


class StatisticDifference(NamedTuple):
    """Both models' statistic over the pairs (None where undefined), the paired bootstrap interval of its
    difference and the bootstrap test (None when no pair differs)."""

    value_a: float | None
    value_b: float | None
    interval: BootstrapCI
    test: PairedTest | None


def _defined(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def paired_statistic(
    a: np.ndarray,
    b: np.ndarray,
    clusters: np.ndarray,
    of_means: Callable[[np.ndarray], np.ndarray],
    rng: np.random.Generator,
    settings: CompareSettings,
) -> StatisticDifference:
    """Two models' statistic over paired items (`a`, `b`: items x parts, NaN where a part is undefined on an
    item; `of_means`: parts' means, last axis -> the statistic, NaN where undefined) and a paired bootstrap of
    its difference: every resample draws whole clusters with replacement (each item keeping both models'
    values), recomputes both statistics from the resample's means and takes their difference (a resample
    where either is undefined is left out). The interval is the percentile one of those differences; the
    test is two-sided, the resampled differences centred on the observed one standing for its null
    distribution: p = (1 + resamples at least as far from the observed difference as it is from 0) /
    (1 + resamples), never below 1 / (1 + resamples)."""
    value_a, value_b = (_defined(of_means(column_means(values))) for values in (a, b))
    estimate = None if value_a is None or value_b is None else value_a - value_b
    n = len(a)
    if n == 0 or estimate is None:
        return StatisticDifference(
            value_a, value_b, BootstrapCI(estimate, None, None, n, settings.n_resamples), None
        )
    _, cluster_index = np.unique(clusters, return_inverse=True)
    count = int(cluster_index.max()) + 1
    draws = rng.multinomial(count, np.full(count, 1 / count), size=settings.n_resamples)
    differences = of_means(resampled_means(a, cluster_index, draws)) - of_means(
        resampled_means(b, cluster_index, draws)
    )
    interval = percentile_interval(
        estimate, differences, n, n_resamples=settings.n_resamples, level=settings.level
    )
    defined = differences[np.isfinite(differences)]
    if np.array_equal(a, b, equal_nan=True) or len(defined) == 0:
        return StatisticDifference(value_a, value_b, interval, None)
    beyond = int(np.sum(np.abs(defined - estimate) >= abs(estimate)))
    test = PairedTest(PAIRED_BOOTSTRAP, estimate, (1 + beyond) / (1 + len(defined)), n)
    return StatisticDifference(value_a, value_b, interval, test)
