"""ThReadMed-QA's statistics (evaluation.md's "Metrics"): CCS, EPR, the oracle ablation and coverage.

Scores are judge scores on their own 0 / 0.5 / 1 scale and rates are proportions in [0, 1]; the report
rescales to 0-100. Every function takes plain numpy arrays of judged turns only (unscored turns are
removed before), returns a NamedTuple, and draws randomness only from the `rng` it is given.
Undefined values (an empty group, a zero denominator) are None, never NaN. The bootstrap and the rank
tests they build on are the shared ones of tasks/report/stats.py.
"""

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from tasks.report.stats import LEVEL, N_RESAMPLES, BootstrapCI, RankTest, bootstrap_mean, mann_whitney

CORRECT, PARTIAL, WRONG = 1.0, 0.5, 0.0
SCORE_LABELS = {WRONG: "wrong", PARTIAL: "partial", CORRECT: "correct"}
BASELINE, ORACLE = "baseline", "oracle"
# Turn groups of the degradation table (0-based, last inclusive, None = open) and the single turns plotted.
TURN_GROUPS = (("T0", 0, 0), ("T1", 1, 1), ("T2", 2, 2), ("T3-5", 3, 5), ("T6+", 6, None))
SINGLE_TURNS = range(6)


class Consistency(NamedTuple):
    n_conversations: int
    ccs: BootstrapCI
    floor: float | None
    ceiling: float | None
    volatile_share: float | None
    degraded_share: float | None
    n_with_turn0: int


class Propagation(NamedTuple):
    epr: BootstrapCI
    after_partial: BootstrapCI
    after_correct: BootstrapCI
    amplification: float | None


class Ablation(NamedTuple):
    t0: float | None
    baseline_t2: float | None
    oracle_t2: float | None
    q_difficulty_share: float | None
    context_effect: float | None
    test: RankTest | None


class Coverage(NamedTuple):
    n_pairs: int
    unsolved_share: float | None
    unique: dict[str, int]


def _per_conversation(conversations: np.ndarray, turns: np.ndarray, scores: np.ndarray) -> dict:
    """Per-conversation count, min, max, turn-0 score (NaN if unjudged) and mean over turns >= 1."""
    ids, index = np.unique(conversations, return_inverse=True)
    count = np.bincount(index, minlength=len(ids))
    low = np.full(len(ids), np.inf)
    high = np.full(len(ids), -np.inf)
    np.minimum.at(low, index, scores)
    np.maximum.at(high, index, scores)
    first = np.full(len(ids), np.nan)
    at_zero = turns == 0
    first[index[at_zero]] = scores[at_zero]
    later = ~at_zero
    later_count = np.bincount(index[later], minlength=len(ids))
    later_sum = np.bincount(index[later], weights=scores[later], minlength=len(ids))
    with np.errstate(invalid="ignore", divide="ignore"):
        later_mean = later_sum / later_count
    return {"count": count, "low": low, "high": high, "first": first, "later_mean": later_mean}


def _mean_or_none(values: np.ndarray) -> float | None:
    return float(values.mean()) if len(values) else None


def conversation_consistency(
    conversations: np.ndarray,
    turns: np.ndarray,
    scores: np.ndarray,
    rng: np.random.Generator,
    *,
    min_turns: int = 3,
    degraded_margin: float = 0.1,
    n_resamples: int = N_RESAMPLES,
    level: float = LEVEL,
) -> Consistency:
    """CCS = 1 - mean(max - min) over conversations with >= `min_turns` judged turns, bootstrapped over them.

    Floor and ceiling are the means of the per-conversation min and max; volatile conversations hold
    both a 1.0 and a 0.0. Degraded ones have a mean over turns >= 1 more than `degraded_margin` below
    their turn-0 score; its share is over the eligible conversations whose turn 0 was judged
    (`n_with_turn0`), since degradation is undefined without it.
    """
    per = _per_conversation(np.asarray(conversations), np.asarray(turns), np.asarray(scores, dtype=float))
    eligible = per["count"] >= min_turns
    low, high = per["low"][eligible], per["high"][eligible]
    first, later_mean = per["first"][eligible], per["later_mean"][eligible]
    ccs = bootstrap_mean(1.0 - (high - low), rng, n_resamples=n_resamples, level=level)
    has_first = ~np.isnan(first)
    # Rounded so that a drop of exactly the margin (1.0 -> 0.9) is not flipped by float error.
    degraded = np.round(first[has_first] - later_mean[has_first], 9) > degraded_margin
    volatile = (high == CORRECT) & (low == WRONG)
    return Consistency(
        n_conversations=int(eligible.sum()),
        ccs=ccs,
        floor=_mean_or_none(low),
        ceiling=_mean_or_none(high),
        volatile_share=_mean_or_none(volatile),
        degraded_share=_mean_or_none(degraded),
        n_with_turn0=int(has_first.sum()),
    )


