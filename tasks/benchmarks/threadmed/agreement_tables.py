"""agreement.json's tables as the Tables of agreement.md, the terminal's summary table and agreement.md
itself.
"""

from collections import defaultdict
from typing import Any

from tasks.benchmarks.threadmed.agreement_stats import SCALE, STATISTICS
from tasks.core.safe_text import markdown_text
from tasks.report.stats import MIN_INTERVAL_ITEMS
from tasks.report.tables import Table, format_statistic, legend, short_keys, table_markdown


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
