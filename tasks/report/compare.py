"""Two models side by side on the same items, for any benchmark: paired differences with bootstrap intervals
and a paired test, the items where they differ most, and the refusal of runs over different items.

A benchmark hands over its scores as `ItemScore` rows (tasks/benchmarks/<name>/compare.py); everything
below is pure except `write_comparison`. Pairs are the items both models scored: an item one of them left
unscored (a failed call, an unparseable grade) is in neither mean nor test, and `n` says how many pairs are.

A score is compared as the benchmark's report computes it. Most are means over items (a judge's grade,
F1): the difference of two means is the mean of the paired differences, tested with a paired rank test. A
STATISTIC (the consultation's composite and stage scores) is a function of several metrics' means, not a
mean of per-item values: each model's value is recomputed from the same resample of cases (a paired
bootstrap, as Koehn (2004) does for corpus BLEU), and its test is that bootstrap's.
"""

from collections.abc import Callable, Sequence
from itertools import combinations, product
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlencode

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tasks.core.preflight import UserError
from tasks.core.safe_text import page_text, write_csv_table
from tasks.report.compare_figure import CAPTION, FIGURE_ID, plot_differences
from tasks.report.coverage import Planned, RunCoverage, epoch_groups, missing_items
from tasks.report.files import write_stats_table
from tasks.report.html import browser_parts, data_parts, figures_html, render_page
from tasks.report.paired_tests import (
    MCNEMAR,
    PAIRED_BOOTSTRAP,
    WILCOXON,
    mcnemar_test,
    paired_statistic,
    wilcoxon_test,
)
from tasks.report.runs import model_name
from tasks.report.settings import CompareSettings
from tasks.report.stats import BootstrapCI, bootstrap_mean, seeded_rng
from tasks.report.tables import Table, format_number, table_html, table_markdown

GRADED, PASS_FAIL, STATISTIC = "graded", "pass_fail", "statistic"
ALL_ITEMS = "all"
# The items listed per pair of models and score, where their scores differ most.
MAX_DIFFERING_ITEMS = 10


class Metric(NamedTuple):
    """A headline score of a benchmark: its name, and its kind. GRADED or PASS_FAIL: each item has its score
    (ItemScore.metric is the name), a model's score is their mean. STATISTIC: a model's score over a set of
    items is `of_means` of its `parts` means (the ItemScore metrics named there, each averaged over the items
    where it is defined; an array of means, NaN where undefined, last axis in `parts` order -> the scores,
    NaN where undefined); one item's score is the same function of its own values."""

    name: str
    kind: str
    parts: tuple[str, ...] = ()
    of_means: Callable[[np.ndarray], np.ndarray] | None = None


class ItemScore(NamedTuple):
    """One model's score of one item on one metric. `stratum` separates items never compared with each other
    (ThReadMed's conditions); `group` is the turn group or stage an item belongs to ('' for none); `cluster`
    is what the bootstrap resamples (a thread, a case: its items are correlated); `locator` is the item's
    address in the benchmark's browser (a URL query). A score None is unscored (the item is in no pair), but
    for a STATISTIC's part: undefined on that item (the item is paired; the part's mean leaves it out)."""

    metric: str
    stratum: str
    group: str
    item: str
    cluster: str
    model: str
    score: float | None
    locator: str


class Comparison(NamedTuple):
    """What a benchmark gives for comparing its runs: its metrics, models, scores, and its browser as page
    parts (tasks/report/html.py), whose script shows two models side by side at
    `#compare?a=A&b=B&<locator>`."""

    title: str
    metrics: list[Metric]
    models: list[str]
    scores: list[ItemScore]
    page: dict[str, str]


def case_comparison(
    title: str, metrics: list[Metric], models: list[str], scores: list[ItemScore], browser: dict, folder: Path
) -> Comparison:
    """The comparison of a benchmark of cases, whose page is its case browser (`browser` data, the browser
    files in `folder`)."""
    return Comparison(
        title, metrics, models, scores, {**data_parts(browser, packed=False), **browser_parts(folder)}
    )


