"""How far ThReadMed judges agree with clinicians, and clinicians with each other, on a labels sample.

Reads LABELS/{sample.json, items.parquet, ratings.parquet} (contracts LABEL_ITEMS, RATINGS) and, of each run
folder given (the sampled run and runs re-judged from it), manifest.json, responses.parquet and
judgments.parquet. Items are matched by (model, condition, thread_id, turn), and a run whose answer (response
call_key) to a sampled item differs from the sampled run's is refused: it graded other answers. Each run is
compared with the raters apart, named by model, rubric version, params and epoch; runs of one judge (model
and rubric) at other params or epochs are its samples, whose differences are its drift. The statistics are
tasks/evals/agreement.py's (a statistic the data do not define is null with its reason in a `_undefined`
column, shown by tasks/report/tables.py format_statistic); the paper's metrics are metrics.py's. Output
folder (default LABELS/agreement):

    agreement.json      every table's rows, the judges, raters, notes and settings; null where undefined
    agreement.md        the tables, with their notes
    <table>.csv         one per table; fig_agreement.png is drawn from two of them
"""

import json
from collections import defaultdict
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from matplotlib.figure import Figure
from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.benchmarks.threadmed import metrics as m
from tasks.benchmarks.threadmed.agreement_settings import AgreementSettings
from tasks.benchmarks.threadmed.contracts import JUDGMENTS, LABEL_ITEMS, RATINGS, RESPONSES
from tasks.benchmarks.threadmed.run_data import check_run_folder
from tasks.core.preflight import UserError
from tasks.core.safe_text import markdown_text, read_csv_rows, write_csv_rows
from tasks.data.contracts import Contract
from tasks.evals.agreement import PairAgreement, drift, ordinal_alpha, pair_agreement
from tasks.report.figures import plain_text
from tasks.report.panel import consensus_grades
from tasks.report.runs import check_each_run_once, read_rows, read_run_id
from tasks.report.stats import (
    MIN_INTERVAL_ITEMS,
    BootstrapCI,
    bootstrap_mean,
    seeded_rng,
    spearman,
    statistic_columns,
)
from tasks.report.tables import Table, format_statistic, legend, short_keys, table_markdown

SCALE = (m.WRONG, m.PARTIAL, m.CORRECT)
ITEM_KEY = ("model", "condition", "thread_id", "turn")
STATISTICS = ("exact", "kappa", "kappa_linear", "kappa_quadratic", "alpha_ordinal")
SIMULATED = "simulated"
POSITION_NOTE = (
    "Position check: not applicable. It tests whether a pairwise judge prefers the answer shown first; "
    "ThReadMed's rubric grades one answer at a time, so there is no position to swap."
)


class Labels(NamedTuple):
    """The sampled items (columns as arrays, one entry per item), raters' grades (raters x items, NaN where a
    rater gave none) and sample.json."""

    items: dict[str, np.ndarray]
    raters: list[str]
    rater_kinds: list[str]
    grades: np.ndarray
    sample: dict[str, Any]

    @property
    def keys(self) -> list[tuple]:
        return list(zip(*(self.items[name].tolist() for name in ITEM_KEY), strict=True))

    def rater_label(self, index: int) -> str:
        return rater_label(self.raters[index], self.rater_kinds[index])


class Judge(NamedTuple):
    """One run's judge: its identity, its grades of the items (NaN: unscored) and of every answer it graded
    (item key -> (response call_key, score)), which drift compares across epochs."""

    label: str
    identity: dict[str, Any]
    run_id: str
    run_dir: str
    grades: np.ndarray
    graded: dict[tuple, tuple[str | None, float]]


def rater_label(rater: str, kind: str) -> str:
    return f"{rater} (simulated)" if kind == SIMULATED else rater


# --- loading -------------------------------------------------------------------------------------------


