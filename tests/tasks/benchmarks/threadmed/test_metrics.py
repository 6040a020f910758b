"""Every ThReadMed statistic on small tables, expected values worked out by hand from evaluation.md."""

import numpy as np
import pytest
from scipy import stats

from tasks.benchmarks.threadmed import metrics as m
from tasks.report.stats import seeded_rng

# Three conversations (c1, c2, c3) of one model, a gap where c3's turn 2 was unparseable, plus c4 with
# only two judged turns (too short for CCS):
#   c1: 1.0  0.0  0.0
#   c2: 0.5  1.0  0.5  1.0
#   c3: 0.5  0.0   -   0.0
#   c4: 1.0  1.0
CONVERSATIONS = np.array(["c1"] * 3 + ["c2"] * 4 + ["c3"] * 3 + ["c4"] * 2)
TURNS = np.array([0, 1, 2, 0, 1, 2, 3, 0, 1, 3, 0, 1])
SCORES = np.array([1, 0, 0, 0.5, 1, 0.5, 1, 0.5, 0, 0, 1, 1])


def rng(label: str = "test") -> np.random.Generator:
    return seeded_rng(0, label)


def test_conversation_consistency_by_hand() -> None:
    result = m.conversation_consistency(CONVERSATIONS, TURNS, SCORES, rng(), n_resamples=500)
    # c4 has 2 judged turns and is left out. Ranges: c1 1.0, c2 0.5, c3 0.5 -> CCS = 1 - 2/3.
    assert result.n_conversations == 3
    assert result.ccs.estimate == pytest.approx(1 / 3)
    assert result.ccs.low <= 1 / 3 <= result.ccs.high
    assert result.floor == pytest.approx((0 + 0.5 + 0) / 3)
    assert result.ceiling == pytest.approx((1 + 1 + 0.5) / 3)
    # Only c1 holds both a 1.0 and a 0.0.
    assert result.volatile_share == pytest.approx(1 / 3)
    # Later-turn means vs turn 0: c1 0 vs 1 (degraded), c2 0.83 vs 0.5 (no), c3 0 vs 0.5 (degraded).
    assert result.degraded_share == pytest.approx(2 / 3)
    assert result.n_with_turn0 == 3


def test_degraded_needs_more_than_ten_points_and_a_judged_turn_0() -> None:
    conversations = np.array(["exact"] * 6 + ["no-turn-0"] * 3)
    turns = np.array([0, 1, 2, 3, 4, 5, 1, 2, 3])
    # "exact": 1.0 then a later mean of 0.9, exactly 10 points below -> not degraded.
    scores = np.array([1, 1, 1, 1, 1, 0.5, 1, 0, 0])
    result = m.conversation_consistency(conversations, turns, scores, rng(), n_resamples=100)
    assert result.n_conversations == 2
    assert (result.n_with_turn0, result.degraded_share) == (1, 0.0)


def test_consecutive_pairs_skip_missing_turns() -> None:
    conversations, previous, following = m.consecutive_pairs(CONVERSATIONS, TURNS, SCORES)
    # c3's turn 2 is missing, so neither (1, 2) nor (2, 3) exists there.
    assert conversations.tolist() == ["c1", "c1", "c2", "c2", "c2", "c3", "c4"]
    assert previous.tolist() == [1, 0, 0.5, 1, 0.5, 0.5, 1]
    assert following.tolist() == [0, 0, 1, 0.5, 1, 0, 1]


def test_error_propagation_by_hand() -> None:
    rngs = [rng("wrong"), rng("partial"), rng("correct")]
    result = m.error_propagation(CONVERSATIONS, TURNS, SCORES, rngs, n_resamples=500)
    # After wrong: c1 (0 -> 0) only -> 1/1. After correct: c1 (1 -> 0), c2 (1 -> 0.5), c4 (1 -> 1) -> 1/3.
    # After partial: c2 (0.5 -> 1) twice, c3 (0.5 -> 0) -> 1/3.
    assert (result.epr.estimate, result.epr.n) == (1.0, 1)
    assert (result.after_correct.estimate, result.after_correct.n) == (pytest.approx(1 / 3), 3)
    assert (result.after_partial.estimate, result.after_partial.n) == (pytest.approx(1 / 3), 3)
    assert result.amplification == pytest.approx(3.0)


def test_amplification_is_undefined_without_errors_after_correct_turns() -> None:
    rngs = [rng("wrong"), rng("partial"), rng("correct")]
    # Pairs (0, 0), (0, 1), (1, 1): EPR 1/2, after correct 0/1, so EPR / after-correct is undefined.
    result = m.error_propagation(np.array(["a"] * 4), np.arange(4), np.array([0, 0, 1, 1]), rngs)
    assert result.epr.estimate == 0.5
    assert result.after_correct.estimate == 0.0 and result.amplification is None


def test_clustered_error_propagation_keeps_the_estimates() -> None:
    rngs = [rng("wrong"), rng("partial"), rng("correct")]
    plain = m.error_propagation(CONVERSATIONS, TURNS, SCORES, rngs, n_resamples=500)
    clustered = m.error_propagation(CONVERSATIONS, TURNS, SCORES, rngs, clustered=True, n_resamples=500)
    assert clustered.after_partial.estimate == plain.after_partial.estimate
    assert clustered.amplification == plain.amplification


def test_oracle_ablation_by_hand() -> None:
    baseline_turns = np.array([0, 0, 0, 1, 1, 2, 2, 3])
    baseline_scores = np.array([1, 1, 0.5, 0.5, 0, 0.5, 0, 1])
    oracle_turns = np.array([1, 1, 2, 2, 3])
    oracle_scores = np.array([1, 0.5, 1, 0.5, 0.5])
    result = m.oracle_ablation(baseline_turns, baseline_scores, oracle_turns, oracle_scores)
    # T0 = 2.5/3, baseline T2 = 0.25, oracle T2 = 0.75.
    assert result.t0 == pytest.approx(5 / 6)
    assert (result.baseline_t2, result.oracle_t2) == (0.25, 0.75)
    assert result.context_effect == pytest.approx(0.5)
    assert result.q_difficulty_share == pytest.approx((5 / 6 - 0.75) / (5 / 6 - 0.25))
    expected = stats.mannwhitneyu([0.5, 0, 0.5, 0, 1], oracle_scores, alternative="two-sided")
    assert result.test == m.RankTest(expected.statistic, expected.pvalue, "two-sided", 5, 5)


def test_ablation_share_is_undefined_without_a_drop() -> None:
    result = m.oracle_ablation(np.array([0, 2]), np.array([0.5, 0.5]), np.array([2]), np.array([1.0]))
    assert result.q_difficulty_share is None
    assert result.context_effect == 0.5
    assert result.test is not None


def test_coverage_by_hand() -> None:
    # Rows are QA pairs judged for every model; True = fully correct.
    correct = np.array([[1, 1, 0], [1, 0, 0], [0, 0, 0], [0, 0, 1], [0, 0, 0], [0, 1, 1]])
    result = m.coverage(correct, ["a", "b", "c"])
    assert result.n_pairs == 6
    assert result.unsolved_share == pytest.approx(2 / 6)
    assert result.unique == {"a": 1, "b": 0, "c": 1}
    assert m.coverage(np.zeros((0, 2)), ["a", "b"]) == m.Coverage(0, None, {"a": 0, "b": 0})