class ComparisonSource(NamedTuple):
    """How a benchmark's runs are compared: the check that a folder is a finished run; the run table (a
    file in the folder) whose `item_column` names the items a run covers (one called `item_noun`, e.g.
    'thread') and whose `model` column its models; and the loading of runs into a Comparison.

    The same tables say whether a run's rows hold every item it planned (`coverage`): its rows' group is in
    `group_column`, the groups its config plans are `planned_groups(config)`, its manifest's `planned_field`
    counts the items it planned, and `graded_tables` must hold every item as the run table does."""

    check_run_folder: Callable[[Path], None]
    run_table: str
    load: Callable[[list[Path]], Comparison]
    item_column: str = "case_id"
    item_noun: str = "case"
    group_column: str = "epoch"
    planned_groups: Callable[[dict[str, Any]], list[str]] = epoch_groups
    planned_field: str = "cases"
    graded_tables: tuple[str, ...] = ()

    def run_items(self, run_dir: Path) -> set[str]:
        """The items a run covers (threads, cases)."""
        return set(self._column(run_dir, self.item_column))

    def run_models(self, run_dir: Path) -> list[str]:
        """The models a run has rows of, in the order of its rows."""
        return list(dict.fromkeys(self._column(run_dir, "model")))

    def _column(self, run_dir: Path, name: str) -> list[str]:
        return pq.read_table(run_dir / self.run_table, columns=[name]).column(0).to_pylist()

    def coverage(self, run_dir: Path, manifest: dict[str, Any]) -> RunCoverage:
        """What the run's rows lack of the items its manifest planned, per model of its config, in the run
        table and each graded table (a missing table holds no row); unverified when the manifest records no
        planned count (it was written before runs recorded one)."""
        if self.planned_field not in manifest:
            noun = self.item_noun
            return RunCoverage({}, f"its manifest records no planned {noun} count (written before runs did)")
        config = manifest.get("config", {})
        planned = Planned(
            models=[model_name(spec) for spec in config.get("models", [])],
            group_label=self.group_column,
            groups=self.planned_groups(config),
            count=manifest[self.planned_field],
        )
        missing: dict[str, list[str]] = {}
        for table in (self.run_table, *self.graded_tables):
            held = self._held_items(run_dir / table)
            for model, lines in missing_items(planned, held, f"{self.item_noun}s in {table}").items():
                missing.setdefault(model, []).extend(lines)
        return RunCoverage(missing)

    def _held_items(self, path: Path) -> dict[tuple[str, str], set[str]]:
        """(model, group as text) -> the items the table has rows of; empty when there is no table."""
        if not path.is_file():
            return {}
        rows = pq.read_table(path, columns=["model", self.group_column, self.item_column]).to_pydict()
        held: dict[tuple[str, str], set[str]] = {}
        for model, group, item in zip(*rows.values(), strict=True):
            held.setdefault((model, str(group)), set()).add(item)
        return held


# The paired test of each kind of score, by name.
TEST_NAMES = {GRADED: WILCOXON, PASS_FAIL: MCNEMAR, STATISTIC: PAIRED_BOOTSTRAP}


def check_same_items(items_by_run: Sequence[tuple[str, set[str]]], noun: str) -> None:
    """Raise UserError, one line, unless every run covers the items of the first: 'run B lacks 3 threads: t1,
    t2, t3' (or has items the first lacks); `noun` names one item. Runs of different samples have no pairs
    to compare."""
    first, expected = items_by_run[0]
    for label, items in items_by_run[1:]:
        for holder, missing in ((label, expected - items), (first, items - expected)):
            if missing:
                count = f"{len(missing)} {noun}" + ("" if len(missing) == 1 else "s")
                raise UserError(
                    f"run {holder} lacks {count}: {', '.join(sorted(missing))}; compare runs over the same "
                    f"{noun}s",
                    "RUN_DIRS...",
                )


