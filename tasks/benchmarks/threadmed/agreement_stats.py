"""agreement.json's content: each judge against each rater and the raters' consensus, rater against rater
(the ceiling), by group, the paper's metrics on human and judge grades, the length check and each judge's
drift; with the notes a reader needs and each table's columns (one CSV each).
"""

from collections import defaultdict
from typing import Any, NamedTuple

import numpy as np

from tasks.benchmarks.threadmed import metrics as m
from tasks.benchmarks.threadmed.agreement_inputs import SIMULATED, Judge, Labels, judge_name, sample_name
from tasks.benchmarks.threadmed.agreement_settings import AgreementSettings
from tasks.evals.agreement import PairAgreement, drift, ordinal_alpha, pair_agreement
from tasks.report.panel import consensus_grades
from tasks.report.stats import BootstrapCI, bootstrap_mean, seeded_rng, spearman, statistic_columns

SCALE = (m.WRONG, m.PARTIAL, m.CORRECT)
STATISTICS = ("exact", "kappa", "kappa_linear", "kappa_quadratic", "alpha_ordinal")
POSITION_NOTE = (
    "Position check: not applicable. It tests whether a pairwise judge prefers the answer shown first; "
    "ThReadMed's rubric grades one answer at a time, so there is no position to swap."
)


def consensus(labels: Labels) -> np.ndarray:
    """Per item, the raters' consensus grade (tasks/evals/agreement.py); NaN for an item nobody rated."""
    return consensus_grades(labels.grades.T)


def agreement_row(result: PairAgreement) -> dict[str, Any]:
    row: dict[str, Any] = {"n": result.n}
    for name in STATISTICS:
        row.update(statistic_columns(name, getattr(result, name)))
    return row


class Context(NamedTuple):
    """What every table needs: the labels, their consensus, and how to bootstrap (a stream per statistic)."""

    labels: Labels
    consensus: np.ndarray
    consensus_label: str
    settings: AgreementSettings

    def pair(
        self, first: np.ndarray, second: np.ndarray, names: tuple[str, str], *stream: str
    ) -> PairAgreement:
        """Agreement of two graders (`names`, which reasons name), from the bootstrap stream `stream`."""
        return pair_agreement(
            first,
            second,
            SCALE,
            seeded_rng(self.settings.seed, *stream),
            n_resamples=self.settings.n_resamples,
            level=self.settings.level,
            names=names,
        )

    def mean(self, values: np.ndarray, *stream: str) -> BootstrapCI:
        return bootstrap_mean(
            values,
            seeded_rng(self.settings.seed, *stream),
            n_resamples=self.settings.n_resamples,
            level=self.settings.level,
        )


def judge_rows(context: Context, judges: list[Judge]) -> tuple[list[dict], list[dict]]:
    """Each judge against each rater and the consensus, and the confusion counts of each such pair."""
    labels, rows, confusion = context.labels, [], []
    versus = [(labels.rater_label(i), kind, labels.grades[i]) for i, kind in enumerate(labels.rater_kinds)]
    versus.append((context.consensus_label, "consensus", context.consensus))
    for judge in judges:
        for name, kind, grades in versus:
            result = context.pair(judge.grades, grades, (judge.label, name), "judge", judge.label, name)
            rows.append({"judge": judge.label, "versus": name, "versus_kind": kind, **agreement_row(result)})
            confusion += [
                {"judge": judge.label, "versus": name, "judge_grade": SCALE[i], "human_grade": SCALE[j],
                 "count": result.confusion[i][j]}
                for i in range(len(SCALE))
                for j in range(len(SCALE))
            ]  # fmt: skip
    return rows, confusion


