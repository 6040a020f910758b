"""The paired tests on hand-made pairs: scipy's Wilcoxon and McNemar tests, and the paired bootstrap of a
statistic of means."""

import numpy as np
import pytest
from scipy import stats

from tasks.report.paired_tests import column_means, mcnemar_test, paired_statistic, wilcoxon_test
from tasks.report.settings import CompareSettings

SETTINGS = CompareSettings(n_resamples=500, seed=3)


def test_wilcoxon_is_scipys_signed_rank_test_and_undefined_without_a_difference() -> None:
    a, b = np.array([1, 0.5, 1, 0, 1, 0.5]), np.array([0, 0.5, 0.5, 0, 0, 0])
    expected = stats.wilcoxon(a, b, alternative="two-sided")
    assert wilcoxon_test(a, b) == ("Wilcoxon", expected.statistic, expected.pvalue, 6)
    assert wilcoxon_test(a, a) is None


def test_mcnemar_is_the_exact_binomial_test_of_the_discordant_pairs() -> None:
    a = np.array([1, 1, 1, 1, 1, 0, 0, 1, 0])
    b = np.array([0, 0, 0, 0, 1, 1, 0, 1, 0])
    # Discordant: four pairs only a passes, one only b passes.
    assert mcnemar_test(a, b) == ("McNemar exact", 4.0, stats.binomtest(4, 5, 0.5).pvalue, 9)
    assert mcnemar_test(a, b).p_value == pytest.approx(0.375)
    assert mcnemar_test(a, a) is None


def first(means: np.ndarray) -> np.ndarray:
    return means[..., 0]


def test_column_means_leave_out_what_is_undefined_and_are_exact_in_any_order() -> None:
    values = np.array([[0.1, np.nan], [0.2, np.nan], [0.7, 1.0]])
    assert column_means(values).tolist() == [pytest.approx(1 / 3), 1.0]
    assert np.isnan(column_means(np.full((2, 1), np.nan))[0])
    assert column_means(values[::-1]).tolist() == column_means(values).tolist()


def test_one_cluster_is_every_resample_so_the_interval_is_a_point_and_p_the_smallest() -> None:
    a = np.array([[1.0], [0.5], [1.0]])
    b = np.array([[0.5], [0.5], [0.0]])
    result = paired_statistic(a, b, np.array(["t0"] * 3), first, np.random.default_rng(0), SETTINGS)
    assert (result.value_a, result.value_b) == (pytest.approx(2.5 / 3), pytest.approx(1 / 3))
    assert (result.interval.low, result.interval.high) == (pytest.approx(0.5), pytest.approx(0.5))
    assert result.test == ("paired bootstrap", pytest.approx(0.5), 1 / 501, 3)


def test_equal_models_have_no_test_and_an_undefined_statistic_no_interval() -> None:
    a = np.array([[1.0], [0.0]])
    same = paired_statistic(a, a.copy(), np.array(["t0", "t1"]), first, np.random.default_rng(0), SETTINGS)
    assert (same.interval.estimate, same.test) == (0.0, None)
    undefined = paired_statistic(
        np.full((2, 1), np.nan), a, np.array(["t0", "t1"]), first, np.random.default_rng(0), SETTINGS
    )
    assert undefined == (None, 0.5, (None, None, None, 2, 500, None), None)


def test_the_bootstrap_p_is_two_sided_and_seeded() -> None:
    rng = np.random.default_rng(11)
    a = rng.random((40, 1))
    b = a + rng.normal(0, 0.3, (40, 1))
    clusters = np.array([f"t{i // 2}" for i in range(40)])
    forward = paired_statistic(a, b, clusters, first, np.random.default_rng(5), SETTINGS)
    backward = paired_statistic(b, a, clusters, first, np.random.default_rng(5), SETTINGS)
    assert forward.test.p_value == backward.test.p_value  # the same draws, the sign swapped
    assert forward.interval.low == pytest.approx(-backward.interval.high)
    assert 1 / 501 <= forward.test.p_value <= 1