PAIRED_TESTS = {GRADED: wilcoxon_test, PASS_FAIL: mcnemar_test}


class Pairs(NamedTuple):
    """Items both models scored, in one order: their scores, clusters and locators."""

    item: list[str]
    cluster: np.ndarray
    a: np.ndarray
    b: np.ndarray
    locator: list[str]


def paired(rows_a: Sequence[ItemScore], rows_b: Sequence[ItemScore]) -> Pairs:
    """The items both rows score (in the order of `rows_a`)."""
    scores_b = {row.item: row.score for row in rows_b if row.score is not None}
    both = [row for row in rows_a if row.score is not None and row.item in scores_b]
    return Pairs(
        item=[row.item for row in both],
        cluster=np.array([row.cluster for row in both], dtype=object),
        a=np.array([row.score for row in both], dtype=float),
        b=np.array([scores_b[row.item] for row in both], dtype=float),
        locator=[row.locator for row in both],
    )


def paired_difference(pairs: Pairs, rng: np.random.Generator, settings: CompareSettings) -> BootstrapCI:
    """Mean of a - b with a percentile interval that resamples whole clusters, each item's pair kept."""
    return bootstrap_mean(
        pairs.a - pairs.b,
        rng,
        clusters=pairs.cluster,
        n_resamples=settings.n_resamples,
        level=settings.level,
    )


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if len(values) else None


class PartPairs(NamedTuple):
    """Items both models have rows of (in the order of the first's), each with its values of a STATISTIC's
    parts (items x parts, NaN where undefined), its cluster and its locator."""

    item: list[str]
    cluster: np.ndarray
    a: np.ndarray
    b: np.ndarray
    locator: list[str]


def paired_parts(rows_a: Sequence[ItemScore], rows_b: Sequence[ItemScore], parts: Sequence[str]) -> PartPairs:
    """The items both models have part rows of, with their parts' values."""

    def values(rows: Sequence[ItemScore]) -> tuple[dict[str, ItemScore], dict[str, np.ndarray]]:
        first: dict[str, ItemScore] = {}
        table: dict[str, np.ndarray] = {}
        for row in rows:
            if row.metric in parts:
                first.setdefault(row.item, row)
                value = np.nan if row.score is None else row.score
                table.setdefault(row.item, np.full(len(parts), np.nan))[parts.index(row.metric)] = value
        return first, table

    first, values_a = values(rows_a)
    _, values_b = values(rows_b)
    items = [item for item in first if item in values_b]
    return PartPairs(
        item=items,
        cluster=np.array([first[item].cluster for item in items], dtype=object),
        a=np.array([values_a[item] for item in items], dtype=float).reshape(len(items), len(parts)),
        b=np.array([values_b[item] for item in items], dtype=float).reshape(len(items), len(parts)),
        locator=[first[item].locator for item in items],
    )


def _groups(rows: Sequence[ItemScore]) -> list[str]:
    """ALL_ITEMS, then each group in order of first appearance."""
    return [ALL_ITEMS, *dict.fromkeys(row.group for row in rows if row.group)]


def _compared(
    metric: Metric,
    rows_a: Sequence[ItemScore],
    rows_b: Sequence[ItemScore],
    rng: np.random.Generator,
    settings: CompareSettings,
) -> dict[str, Any]:
    """A difference row's numbers: the pairs, both models' scores over them, A - B with its interval, the
    metric's paired test."""
    if metric.kind == STATISTIC:
        assert metric.of_means is not None
        pairs = paired_parts(rows_a, rows_b, metric.parts)
        result = paired_statistic(pairs.a, pairs.b, pairs.cluster, metric.of_means, rng, settings)
        n, mean_a, mean_b = len(pairs.item), result.value_a, result.value_b
        ci, test = result.interval, result.test
    else:
        item_pairs = paired(rows_a, rows_b)
        n, mean_a, mean_b = len(item_pairs.a), _mean(item_pairs.a), _mean(item_pairs.b)
        ci = paired_difference(item_pairs, rng, settings)
        test = PAIRED_TESTS[metric.kind](item_pairs.a, item_pairs.b) if n else None
    return {
        "n_pairs": n,
        "mean_a": mean_a,
        "mean_b": mean_b,
        "difference": ci.estimate,
        "ci_low": ci.low,
        "ci_high": ci.high,
        "test": TEST_NAMES[metric.kind],
        "statistic": None if test is None else test.statistic,
        "p_value": None if test is None else test.p_value,
    }