def load_labels(labels_dir: Path) -> Labels:
    """A labels folder's items, ratings and sample; UserError when it is not one or holds no ratings."""
    for name, fix in (
        ("sample.json", "run `threadmed labels sample RUN_DIR --out DIR` first"),
        ("items.parquet", "run `threadmed labels sample RUN_DIR --out DIR` first"),
        ("ratings.parquet", f"run `threadmed labels import {labels_dir} CSV...` first"),
    ):
        if not (labels_dir / name).is_file():
            raise UserError(f"{labels_dir} has no {name}: {fix}", "--labels")
    items = read_rows(labels_dir / "items.parquet", LABEL_ITEMS)
    items.sort(key=lambda item: item["position"])
    ratings = read_rows(labels_dir / "ratings.parquet", RATINGS)
    raters = sorted({row["rater"] for row in ratings})
    kinds = {row["rater"]: row["rater_kind"] for row in ratings}
    index = {item["item_id"]: i for i, item in enumerate(items)}
    unknown = next((row["item_id"] for row in ratings if row["item_id"] not in index), None)
    if unknown is not None:
        raise UserError(
            f"{labels_dir / 'ratings.parquet'} rates item {unknown}, which items.parquet does not hold: "
            f"import the ratings again with `threadmed labels import {labels_dir} CSV... --replace`",
            "--labels",
        )
    grades = np.full((len(raters), len(items)), np.nan)
    for row in ratings:
        grades[raters.index(row["rater"]), index[row["item_id"]]] = row["grade"]
    return Labels(
        items={name: np.array([item[name] for item in items]) for name in LABEL_ITEMS.columns},
        raters=raters,
        rater_kinds=[kinds[rater] for rater in raters],
        grades=grades,
        sample=json.loads((labels_dir / "sample.json").read_text()),
    )


def read_rows_of(run_dir: Path, contract: Contract) -> list[dict[str, Any]]:
    return read_rows(run_dir / f"{contract.name}.parquet", contract)


def _answers(run_dir: Path) -> dict[tuple, str | None]:
    """Item key -> the response's call_key, for every answer of the run."""
    return {tuple(row[k] for k in ITEM_KEY): row["call_key"] for row in read_rows_of(run_dir, RESPONSES)}


def _identity(run_dir: Path, judgments: list[dict[str, Any]]) -> dict[str, Any]:
    """model, rubric version(s) graded with, params as sent and epoch (absent: 0) of a run's judge."""
    manifest = json.loads((run_dir / "manifest.json").read_text())
    judge = manifest.get("config", {}).get("judge") or manifest.get("judge") or {}
    sent = next(iter(manifest.get("sent", {}).get("judge", {}).values()), judge)
    versions = sorted({row["rubric_version"] for row in judgments if row["rubric_version"]})
    return {
        "model": judge.get("model"),
        "rubric_version": ", ".join(versions) or str(judge.get("rubric") or "rubric not recorded"),
        "params": sent.get("params") or {},
        "epoch": int(judge.get("epoch") or 0),
    }


def judge_label(identity: dict[str, Any]) -> str:
    """'model (rubric, temperature=0, epoch 1)': what makes a run's grades what they are."""
    parts = [identity["rubric_version"], *(f"{k}={v}" for k, v in sorted(identity["params"].items()))]
    return f"{identity['model']} ({', '.join(parts)}, epoch {identity['epoch']})"


def judge_name(identity: dict[str, Any]) -> str:
    """'model (rubric)': one judge, whose runs at other params or epochs are its samples (as in a panel)."""
    return f"{identity['model']} ({identity['rubric_version']})"


def sample_name(identity: dict[str, Any]) -> str:
    """'temperature=0.7 epoch 1': which sample of its judge a run is."""
    return " ".join(
        [*(f"{k}={v}" for k, v in sorted(identity["params"].items())), f"epoch {identity['epoch']}"]
    )


def sampled_answers(labels: Labels, run_dirs: list[Path]) -> dict[tuple, str | None]:
    """The sampled run's answers: from the RUN_DIR of the sample's run id, else sample.json's run folder."""
    run_id = labels.sample["run_id"]
    for run_dir in run_dirs:
        if read_run_id(run_dir) == run_id:
            return _answers(run_dir)
    recorded = Path(labels.sample["run_dir"])
    if (recorded / "responses.parquet").is_file():
        return _answers(recorded)
    raise UserError(
        f"the sampled run {run_id} is not among the run folders and {recorded} is gone: pass its folder",
        "RUN_DIRS...",
    )


def check_sampled_answers(
    run_dir: Path, answers: dict[tuple, str | None], reference: dict[tuple, str | None], labels: Labels
) -> None:
    """Raise UserError unless the run holds the sampled run's answer to every sampled item."""
    for item_id, key in zip(labels.items["item_id"].tolist(), labels.keys, strict=True):
        if key not in answers or answers[key] != reference.get(key):
            what = "has no answer to" if key not in answers else "holds another answer to"
            model, condition, thread_id, turn = key
            raise UserError(
                f"{run_dir} {what} sampled item {item_id} ({model}, {condition}, {thread_id}, turn {turn}) "
                f"than the sampled run {labels.sample['run_id']}: pass that run or runs re-judged from it",
                "RUN_DIRS...",
            )