def consecutive_pairs(
    conversations: np.ndarray, turns: np.ndarray, scores: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(conversation, s(t), s(t+1)) for each judged turn t whose next turn in its conversation is judged."""
    conversations, turns = np.asarray(conversations), np.asarray(turns)
    scores = np.asarray(scores, dtype=float)
    order = np.lexsort((turns, conversations))
    conversations, turns, scores = conversations[order], turns[order], scores[order]
    linked = (conversations[1:] == conversations[:-1]) & (turns[1:] == turns[:-1] + 1)
    return conversations[:-1][linked], scores[:-1][linked], scores[1:][linked]


def wrong_rate_after(
    previous: np.ndarray,
    following: np.ndarray,
    given: float,
    rng: np.random.Generator,
    *,
    clusters: np.ndarray | None = None,
    n_resamples: int = N_RESAMPLES,
    level: float = LEVEL,
) -> BootstrapCI:
    """P(s(t+1) = 0 | s(t) = given) over consecutive pairs, bootstrapped over pairs or their clusters."""
    selected = previous == given
    return bootstrap_mean(
        (following[selected] == WRONG).astype(float),
        rng,
        clusters=None if clusters is None else clusters[selected],
        n_resamples=n_resamples,
        level=level,
    )


def error_propagation(
    conversations: np.ndarray,
    turns: np.ndarray,
    scores: np.ndarray,
    rngs: Sequence[np.random.Generator],
    *,
    clustered: bool = False,
    n_resamples: int = N_RESAMPLES,
    level: float = LEVEL,
) -> Propagation:
    """EPR = P(wrong at t+1 | wrong at t), the same after partial and after correct, and EPR / after-correct.

    `rngs` gives one generator for each of the three rates (after wrong, partial, correct).
    """
    pair_conversations, previous, following = consecutive_pairs(conversations, turns, scores)
    clusters = pair_conversations if clustered else None
    epr, after_partial, after_correct = (
        wrong_rate_after(
            previous, following, given, rng, clusters=clusters, n_resamples=n_resamples, level=level
        )
        for given, rng in zip((WRONG, PARTIAL, CORRECT), rngs, strict=True)
    )
    amplification = None
    if epr.estimate is not None and after_correct.estimate:
        amplification = epr.estimate / after_correct.estimate
    return Propagation(epr, after_partial, after_correct, amplification)


def oracle_ablation(
    baseline_turns: np.ndarray,
    baseline_scores: np.ndarray,
    oracle_turns: np.ndarray,
    oracle_scores: np.ndarray,
    *,
    tested_turns: tuple[int, int] = (1, 5),
) -> Ablation:
    """Split the T0 -> T2 drop into question difficulty (T0 - oracle T2) and context (oracle - baseline T2).

    q_difficulty_share = (T0 - oracle T2) / (T0 - baseline T2), None when there is no drop to share.
    The test is a two-sided Mann-Whitney U of baseline against oracle scores over `tested_turns`
    (inclusive), treating the two conditions as independent samples as the paper does.
    """
    t0 = _mean_or_none(baseline_scores[baseline_turns == 0])
    baseline_t2 = _mean_or_none(baseline_scores[baseline_turns == 2])
    oracle_t2 = _mean_or_none(oracle_scores[oracle_turns == 2])
    share = context = None
    if baseline_t2 is not None and oracle_t2 is not None:
        context = oracle_t2 - baseline_t2
        if t0 is not None and t0 != baseline_t2:
            share = (t0 - oracle_t2) / (t0 - baseline_t2)
    first, last = tested_turns
    test = mann_whitney(
        baseline_scores[(baseline_turns >= first) & (baseline_turns <= last)],
        oracle_scores[(oracle_turns >= first) & (oracle_turns <= last)],
        alternative="two-sided",
    )
    return Ablation(t0, baseline_t2, oracle_t2, share, context, test)


def coverage(correct: np.ndarray, models: Sequence[str]) -> Coverage:
    """Across models: share of pairs no model gets fully correct, and per model the pairs only it gets.

    `correct` is a boolean (pairs x models) matrix over the pairs judged for every model.
    """
    correct = np.asarray(correct, dtype=bool).reshape(-1, len(models))
    n_pairs = correct.shape[0]
    solved_by = correct.sum(axis=1)
    unique = (correct & (solved_by == 1)[:, None]).sum(axis=0)
    unsolved = float((solved_by == 0).mean()) if n_pairs else None
    return Coverage(n_pairs, unsolved, {model: int(k) for model, k in zip(models, unique, strict=True)})