def _names(metric: Metric) -> tuple[str, ...]:
    """The ItemScore metrics a metric is computed from: its parts, or itself."""
    return metric.parts or (metric.name,)


def difference_rows(
    comparison: Comparison, models: Sequence[str], settings: CompareSettings
) -> list[dict[str, Any]]:
    """Per pair of models, metric, stratum and group (all items first): both models' scores over the pairs
    (means, or a STATISTIC's value), the difference a - b with its paired bootstrap interval, and the
    metric's paired test."""
    rows = []
    by_key: dict[tuple[str, str, str], list[ItemScore]] = {}
    for score in comparison.scores:
        by_key.setdefault((score.metric, score.stratum, score.model), []).append(score)
    strata = list(dict.fromkeys(score.stratum for score in comparison.scores))
    for (model_a, model_b), metric, stratum in product(combinations(models, 2), comparison.metrics, strata):
        rows_a = [row for name in _names(metric) for row in by_key.get((name, stratum, model_a), [])]
        rows_b = [row for name in _names(metric) for row in by_key.get((name, stratum, model_b), [])]
        for group in _groups(rows_a) if rows_a and rows_b else []:
            chosen = [row for row in rows_a if group in (ALL_ITEMS, row.group)]
            labels = ("compare", model_a, model_b, metric.name, stratum, group)
            rows.append(
                {
                    "model_a": model_a,
                    "model_b": model_b,
                    "metric": metric.name,
                    "stratum": stratum,
                    "group": group,
                    **_compared(metric, chosen, rows_b, seeded_rng(settings.seed, *labels), settings),
                }
            )
    return rows


def item_pairs(metric: Metric, rows_a: Sequence[ItemScore], rows_b: Sequence[ItemScore]) -> Pairs:
    """The items both models scored, each with its score on `metric` (a STATISTIC's: of the item's own part
    values, NaN where undefined)."""
    if metric.kind != STATISTIC:
        return paired(rows_a, rows_b)
    assert metric.of_means is not None
    parts = paired_parts(rows_a, rows_b, metric.parts)
    return Pairs(parts.item, parts.cluster, metric.of_means(parts.a), metric.of_means(parts.b), parts.locator)


def differing_item_rows(
    comparison: Comparison, models: Sequence[str], limit: int = MAX_DIFFERING_ITEMS
) -> list[dict[str, Any]]:
    """Per pair of models and stratum, the `limit` items whose primary scores (the first metric's) differ
    most (in item order among equal differences), each with the browser fragment that shows the two models'
    answers side by side."""
    rows = []
    strata = list(dict.fromkeys(score.stratum for score in comparison.scores))
    metric = comparison.metrics[0]
    for (model_a, model_b), stratum in product(combinations(models, 2), strata):
        pick = [s for s in comparison.scores if s.metric in _names(metric) and s.stratum == stratum]
        pairs = item_pairs(
            metric, [s for s in pick if s.model == model_a], [s for s in pick if s.model == model_b]
        )
        gap = np.abs(pairs.a - pairs.b)
        differ = np.flatnonzero(gap > 0)  # NaN (undefined on an item) is not listed
        rows.extend(
            {
                "model_a": model_a,
                "model_b": model_b,
                "metric": metric.name,
                "stratum": stratum,
                "item": pairs.item[i],
                "score_a": float(pairs.a[i]),
                "score_b": float(pairs.b[i]),
                "difference": float(pairs.a[i] - pairs.b[i]),
                "link": side_by_side_fragment(model_a, model_b, pairs.locator[i]),
            }
            for i in differ[np.argsort(-gap[differ], kind="stable")][:limit]
        )
    return rows