def load_judges(labels: Labels, run_dirs: list[Path]) -> list[Judge]:
    """Each run folder's judge, with its grades of the sampled items; UserError for a run of other answers."""
    for run_dir in run_dirs:
        check_run_folder(run_dir)
    reference = sampled_answers(labels, run_dirs)
    judges = []
    for run_dir in run_dirs:
        answers = _answers(run_dir)
        check_sampled_answers(run_dir, answers, reference, labels)
        judgments = read_rows_of(run_dir, JUDGMENTS)
        graded = {
            key: (answers.get(key), row["score"])
            for row in judgments
            if row["parse_status"] == "ok" and row["score"] is not None
            for key in [tuple(row[k] for k in ITEM_KEY)]
        }
        identity = _identity(run_dir, judgments)
        grades = np.array([graded[key][1] if key in graded else np.nan for key in labels.keys])
        judges.append(
            Judge(judge_label(identity), identity, read_run_id(run_dir), str(run_dir), grades, graded)
        )
    labels_seen = [judge.label for judge in judges]
    return [
        judge._replace(label=f"{judge.label} [run {judge.run_id}]")
        if labels_seen.count(judge.label) > 1
        else judge
        for judge in judges
    ]


# --- statistics ----------------------------------------------------------------------------------------


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


# --- tables, figure and files --------------------------------------------------------------------------