def rater_rows(context: Context) -> list[dict[str, Any]]:
    """Each pair of raters on the items both rated, then ordinal alpha over all raters: the ceiling."""
    labels, rows = context.labels, []
    for a in range(len(labels.raters)):
        for b in range(a + 1, len(labels.raters)):
            first, second = labels.rater_label(a), labels.rater_label(b)
            result = context.pair(
                labels.grades[a], labels.grades[b], (first, second), "raters", first, second
            )
            rows.append({"first": first, "second": second, **agreement_row(result)})
    if len(labels.raters) >= 2:
        alpha = ordinal_alpha(
            labels.grades,
            SCALE,
            seeded_rng(context.settings.seed, "raters", "all"),
            n_resamples=context.settings.n_resamples,
            level=context.settings.level,
        )
        everyone = dict.fromkeys(AGREEMENT_COLUMNS)
        rows.append(
            {
                "first": "all raters",
                "second": "",
                **everyone,
                "n": alpha.n,
                **statistic_columns("alpha_ordinal", alpha),
            }
        )
    return rows


def length_terciles(words: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Each item's answer-length tercile, and the terciles' names: 'short (<= a words)', 'medium (<= b
    words)', 'long (> b words)', with a and b the sample's 1/3 and 2/3 quantiles of words."""
    low, high = np.quantile(words, [1 / 3, 2 / 3]) if len(words) else (0.0, 0.0)
    names = [f"short (<= {low:g} words)", f"medium (<= {high:g} words)", f"long (> {high:g} words)"]
    return np.array(names)[np.searchsorted([low, high], words, side="left")], names


def breakdowns(items: dict[str, np.ndarray]) -> dict[str, tuple[np.ndarray, list[str]]]:
    """Breakdown -> (each item's group, the groups in display order)."""
    terciles, tercile_names = length_terciles(items["answer_words"])
    return {
        "turn group": (items["turn_group"], [name for name, _, _ in m.TURN_GROUPS]),
        "model": (items["model"], sorted(set(items["model"].tolist()))),
        "answer length": (terciles, tercile_names),
    }


def group_rows(context: Context, judges: list[Judge]) -> list[dict[str, Any]]:
    """Each judge against the consensus by turn group, by model and by answer-length tercile."""
    rows = []
    for judge in judges:
        for breakdown, (groups, order) in breakdowns(context.labels.items).items():
            for group in (name for name in order if (groups == name).any()):
                chosen = groups == group
                result = context.pair(
                    judge.grades[chosen],
                    context.consensus[chosen],
                    (judge.label, context.consensus_label),
                    "group",
                    judge.label,
                    group,
                )
                rows.append(
                    {
                        "judge": judge.label,
                        "versus": context.consensus_label,
                        "breakdown": breakdown,
                        "group": group,
                        **agreement_row(result),
                    }
                )
    return rows


def _points(ci: BootstrapCI) -> tuple[float | None, float | None, float | None]:
    """A score or a rate as (estimate, low, high) on the report's 0-100 scale."""
    return tuple(None if value is None else 100.0 * value for value in ci[:3])  # type: ignore[return-value]


def paper_metrics(
    context: Context, chosen: np.ndarray, scores: np.ndarray, *stream: str
) -> dict[str, BootstrapCI]:
    """The report's metrics over the chosen items' scores: mean, mean per turn group, degradation (T0 minus
    later turns), CCS over conversations with >= 2 rated turns and EPR over consecutive rated turns."""
    items, settings = context.labels.items, context.settings
    threads, turns, groups = items["thread_id"][chosen], items["turn"][chosen], items["turn_group"][chosen]
    result = {"mean": context.mean(scores, *stream, "mean")}
    for name, _, _ in m.TURN_GROUPS:
        result[f"mean {name}"] = context.mean(scores[groups == name], *stream, name)
    first, later = scores[turns == 0], scores[turns > 0]
    drop = float(first.mean() - later.mean()) if len(first) and len(later) else None
    result["degradation (T0 - later turns)"] = BootstrapCI(
        drop, None, None, len(scores), settings.n_resamples
    )
    options = {"n_resamples": settings.n_resamples, "level": settings.level}
    result["CCS (>= 2 rated turns)"] = m.conversation_consistency(
        threads, turns, scores, seeded_rng(settings.seed, *stream, "ccs"), min_turns=2, **options
    ).ccs
    rngs = [seeded_rng(settings.seed, *stream, "after", label) for label in m.SCORE_LABELS.values()]
    result["EPR (consecutive rated turns)"] = m.error_propagation(threads, turns, scores, rngs, **options).epr
    return result


def paper_metric_rows(context: Context, judges: list[Judge]) -> list[dict[str, Any]]:
    """The paper's metrics on the human consensus beside the judge's, per (model, condition), on the items
    both graded: does a conclusion drawn from the judge survive on clinicians' grades?"""
    items, rows = context.labels.items, []
    units = sorted(set(zip(items["model"].tolist(), items["condition"].tolist(), strict=True)))
    for judge in judges:
        both = ~np.isnan(judge.grades) & ~np.isnan(context.consensus)
        for model, condition in units:
            chosen = both & (items["model"] == model) & (items["condition"] == condition)
            stream = (judge.label, model, condition)
            by_judge = paper_metrics(context, chosen, judge.grades[chosen], *stream, "judge")
            by_humans = paper_metrics(context, chosen, context.consensus[chosen], *stream, "human")
            for metric, judged in by_judge.items():
                (value, low, high), (human, human_low, human_high) = (
                    _points(judged),
                    _points(by_humans[metric]),
                )
                rows.append(
                    {"judge": judge.label, "versus": context.consensus_label, "model": model,
                     "condition": condition, "metric": metric, "n": judged.n, "judge_value": value,
                     "judge_low": low, "judge_high": high,
                     "human_value": human, "human_low": human_low, "human_high": human_high,
                     "difference": None if value is None or human is None else value - human}
                )  # fmt: skip
    return rows


def length_rows(context: Context, judges: list[Judge]) -> tuple[list[dict], list[dict]]:
    """At equal consensus grade, the judge's mean grade of answers at most the median length and of longer
    ones; and Spearman's r of (judge - consensus) against answer words: > 0 if the judge favours length."""
    words = context.labels.items["answer_words"].astype(float)
    by_grade, correlation = [], []
    for judge in judges:
        both = ~np.isnan(judge.grades) & ~np.isnan(context.consensus)
        for grade in SCALE:
            chosen = both & (context.consensus == grade)
            if not chosen.any():
                continue
            median = float(np.median(words[chosen]))
            short, long = chosen & (words <= median), chosen & (words > median)
            means = [float(judge.grades[part].mean()) if part.any() else None for part in (short, long)]
            by_grade.append(
                {"judge": judge.label, "versus": context.consensus_label, "human_grade": grade,
                 "median_words": median, "n_short": int(short.sum()), "judge_short": means[0],
                 "n_long": int(long.sum()), "judge_long": means[1],
                 "difference": None if None in means else means[1] - means[0]}  # type: ignore[operator]
            )  # fmt: skip
        result = spearman(words[both], judge.grades[both] - context.consensus[both])
        correlation.append(
            {"judge": judge.label, "versus": context.consensus_label, "n": result.n, "spearman_r": result.r,
             "p": result.p_value}
        )  # fmt: skip
    return by_grade, correlation


def drift_rows(context: Context, judges: list[Judge]) -> list[dict[str, Any]]:
    """For each judge (model and rubric) run as several samples (other params or epochs): the share of the
    answers its samples all graded (the same answer: same response call_key) whose grade is not the same in
    every sample."""
    families: defaultdict[str, list[Judge]] = defaultdict(list)
    for judge in judges:
        families[judge_name(judge.identity)].append(judge)
    rows = []
    for name, members in families.items():
        samples = list(dict.fromkeys(sample_name(judge.identity) for judge in members))
        if len(samples) < 2:
            continue
        keys = sorted(set().union(*(judge.graded for judge in members)))
        answer_of: dict[tuple, str | None] = {}
        gradings = np.full((len(keys), len(members)), np.nan)
        for column, judge in enumerate(members):
            for row, key in enumerate(keys):
                if (
                    key in judge.graded
                    and answer_of.setdefault(key, judge.graded[key][0]) == judge.graded[key][0]
                ):
                    gradings[row, column] = judge.graded[key][1]
        result = drift(
            gradings,
            seeded_rng(context.settings.seed, "drift", name),
            n_resamples=context.settings.n_resamples,
            level=context.settings.level,
        )
        runs = ", ".join(judge.run_id for judge in members)
        rows.append({"judge": name, "samples": "; ".join(samples), "runs": runs,
                     "n": result.n, **statistic_columns("drift", result)})  # fmt: skip
    return rows


AGREEMENT_COLUMNS = [
    "n", *(f"{name}{end}" for name in STATISTICS for end in ("", "_low", "_high", "_undefined"))
]  # fmt: skip
TABLE_COLUMNS: dict[str, list[str]] = {
    "judge_vs_raters": ["judge", "versus", "versus_kind", *AGREEMENT_COLUMNS],
    "confusion": ["judge", "versus", "judge_grade", "human_grade", "count"],
    "rater_vs_rater": ["first", "second", *AGREEMENT_COLUMNS],
    "by_group": ["judge", "versus", "breakdown", "group", *AGREEMENT_COLUMNS],
    "paper_metrics": [
        "judge", "versus", "model", "condition", "metric", "n", "judge_value", "judge_low", "judge_high",
        "human_value", "human_low", "human_high", "difference",
    ],
    "length_check": [
        "judge", "versus", "human_grade", "median_words", "n_short", "judge_short", "n_long", "judge_long",
        "difference",
    ],
    "length_correlation": ["judge", "versus", "n", "spearman_r", "p"],
    "drift": ["judge", "samples", "runs", "n", "drift", "drift_low", "drift_high", "drift_undefined"],
}  # fmt: skip


def notes(labels: Labels, drift_table: list[dict[str, Any]]) -> list[str]:
    """What a reader must know to read the tables: simulated raters, a missing ceiling or drift, position."""
    found = []
    simulated = [labels.rater_label(i) for i, kind in enumerate(labels.rater_kinds) if kind == SIMULATED]
    if simulated:
        found.append(
            f"Agreement is with SIMULATED raters ({', '.join(simulated)}): an offline rater model with a set "
            "error rate, not clinicians. These numbers test the pipeline, not the judge."
        )
    if len(labels.raters) < 2:
        found.append(
            "Rater vs rater: fewer than two raters, so there is no ceiling to compare the judge with; have "
            "two or more raters rate the same page."
        )
    if not drift_table:
        found.append(
            "Self-consistency: no judge was run as two samples (other params or epochs). Re-judge with "
            "`threadmed judge rerun RUN_DIR --judge MODEL --temperature 0.7 --epoch 1 --out DIR` and pass "
            "both runs to measure its drift."
        )
    found.append(POSITION_NOTE)
    return found


def compute_agreement(labels: Labels, judges: list[Judge], settings: AgreementSettings) -> dict[str, Any]:
    """agreement.json's content. Pure: the numbers depend only on the inputs and the settings."""
    simulated = SIMULATED in labels.rater_kinds
    context = Context(
        labels, consensus(labels), "consensus" + (" (simulated)" if simulated else ""), settings
    )
    judge_table, confusion = judge_rows(context, judges)
    by_grade, correlation = length_rows(context, judges)
    drift_table = drift_rows(context, judges)
    return {
        "sample": labels.sample,
        "n_items": len(labels.keys),
        "n_rated_items": int((~np.isnan(context.consensus)).sum()),
        "raters": [
            {
                "rater": rater,
                "kind": kind,
                "label": labels.rater_label(i),
                "n": int((~np.isnan(labels.grades[i])).sum()),
            }
            for i, (rater, kind) in enumerate(zip(labels.raters, labels.rater_kinds, strict=True))
        ],
        "simulated_raters": simulated,
        "consensus": "per item, the median of its raters' grades; of an even count, the lower middle grade",
        "judges": [
            {
                "label": j.label,
                **j.identity,
                "run_id": j.run_id,
                "run_dir": j.run_dir,
                "n_graded": int((~np.isnan(j.grades)).sum()),
            }
            for j in judges
        ],
        "tables": {
            "judge_vs_raters": judge_table,
            "confusion": confusion,
            "rater_vs_rater": rater_rows(context),
            "by_group": group_rows(context, judges),
            "paper_metrics": paper_metric_rows(context, judges),
            "length_check": by_grade,
            "length_correlation": correlation,
            "drift": drift_table,
        },
        "notes": notes(labels, drift_table),
        "bootstrap": {**settings.model_dump(), "method": "percentile, resampling items"},
    }