def item_scores(item: dict[str, str], scores: dict[str, float | None]) -> list[ItemScore]:
    """One item's ItemScore per metric: `item` holds the fields but metric and score; `scores` maps each
    metric to the item's score (None: unscored)."""
    return [ItemScore(metric=metric, score=score, **item) for metric, score in scores.items()]


def case_epoch_item(model: str, case_id: str, epoch: int) -> dict[str, str]:
    """The ItemScore fields of an item that is a case in one epoch (an interview, an episode): no stratum
    or group, resampled by case, shown side by side at `case=...&epoch=...`."""
    return {
        "stratum": "",
        "group": "",
        "item": f"{case_id} epoch {epoch}",
        "cluster": case_id,
        "model": model,
        "locator": urlencode({"case": case_id, "epoch": epoch}),
    }


def side_by_side_fragment(model_a: str, model_b: str, locator: str) -> str:
    """The browser's address of two models' answers to one item: '#compare?a=A&b=B&<locator>'."""
    return "#compare?" + urlencode({"a": model_a, "b": model_b}) + (f"&{locator}" if locator else "")


DIFFERENCES = pa.schema(
    [
        *((name, pa.string()) for name in ("model_a", "model_b", "metric", "stratum", "group")),
        ("n_pairs", pa.int64()),
        *((name, pa.float64()) for name in ("mean_a", "mean_b", "difference", "ci_low", "ci_high")),
        ("test", pa.string()),
        *((name, pa.float64()) for name in ("statistic", "p_value")),
    ]
)
DIFFERING_ITEMS = pa.schema(
    [
        *((name, pa.string()) for name in ("model_a", "model_b", "metric", "stratum", "item")),
        *((name, pa.float64()) for name in ("score_a", "score_b", "difference")),
        ("link", pa.string()),
    ]
)


def _format_p(p_value: float | None) -> str:
    if p_value is None:
        return "—"
    return "<0.001" if p_value < 0.001 else f"{p_value:.3f}"


def _format_difference(row: dict[str, Any]) -> str:
    difference = format_number(row["difference"], 3)
    if row["ci_low"] is None:
        return difference
    return f"{difference} [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"


def _pair_cells(row: dict[str, Any]) -> list[str]:
    return [row["model_a"], row["model_b"], row["metric"], row["stratum"] or "—"]


def differences_table(rows: Sequence[dict[str, Any]], level: float) -> Table:
    columns = ["A", "B", "score", "condition", "items", "n", "mean A", "mean B", "A − B [CI]", "test", "p"]
    return Table(
        key="compare-differences",
        title="Paired differences between models",
        columns=columns,
        rows=[
            [
                *_pair_cells(row),
                row["group"],
                str(row["n_pairs"]),
                format_number(row["mean_a"], 3),
                format_number(row["mean_b"], 3),
                _format_difference(row),
                row["test"],
                _format_p(row["p_value"]),
            ]
            for row in rows
        ],
        caption=differences_caption(rows, level),
        right_aligned=("n", "mean A", "mean B", "A − B [CI]", "p"),
    )


# What each test is, for the caption of a table holding it.
TEST_CAPTIONS = {
    TEST_NAMES[GRADED]: "Wilcoxon signed-rank (two-sided) for graded scores",
    TEST_NAMES[PASS_FAIL]: "McNemar's exact test for pass/fail",
    TEST_NAMES[STATISTIC]: (
        "for a score computed from the items' metric means (a composite and its stage scores, as the report "
        "computes them: mean A and mean B are those scores over the pairs), the paired bootstrap: each "
        "resample of whole threads or cases recomputes both models' scores, and p (two-sided) counts the "
        "resampled differences at least as far from the observed one as it is from 0"
    ),
}


