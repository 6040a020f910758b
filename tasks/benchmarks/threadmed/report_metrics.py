"""metrics.json's entries for one (model, condition) (overall score, turn groups, per turn, consistency,
error propagation, costs, the oracle ablation) and the run-wide ones (coverage, physician answer length,
the judge's cost and unscored turns), with the rows of the turn and transition stats tables.
"""

from typing import Any, NamedTuple

import numpy as np

from tasks.benchmarks.threadmed import metrics as m
from tasks.benchmarks.threadmed.run_data import Turns
from tasks.benchmarks.threadmed.settings import ReportSettings
from tasks.evals.verdicts import JUDGE_CUT
from tasks.report.stats import BootstrapCI, bootstrap_mean, mann_whitney, seeded_rng, spearman


def _points(value: float | None) -> float | None:
    """A score or a rate in [0, 1] on the report's 0-100 scale."""
    return None if value is None else 100.0 * value


def _interval(ci: BootstrapCI) -> list[float] | None:
    return None if ci.low is None else [100.0 * ci.low, 100.0 * ci.high]


def estimate_json(ci: BootstrapCI) -> dict[str, Any]:
    return {"n": ci.n, "mean": _points(ci.estimate), "ci": _interval(ci)}


class Sample(NamedTuple):
    """The judged turns of one (model, condition), with what its bootstraps need."""

    conversation: np.ndarray
    turn: np.ndarray
    score: np.ndarray
    words: np.ndarray
    settings: ReportSettings
    labels: tuple[str, ...]

    def mean(self, selected: np.ndarray, values: np.ndarray, *label: str) -> BootstrapCI:
        """Bootstrap the mean of `values[selected]`, clustered by conversation if the settings say so."""
        clusters = self.conversation[selected] if self.settings.clustered else None
        return bootstrap_mean(
            values[selected],
            seeded_rng(self.settings.seed, *self.labels, *label),
            clusters=clusters,
            n_resamples=self.settings.n_resamples,
            level=self.settings.level,
        )


def _overall(sample: Sample, unscored_status: np.ndarray) -> dict[str, Any]:
    everything = np.ones(len(sample.score), dtype=bool)
    shares = {
        value: float(np.mean(sample.score == value)) if len(sample.score) else None
        for value in m.SCORE_LABELS
    }
    return {
        **estimate_json(sample.mean(everything, sample.score, "overall")),
        "correct_pct": _points(shares[m.CORRECT]),
        "partial_pct": _points(shares[m.PARTIAL]),
        "wrong_pct": _points(shares[m.WRONG]),
        "avg_words": float(sample.words.mean()) if len(sample.words) else None,
        "n_unscored": len(unscored_status),
        # By status: the model's own (answer_failed, not_run, truncated) apart from the judge's (failed,
        # unparseable, judge_cut): a model whose turn failed loses its later turns from the mean, and this
        # says so.
        "unscored": unscored_counts(unscored_status)["excluded"],
    }


def _in_group(turns: np.ndarray, first: int, last: int | None) -> np.ndarray:
    return turns >= first if last is None else (turns >= first) & (turns <= last)


def _turn_groups(sample: Sample) -> dict[str, dict[str, Any]]:
    wrong = (sample.score == m.WRONG).astype(float)
    t0 = sample.score[sample.turn == 0]
    groups = {}
    for name, first, last in m.TURN_GROUPS:
        selected = _in_group(sample.turn, first, last)
        test = None if first == 0 else mann_whitney(t0, sample.score[selected], alternative="greater")
        wrong_ci = sample.mean(selected, wrong, "wrong", name)
        groups[name] = {
            **estimate_json(sample.mean(selected, sample.score, "group", name)),
            "wrong_pct": _points(wrong_ci.estimate),
            "wrong_ci": _interval(wrong_ci),
            "p_vs_t0": None if test is None else test.p_value,
        }
    return groups


def _per_turn(sample: Sample) -> dict[str, dict[str, Any]]:
    return {
        str(t): estimate_json(sample.mean(sample.turn == t, sample.score, "turn", str(t)))
        for t in m.SINGLE_TURNS
    }


def _consistency(sample: Sample) -> dict[str, Any]:
    result = m.conversation_consistency(
        sample.conversation,
        sample.turn,
        sample.score,
        seeded_rng(sample.settings.seed, *sample.labels, "ccs"),
        n_resamples=sample.settings.n_resamples,
        level=sample.settings.level,
    )
    return {
        "n_conversations": result.n_conversations,
        "ccs": _points(result.ccs.estimate),
        "ci": _interval(result.ccs),
        "floor": _points(result.floor),
        "ceiling": _points(result.ceiling),
        "volatile_pct": _points(result.volatile_share),
        "degraded_pct": _points(result.degraded_share),
    }


def error_propagation(sample: Sample) -> m.Propagation:
    return m.error_propagation(
        sample.conversation,
        sample.turn,
        sample.score,
        [
            seeded_rng(sample.settings.seed, *sample.labels, "after", label)
            for label in m.SCORE_LABELS.values()
        ],
        clustered=sample.settings.clustered,
        n_resamples=sample.settings.n_resamples,
        level=sample.settings.level,
    )


