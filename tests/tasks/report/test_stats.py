"""The shared statistics on small inputs: reproducible bootstrap intervals, scipy's tests, seeded streams."""

import numpy as np
import pytest
from scipy import stats

from tasks.report import stats as report_stats


def rng(label: str = "test") -> np.random.Generator:
    return report_stats.seeded_rng(0, label)


def test_bootstrap_mean_is_reproducible_and_contains_the_estimate() -> None:
    values = np.array([0, 0.5, 1, 1, 0.5, 0, 1, 1, 1, 0.5])
    first = report_stats.bootstrap_mean(values, rng(), n_resamples=2000)
    assert first == report_stats.bootstrap_mean(values, rng(), n_resamples=2000)
    assert first != report_stats.bootstrap_mean(values, rng("other"), n_resamples=2000)
    assert first.estimate == pytest.approx(0.65)
    assert first.low < first.estimate < first.high
    assert (first.n, first.n_resamples) == (10, 2000)


def test_multinomial_resampling_matches_index_resampling() -> None:
    """Drawing counts over distinct values is the same bootstrap as drawing indices, in distribution."""
    values = np.random.default_rng(1).choice([0.0, 0.5, 1.0], size=300)
    ours = report_stats.bootstrap_mean(values, rng(), n_resamples=20_000)
    indices = np.random.default_rng(2).integers(0, len(values), size=(20_000, len(values)))
    naive_low, naive_high = np.quantile(values[indices].mean(axis=1), [0.025, 0.975])
    assert ours.low == pytest.approx(naive_low, abs=0.006)
    assert ours.high == pytest.approx(naive_high, abs=0.006)


def test_bootstrap_edge_cases() -> None:
    assert report_stats.bootstrap_mean(np.array([]), rng()) == report_stats.BootstrapCI(
        None, None, None, 0, report_stats.N_RESAMPLES
    )
    assert report_stats.bootstrap_mean(np.array([0.5, 0.5]), rng(), n_resamples=100)[:3] == (0.5, 0.5, 0.5)


def test_clustered_bootstrap_resamples_whole_conversations() -> None:
    # Ten conversations, each all correct or all wrong: turns inside one are perfectly correlated.
    values = np.repeat([1.0, 0.0] * 5, 4)
    clusters = np.repeat(np.arange(10), 4)
    plain = report_stats.bootstrap_mean(values, rng(), n_resamples=5000)
    clustered = report_stats.bootstrap_mean(values, rng(), clusters=clusters, n_resamples=5000)
    assert clustered.estimate == plain.estimate == 0.5
    assert clustered.n == 40
    assert clustered.high - clustered.low > 1.5 * (plain.high - plain.low)


def test_clustered_mean_weights_conversations_by_their_turns() -> None:
    # Cluster sums and sizes: the estimate is the pooled mean (4 of 6 turns), not the mean of means.
    result = report_stats.bootstrap_mean(
        np.array([1, 1, 1, 1, 0, 0]), rng(), clusters=np.array([1, 1, 1, 1, 2, 2])
    )
    assert result.estimate == pytest.approx(4 / 6)
    assert result.low == 0.0 and result.high == 1.0


def test_mann_whitney_is_scipy_with_the_stated_alternative() -> None:
    t0, later = np.array([1, 1, 0.5, 1, 0.5, 1]), np.array([0, 0.5, 0.5, 1, 0, 0, 0.5])
    for alternative in ("greater", "two-sided"):
        expected = stats.mannwhitneyu(t0, later, alternative=alternative)
        result = report_stats.mann_whitney(t0, later, alternative=alternative)
        assert result == report_stats.RankTest(expected.statistic, expected.pvalue, alternative, 6, 7)
    assert report_stats.mann_whitney(t0, np.array([]), alternative="greater") is None


def test_spearman_is_scipy_and_undefined_for_constant_input() -> None:
    words, scores = np.array([120, 300, 80, 410, 95, 260]), np.array([1, 0, 1, 0.5, 0.5, 0])
    expected = stats.spearmanr(words, scores)
    assert report_stats.spearman(words, scores) == report_stats.Correlation(
        expected.statistic, expected.pvalue, 6
    )
    assert report_stats.spearman(words, np.ones(6)) == report_stats.Correlation(None, None, 6)


@pytest.mark.parametrize(
    ("p", "stars"), [(0.0009, "***"), (0.001, "**"), (0.0099, "**"), (0.01, "*"), (0.049, "*"), (0.05, "ns")]
)
def test_significance_stars(p: float, stars: str) -> None:
    assert report_stats.significance_stars(p) == stars


def test_seeded_rng_streams_depend_on_seed_and_labels_only() -> None:
    draw = report_stats.seeded_rng(7, "model", "baseline", "ccs").random()
    assert draw == report_stats.seeded_rng(7, "model", "baseline", "ccs").random()
    assert draw != report_stats.seeded_rng(8, "model", "baseline", "ccs").random()
    assert draw != report_stats.seeded_rng(7, "model", "oracle", "ccs").random()
