"""Two models side by side on the same items, for any benchmark: paired differences with bootstrap intervals
and a paired test, the items where they differ most, and the refusal of runs over different items.

A benchmark hands over its scores as `ItemScore` rows (tasks/benchmarks/<name>/compare.py); everything
below is pure except `write_comparison`. Pairs are the items both models scored: an item one of them left
unscored (a failed call, an unparseable grade) is in neither mean nor test, and `n` says how many pairs are.
"""

from collections.abc import Callable, Sequence
from itertools import combinations, product
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlencode

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from scipy import stats

from tasks.core.preflight import UserError
from tasks.core.safe_text import page_text, write_csv_table
from tasks.report.compare_figure import CAPTION, FIGURE_ID, plot_differences
from tasks.report.coverage import Planned, RunCoverage, epoch_groups, missing_items
from tasks.report.files import write_stats_table
from tasks.report.html import browser_parts, data_parts, figures_html, render_page
from tasks.report.runs import model_name
from tasks.report.settings import CompareSettings
from tasks.report.stats import BootstrapCI, bootstrap_mean, seeded_rng
from tasks.report.tables import Table, format_number, table_html, table_markdown

GRADED, PASS_FAIL = "graded", "pass_fail"
ALL_ITEMS = "all"
# The items listed per pair of models and score, where their scores differ most.
MAX_DIFFERING_ITEMS = 10


class Metric(NamedTuple):
    """A headline score of a benchmark: its name in ItemScore.metric, and GRADED or PASS_FAIL."""

    name: str
    kind: str


class ItemScore(NamedTuple):
    """One model's score of one item on one metric. `stratum` separates items never compared with each other
    (ThReadMed's conditions); `group` is the turn group or stage an item belongs to ('' for none); `cluster`
    is what the bootstrap resamples (a thread, a case: its items are correlated); `locator` is the item's
    address in the benchmark's browser (a URL query)."""

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
TEST_NAMES = {GRADED: "Wilcoxon", PASS_FAIL: "McNemar exact"}


class PairedTest(NamedTuple):
    name: str
    statistic: float
    p_value: float
    n: int


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


def wilcoxon_test(a: np.ndarray, b: np.ndarray) -> PairedTest | None:
    """Wilcoxon signed-rank of the pairs (a, b), two-sided, scipy's defaults (zero differences dropped);
    None when no pair differs (the test is undefined)."""
    if not np.any(a != b):
        return None
    result = stats.wilcoxon(a, b, alternative="two-sided")
    return PairedTest(TEST_NAMES[GRADED], float(result.statistic), float(result.pvalue), len(a))


def mcnemar_test(a: np.ndarray, b: np.ndarray) -> PairedTest | None:
    """McNemar's exact test of paired pass/fail outcomes (1 pass, 0 fail): a two-sided binomial test of the
    pairs only a passes among the discordant pairs, against one half. None without a discordant pair.
    The statistic is the count of pairs only a passes."""
    only_a = int(np.sum((a == 1) & (b == 0)))
    only_b = int(np.sum((a == 0) & (b == 1)))
    if only_a + only_b == 0:
        return None
    result = stats.binomtest(only_a, only_a + only_b, 0.5, alternative="two-sided")
    return PairedTest(TEST_NAMES[PASS_FAIL], float(only_a), float(result.pvalue), len(a))


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


def _groups(rows: Sequence[ItemScore]) -> list[str]:
    """ALL_ITEMS, then each group in order of first appearance."""
    return [ALL_ITEMS, *dict.fromkeys(row.group for row in rows if row.group)]


def difference_rows(
    comparison: Comparison, models: Sequence[str], settings: CompareSettings
) -> list[dict[str, Any]]:
    """Per pair of models, metric, stratum and group (all items first): both means over the pairs, the mean
    difference a - b with its paired bootstrap interval, and the metric's paired test."""
    rows = []
    by_key: dict[tuple[str, str, str], list[ItemScore]] = {}
    for score in comparison.scores:
        by_key.setdefault((score.metric, score.stratum, score.model), []).append(score)
    strata = list(dict.fromkeys(score.stratum for score in comparison.scores))
    for (model_a, model_b), metric, stratum in product(combinations(models, 2), comparison.metrics, strata):
        rows_a = by_key.get((metric.name, stratum, model_a), [])
        rows_b = by_key.get((metric.name, stratum, model_b), [])
        for group in _groups(rows_a) if rows_a and rows_b else []:
            pairs = paired([row for row in rows_a if group in (ALL_ITEMS, row.group)], rows_b)
            labels = ("compare", model_a, model_b, metric.name, stratum, group)
            ci = paired_difference(pairs, seeded_rng(settings.seed, *labels), settings)
            test = PAIRED_TESTS[metric.kind](pairs.a, pairs.b) if len(pairs.a) else None
            rows.append(
                {
                    "model_a": model_a,
                    "model_b": model_b,
                    "metric": metric.name,
                    "stratum": stratum,
                    "group": group,
                    "n_pairs": len(pairs.a),
                    "mean_a": _mean(pairs.a),
                    "mean_b": _mean(pairs.b),
                    "difference": ci.estimate,
                    "ci_low": ci.low,
                    "ci_high": ci.high,
                    "test": TEST_NAMES[metric.kind],
                    "statistic": None if test is None else test.statistic,
                    "p_value": None if test is None else test.p_value,
                }
            )
    return rows


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
        pick = [s for s in comparison.scores if s.metric == metric.name and s.stratum == stratum]
        pairs = paired([s for s in pick if s.model == model_a], [s for s in pick if s.model == model_b])
        gap = np.abs(pairs.a - pairs.b)
        differ = np.flatnonzero(gap > 0)
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
        caption=f"Means over the items both models scored (n pairs); A − B with its {100 * level:g}% paired "
        "bootstrap interval (whole threads or cases resampled); Wilcoxon signed-rank (two-sided) for graded "
        "scores, McNemar's exact test for pass/fail; — where no pair differs. Tests treat items as "
        "independent.",
        right_aligned=("n", "mean A", "mean B", "A − B [CI]", "p"),
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