def differences_caption(rows: Sequence[dict[str, Any]], level: float) -> str:
    """The differences table's caption, naming the tests its rows hold."""
    held = list(dict.fromkeys(row["test"] for row in rows))
    independent = [name for name in (TEST_NAMES[GRADED], TEST_NAMES[PASS_FAIL]) if name in held]
    return (
        f"Means over the items both models scored (n pairs); A − B with its {100 * level:g}% paired "
        "bootstrap interval (whole threads or cases resampled); "
        f"{'; '.join(TEST_CAPTIONS[name] for name in held)}; — where no pair differs."
        + (f" {' and '.join(independent)}: items treated as independent." if independent else "")
    )


def differing_items_table(rows: Sequence[dict[str, Any]]) -> Table:
    return Table(
        key="compare-items",
        title="Items where the models differ most",
        columns=["A", "B", "score", "condition", "item", "score A", "score B"],
        rows=[
            [
                *_pair_cells(row),
                row["item"],
                format_number(row["score_a"], 2),
                format_number(row["score_b"], 2),
            ]
            for row in rows
        ],
        caption=f"At most {MAX_DIFFERING_ITEMS} items per pair and condition, on the primary score, largest "
        "difference first; on the page, an item opens both models' answers side by side.",
        right_aligned=("score A", "score B"),
        links=tuple(row["link"] for row in rows),
        link_column="item",
    )


def comparison_markdown(title: str, tables: Sequence[Table], settings: CompareSettings) -> str:
    lines = [
        f"# Model comparison: {title}",
        "",
        f"Bootstrap: {settings.n_resamples} resamples, seed {settings.seed}, level {settings.level:g}.",
        "",
        *(table_markdown(table, None) for table in tables),
        f"![{CAPTION}]({FIGURE_ID}.png)",
        "",
    ]
    return "\n".join(lines)


def comparison_page(
    comparison: Comparison, tables: Sequence[Table], figures: dict[str, bytes], settings: CompareSettings
) -> str:
    """The self-contained page: the comparison's tables and figure (PNG by id), then the benchmark's browser
    of the runs, which shows two models side by side when the address (an item's link) asks for it."""
    return render_page(
        {
            "title": page_text(f"Model comparison: {comparison.title}"),
            "meta": page_text(
                f"Models: {', '.join(comparison.models)}. Bootstrap: {settings.n_resamples} resamples, "
                f"seed {settings.seed}, level {settings.level:g}."
            ),
            "note": "",
            "tables": "".join(table_html(table, None) for table in tables),
            "figures": figures_html(figures, {FIGURE_ID: CAPTION}),
            **comparison.page,
        }
    )


def read_differences(out_dir: Path) -> list[dict[str, Any]]:
    """The stored rows of compare_differences.parquet."""
    return pq.read_table(out_dir / "compare_differences.parquet").to_pylist()


def write_comparison(
    out_dir: Path,
    comparison: Comparison,
    differences: list[dict[str, Any]],
    items: list[dict[str, Any]],
    settings: CompareSettings,
) -> None:
    """out_dir/{compare_differences,compare_items}.{parquet,csv}, the figure drawn from the stored
    differences, compare.md and index.html."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, rows, schema in (
        ("compare_differences", differences, DIFFERENCES),
        ("compare_items", items, DIFFERING_ITEMS),
    ):
        write_stats_table(rows, out_dir / f"{name}.parquet", schema)
        write_csv_table(out_dir / f"{name}.csv", pq.read_table(out_dir / f"{name}.parquet"))
    figure = out_dir / f"{FIGURE_ID}.png"
    plot_differences(out_dir / "compare_differences.parquet", figure)
    tables = [differences_table(differences, settings.level), differing_items_table(items)]
    (out_dir / "compare.md").write_text(comparison_markdown(comparison.title, tables, settings))
    page = comparison_page(comparison, tables, {FIGURE_ID: figure.read_bytes()}, settings)
    (out_dir / "index.html").write_text(page)