def _number(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _metric_with_ci(value: float | None, low: float | None, high: float | None) -> str:
    """A paper metric on the 0-100 scale: '62.0 [50.0, 73.0]'; the value alone without an interval; a dash
    when undefined (the table's caption says so)."""
    if value is None:
        return "—"
    return f"{value:.1f}" if low is None or high is None else f"{value:.1f} [{low:.1f}, {high:.1f}]"


AGREEMENT_HEADERS = ["n", "Exact", "Kappa", "Linear kappa", "Quadratic kappa", "Ordinal alpha"]


def _agreement_cells(row: dict[str, Any], statistics: tuple[str, ...] = STATISTICS) -> list[str]:
    return [str(row["n"]), *(format_statistic(row, name) for name in statistics)]


def build_tables(agreement: dict[str, Any]) -> list[Table]:
    """agreement.json's tables as Tables for agreement.md (the terminal shows `summary_table`)."""
    tables, level = agreement["tables"], f"{100 * agreement['bootstrap']['level']:g}%"
    ci = (
        f"estimate [{level} bootstrap CI over items, {agreement['bootstrap']['n_resamples']} resamples]; no "
        f"interval from fewer than {MIN_INTERVAL_ITEMS} items; 'undefined' with the reason where the data "
        "define no value"
    )
    grades = [_number(grade, 1) for grade in SCALE]
    consensus = "consensus (simulated)" if agreement["simulated_raters"] else "consensus"
    confusion = defaultdict(dict)
    for row in tables["confusion"]:
        if row["versus"] == consensus:
            confusion[(row["judge"], row["judge_grade"])][row["human_grade"]] = row["count"]
    return [
        Table(
            "judge_vs_raters",
            "Judge vs raters",
            ["Judge", "Versus", *AGREEMENT_HEADERS],
            [[r["judge"], r["versus"], *_agreement_cells(r)] for r in tables["judge_vs_raters"]],
            f"Each cell: {ci}. Kappa weights disagreements 1 (unweighted), by distance (linear) or squared "
            "distance (quadratic) on the 0 / 0.5 / 1 scale; alpha treats the grades as ordinal.",
        ),
        Table(
            "rater_vs_rater",
            "Rater vs rater: the ceiling a judge is compared with",
            ["Rater", "Versus", *AGREEMENT_HEADERS],
            [[r["first"], r["second"], *_agreement_cells(r)] for r in tables["rater_vs_rater"]],
            "On the items both rated; 'all raters': ordinal alpha over every rater, on the items rated twice "
            "or more.",
        ),
        Table(
            "confusion",
            f"Confusion: judge grade (rows) vs {consensus} grade (columns)",
            ["Judge", "Judge grade", *(f"human {grade}" for grade in grades)],
            [
                [judge, _number(grade, 1), *(str(counts.get(g, 0)) for g in SCALE)]
                for (judge, grade), counts in confusion.items()
            ],
            "Counts of items.",
        ),
        Table(
            "by_group",
            f"Judge vs {consensus} by turn group, model and answer length",
            ["Judge", "Breakdown", "Group", "n", "Exact", "Quadratic kappa", "Ordinal alpha"],
            [
                [
                    r["judge"],
                    r["breakdown"],
                    r["group"],
                    *_agreement_cells(r, ("exact", "kappa_quadratic", "alpha_ordinal")),
                ]
                for r in tables["by_group"]
            ],
            f"Each cell: {ci}. Answer length: terciles of the sampled answers' words.",
        ),
        Table(
            "paper_metrics",
            f"The paper's metrics on the judge's grades and on the human {consensus}, same items",
            ["Judge", "Model", "Condition", "Metric", "n", "Judge", "Humans", "Judge - humans"],
            [
                [
                    r["judge"],
                    r["model"],
                    r["condition"],
                    r["metric"],
                    str(r["n"]),
                    _metric_with_ci(r["judge_value"], r["judge_low"], r["judge_high"]),
                    _metric_with_ci(r["human_value"], r["human_low"], r["human_high"]),
                    _number(r["difference"], 1),
                ]
                for r in tables["paper_metrics"]
            ],
            "0-100. n: items (mean), conversations with >= 2 rated turns (CCS), consecutive pairs after a "
            "wrong turn (EPR). Degradation: mean at T0 minus mean over later turns. A dash: undefined.",
        ),
        Table(
            "length_check",
            f"Length check: the judge's grade of shorter and longer answers at equal {consensus} grade",
            [
                "Judge",
                "Human grade",
                "Median words",
                "n short",
                "Judge short",
                "n long",
                "Judge long",
                "Long - short",
            ],
            [
                [
                    r["judge"],
                    _number(r["human_grade"], 1),
                    _number(r["median_words"], 0),
                    str(r["n_short"]),
                    _number(r["judge_short"]),
                    str(r["n_long"]),
                    _number(r["judge_long"]),
                    _number(r["difference"]),
                ]
                for r in tables["length_check"]
            ],
            "Short: at most the median words of the answers with that consensus grade; long: more. "
            "Spearman's r of (judge - consensus) against words: "
            + "; ".join(
                f"{r['judge']}: {_number(r['spearman_r'])} (p {_number(r['p'], 3)}, n {r['n']})"
                for r in tables["length_correlation"]
            ),
        ),
        Table(
            "drift",
            "Self-consistency: how often a judge changes its grade when run again",
            ["Judge", "Samples", "Runs", "n", "Drift"],
            [
                [r["judge"], r["samples"], r["runs"], str(r["n"]), format_statistic(r, "drift")]
                for r in tables["drift"]
            ],
            "Drift: share of the answers graded in every sample of the judge (its runs at other params or "
            "epochs) whose grade is not the same in all of them.",
        ),
    ]


def summary_table(agreement: dict[str, Any]) -> Table:
    """What the terminal shows: each judge against the consensus, and the raters against each other, with
    short keys for the graders (named in the caption) and the unweighted and quadratic kappa and the alpha;
    agreement.md has every statistic."""
    tables = agreement["tables"]
    judges = [r for r in tables["judge_vs_raters"] if r["versus_kind"] == "consensus"]
    keys = short_keys([r["judge"] for r in judges], "J") | short_keys(
        [name for r in tables["rater_vs_rater"] if r["second"] for name in (r["first"], r["second"])], "R"
    )
    statistics = ("exact", "kappa", "kappa_quadratic", "alpha_ordinal")
    headers = ["n", "Exact", "Kappa", "Quadratic kappa", "Ordinal alpha"]
    rows = [[keys[r["judge"]], r["versus"], *_agreement_cells(r, statistics)] for r in judges]
    rows += [
        [
            keys.get(r["first"], r["first"]),
            keys[r["second"]] if r["second"] else "",
            *_agreement_cells(r, statistics),
        ]
        for r in tables["rater_vs_rater"]
    ]
    caption = (
        f"estimate [{100 * agreement['bootstrap']['level']:g}% bootstrap CI over items; none from fewer than "
        f"{MIN_INTERVAL_ITEMS} items]. {legend(keys)}"
    )
    return Table("agreement", "Judge agreement", ["Grader", "Versus", *headers], rows, caption,
                 right_aligned=tuple(headers))  # fmt: skip


def render_markdown(agreement: dict[str, Any]) -> str:
    judges = "; ".join(f"{j['label']}: run {j['run_id']}" for j in agreement["judges"])
    raters = ", ".join(r["label"] for r in agreement["raters"])
    head = [
        "# Judge agreement",
        "",
        markdown_text(
            f"{agreement['n_items']} sampled answers of run {agreement['sample']['run_id']}, "
            f"{agreement['n_rated_items']} rated; raters: {raters}. Judges: {judges}. "
            f"Consensus: {agreement['consensus']}."
        ),
        "",
        *(f"> **Note:** {markdown_text(note)}\n" for note in agreement["notes"]),
    ]
    body = [table_markdown(table, None) for table in build_tables(agreement)]
    return "\n".join([*head, *body, "![Agreement](fig_agreement.png)", ""])


def plot_agreement(judge_csv: Path, rater_csv: Path, out_path: Path) -> None:
    """Quadratic kappa and ordinal alpha with their intervals: each judge against each rater and the
    consensus, then each rater pair (the ceiling), one row each; an undefined value is written 'undefined'
    on its row, never drawn as a point. Drawn from the stored CSVs only."""
    judge_rows, rater_rows = read_csv_rows(judge_csv), read_csv_rows(rater_csv)
    rows = [(f"{r['judge']}\nvs {r['versus']}", r, "tab:blue") for r in judge_rows]
    rows += [(f"{r['first']}\nvs {r['second'] or 'each other'}", r, "tab:gray") for r in rater_rows]
    fig = Figure(figsize=(10, 1.2 + 0.55 * len(rows)), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    panels = (("kappa_quadratic", "Quadratic kappa"), ("alpha_ordinal", "Ordinal alpha"))
    for ax, (name, title) in zip(axes, panels, strict=True):
        for y, (_, row, color) in enumerate(rows):
            if not row[name]:
                ax.text(0, y, "undefined", ha="center", va="center", color=color, fontsize="small")
                continue
            value = float(row[name])
            if row[f"{name}_low"]:
                low, high = float(row[f"{name}_low"]), float(row[f"{name}_high"])
                ax.errorbar(value, y, xerr=[[value - low], [high - value]], fmt="o", color=color, capsize=3)
            else:
                ax.plot(value, y, "o", color=color)
        ax.axvline(0, color="black", linewidth=0.6)
        ax.set(title=title, xlim=(-1, 1.05))
        ax.grid(alpha=0.3)
    axes[0].set_yticks(range(len(rows)), [plain_text(label) for label, _, _ in rows], fontsize="small")
    axes[0].invert_yaxis()
    fig.suptitle("Judge agreement (blue) and rater agreement, the ceiling (gray)")
    fig.savefig(out_path, dpi=110)


def write_agreement(agreement: dict[str, Any], out: Path) -> Path:
    """agreement.json, a CSV per table (text cells neutralised against formulas: tasks/core/safe_text.py),
    fig_agreement.png (from two CSVs) and agreement.md under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    # allow_nan=False: an undefined value must be null, and a NaN reaching here is a bug to surface.
    (out / "agreement.json").write_text(json.dumps(agreement, indent=2, allow_nan=False))
    paths = {
        name: write_csv_rows(out / f"{name}.csv", columns, agreement["tables"][name])
        for name, columns in TABLE_COLUMNS.items()
    }
    plot_agreement(paths["judge_vs_raters"], paths["rater_vs_rater"], out / "fig_agreement.png")
    (out / "agreement.md").write_text(render_markdown(agreement))
    return out


def default_out_dir(labels_dir: Path) -> Path:
    return labels_dir / "agreement"


def check_agreement_inputs(run_dirs: list[Path], labels_dir: Path) -> None:
    """Raise UserError unless LABELS is a rated labels folder and every run folder graded its sampled answers
    (each run given once): what the command checks before it starts the flow."""
    labels = load_labels(labels_dir)
    for run_dir in run_dirs:
        check_run_folder(run_dir)
    check_each_run_once([(read_run_id(run_dir), run_dir) for run_dir in run_dirs])
    load_judges(labels, run_dirs)


@task(name="measure-judge-agreement", cache_policy=NO_CACHE)
def measure_agreement(
    run_dirs: list[str], labels_dir: str, out_dir: str | None, settings: AgreementSettings
) -> str:
    """Labels folder + run folders -> out_dir (default LABELS/agreement) with agreement.json, agreement.md,
    a CSV per table and fig_agreement.png; returns the folder."""
    labels = load_labels(Path(labels_dir))
    judges = load_judges(labels, [Path(run_dir) for run_dir in run_dirs])
    out = Path(out_dir) if out_dir else default_out_dir(Path(labels_dir))
    return str(write_agreement(compute_agreement(labels, judges, settings), out))