def _propagation_json(result: m.Propagation) -> dict[str, Any]:
    return {
        "epr": _points(result.epr.estimate),
        "ci": _interval(result.epr),
        "n_after_wrong": result.epr.n,
        "after_correct": _points(result.after_correct.estimate),
        "after_partial": _points(result.after_partial.estimate),
        "amplification": result.amplification,
    }


def costs(turns: Turns, rows: np.ndarray) -> dict[str, float]:
    """Inference cost of every call of (model, condition), failed ones included."""
    return {
        "input_usd": float(turns.input_usd[rows].sum()),
        "output_usd": float(turns.output_usd[rows].sum()),
        "total_usd": float(turns.total_usd[rows].sum()),
    }


def condition_sample(
    turns: Turns,
    rows: np.ndarray,
    settings: ReportSettings,
    labels: tuple[str, ...],
    score: np.ndarray | None = None,
) -> Sample:
    """The judged turns among `rows`, by their score or by the given grades (one judge's of a panel)."""
    score = turns.score if score is None else score
    judged = rows & ~np.isnan(score)
    return Sample(
        turns.conversation[judged],
        turns.turn[judged],
        score[judged],
        turns.words[judged],
        settings,
        labels,
    )


def condition_metrics(
    sample: Sample, propagation: m.Propagation, unscored_status: np.ndarray
) -> dict[str, Any]:
    """The metrics of one model and condition; `unscored_status` holds the status of each unscored turn."""
    length = spearman(sample.words, sample.score)
    return {
        "overall": _overall(sample, unscored_status),
        "turn_groups": _turn_groups(sample),
        "per_turn": _per_turn(sample),
        "ccs": _consistency(sample),
        "epr": _propagation_json(propagation),
        "length": {"spearman_r": length.r, "p": length.p_value},
    }


def ablation(baseline: Sample, oracle: Sample) -> dict[str, Any]:
    result = m.oracle_ablation(baseline.turn, baseline.score, oracle.turn, oracle.score)
    return {
        "t0": _points(result.t0),
        "baseline_t2": _points(result.baseline_t2),
        "oracle_t2": _points(result.oracle_t2),
        "q_difficulty_share": result.q_difficulty_share,
        "context_effect": _points(result.context_effect),
        "p": None if result.test is None else result.test.p_value,
    }


def coverage(turns: Turns, models: list[str]) -> dict[str, Any] | None:
    """Coverage over baseline QA pairs judged for every model; None with fewer than two models."""
    judged = turns.scored & (turns.condition == m.BASELINE)
    covered = [model for model in models if np.any(judged & (turns.model == model))]
    if len(covered) < 2:
        return None
    pair = turns.conversation.astype(np.int64) * (int(turns.turn.max()) + 1) + turns.turn
    common = None
    for model in covered:
        keys = pair[judged & (turns.model == model)]
        common = keys if common is None else np.intersect1d(common, keys)
    correct = np.column_stack(
        [
            np.isin(common, pair[judged & (turns.model == model) & (turns.score == m.CORRECT)])
            for model in covered
        ]
    )
    result = m.coverage(correct, covered)
    return {
        "n_pairs": result.n_pairs,
        "unsolved_pct": _points(result.unsolved_share),
        "unique": result.unique,
    }


def turn_rows(model: str, condition: str, per_turn: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "model": model,
            "condition": condition,
            "turn": int(turn),
            "n": row["n"],
            "mean": row["mean"],
            "ci_low": row["ci"][0] if row["ci"] else None,
            "ci_high": row["ci"][1] if row["ci"] else None,
        }
        for turn, row in per_turn.items()
    ]


def transition_rows(model: str, condition: str, result: m.Propagation) -> list[dict[str, Any]]:
    rates = zip(m.SCORE_LABELS.items(), (result.epr, result.after_partial, result.after_correct), strict=True)
    return [
        {
            "model": model,
            "condition": condition,
            "previous_score": value,
            "previous_label": label,
            "n": ci.n,
            "wrong_next_pct": _points(ci.estimate),
            "ci_low": _points(ci.low),
            "ci_high": _points(ci.high),
        }
        for (value, label), ci in rates
    ]


def physician_avg_words(turns: Turns) -> float | None:
    """Mean words of the physician answers of the distinct QA pairs asked."""
    _, first = np.unique(np.column_stack([turns.conversation, turns.turn]), axis=0, return_index=True)
    return float(turns.physician_words[first].mean()) if len(first) else None


def unscored_counts(status: np.ndarray) -> dict[str, Any]:
    """The statuses of unscored judgments -> the unparseable count, the count of those whose judge reply was
    cut at max_tokens (`n_judge_cut`, parse status 'judge_cut') and each status's count."""
    statuses, counts = np.unique(status.astype(str), return_counts=True)
    excluded = {str(status): int(count) for status, count in zip(statuses, counts, strict=True)}
    return {
        "unparseable": excluded.get("unparseable", 0),
        "n_judge_cut": excluded.get(JUDGE_CUT, 0),
        "excluded": excluded,
    }


def judge_summary(turns: Turns, judge_model: str) -> dict[str, Any]:
    """Judge cost and the unscored turns by status (the judge's: unparseable, judge_cut, failed; the model's:
    answer_failed, not_run, truncated; missing)."""
    unscored = unscored_counts(turns.status[~turns.scored])
    return {"model": judge_model, "cost_usd": float(turns.judge_usd.sum()), **unscored}
