"""What `threadmed` commands print: rich renderings of the build, the dry run, the run and the report.

Tables are drawn as `tasks.report.tables.Table` records and printed with `print_table` (`table_rich`, the
renderer the report's Markdown, HTML and Prefect artifacts share, never cutting a cell); the report summary
is the report's overall table.
"""

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.segment import Segments

from tasks.report.tables import Table, table_rich

if TYPE_CHECKING:
    from tasks.evals.estimate import CallEstimate
    from tasks.evals.outputs import RunSummary

console = Console()
UNBOUNDED_WIDTH = 10**6  # measuring a table's natural width: wider than any table


def print_table(table: Table, to: Console, *, markup: bool = True, **options: Any) -> None:
    """`table_rich(table, markup=..., **options)` with no cell cut short ("openai..." names no model): on a
    terminal a cell too wide for its column wraps onto more lines; to a file or a pipe, which rich gives 80
    columns, the table is drawn as wide as its cells need."""
    rendered = table_rich(table, markup=markup, **options)
    for column in rendered.columns:
        column.overflow = "fold"
    if to.is_terminal:
        to.print(rendered)
        return
    width = max(to.width, Measurement.get(to, to.options.update_width(UNBOUNDED_WIDTH), rendered).maximum)
    to.print(Segments(to.render(rendered, to.options.update_width(width))), crop=False)


def command_group(help_text: str) -> typer.Typer:
    """A `threadmed <group>` of commands: its help, shown when it is run without a command, in rich markup."""
    return typer.Typer(help=help_text, no_args_is_help=True, rich_markup_mode="rich")


def funnel_table(funnel: list[dict[str, Any]]) -> Table:
    rows = []
    for row in sorted(funnel, key=lambda r: (r["stage_order"], r["reason"] is not None, r["reason"] or "")):
        if row["reason"] is None:
            rows.append(
                [f"[bold]{row['stage']}[/bold]", "[bold]passed on[/bold]", f"[bold]{row['count_rows']:,}"]
            )
        else:
            rows.append(["", row["reason"], f"{row['count_rows']:,}"])
    title = "Build funnel: rows kept at every stage, and why others were dropped"
    return Table("build-funnel", title, ["stage", "reason", "rows"], rows, "", right_aligned=("rows",))


TABLE1_ROWS = [
    ("Conversation threads", "threads", "{:,}"),
    ("Questions", "questions", "{:,}"),
    ("Answered questions", "answered_questions", "{:,}"),
    ("Answered (%)", "answered_pct", "{:.1f}"),
    ("Follow-ups per thread (min / max)", ("follow_ups_min", "follow_ups_max"), "{} / {}"),
    ("Follow-ups per thread (mean / median)", ("follow_ups_mean", "follow_ups_median"), "{} / {}"),
    ("Threads with exactly 3 turns (%)", "threads_exactly_3_turns_pct", "{:.1f}"),
    ("Threads with >= 4 turns (%)", "threads_4plus_turns_pct", "{:.1f}"),
    ("Threads with >= 5 turns (%)", "threads_5plus_turns_pct", "{:.1f}"),
    ("Question tokens (mean)", "question_tokens_mean", "{:.1f}"),
    ("Answer tokens (mean)", "answer_tokens_mean", "{:.1f}"),
    ("Thread tokens (mean)", "thread_tokens_mean", "{:.1f}"),
]


def table1(stats: dict[str, Any]) -> Table:
    rows = []
    for label, keys, template in TABLE1_ROWS:
        names = keys if isinstance(keys, tuple) else (keys,)
        rows.append([label, *(template.format(*(stats[d][k] for k in names)) for d in ("full", "answered"))])
    title = f"Table 1: dataset statistics (tokens: tiktoken {stats['tokenizer']})"
    columns = ["metric", "full", "answered"]
    return Table("table-1", title, columns, rows, "", right_aligned=("full", "answered"))


def print_build_summary(out_dir: Path) -> None:
    print_table(funnel_table(json.loads((out_dir / "funnel.json").read_text())), console)
    print_table(table1(json.loads((out_dir / "stats.json").read_text())), console)
    console.print(f"[green]Dataset written to[/green] {out_dir}")
    for name in ("dataset/full", "dataset/answered", "stats.json", "funnel.json", "funnel.png",
                 "README.md", "dataset.duckdb"):  # fmt: skip
        console.print(f"  {out_dir / name}")


def estimate_table(estimates: "list[CallEstimate]") -> Table:
    rows = []
    for e in estimates:
        cost = "unpriced" if e.cost_usd is None else f"{e.cost_usd:,.2f}"
        counts = (e.calls, e.cached, e.prompt_tokens, e.completion_tokens)
        rows.append([e.model, e.role, e.mode, *(f"{count:,}" for count in counts), cost])
    priced = [e.cost_usd for e in estimates if e.cost_usd is not None]
    total = f"total: {sum(e.calls for e in estimates):,} calls at most, about {sum(priced):,.2f} USD"
    if any(e.mode == "batch" for e in estimates):
        saving = sum(e.batch_saving_usd for e in estimates)
        total += f"; batch mode saves about {saving:,.2f} USD against single calls"
    columns = ["model", "role", "mode", "calls", "already done", "prompt tokens", "completion tokens", "USD"]
    return Table(
        "dry-run",
        "Dry run: calls still to make at most, per model and role (a dialogue's turns and a judge's re-asks "
        "that may not be needed are counted; tokens estimated with cl100k)",
        columns,
        rows,
        total,
        right_aligned=tuple(columns[3:]),
    )


# Borderless and compact, so a model's whole name and nine columns fit in 80.
COMPACT = {
    "title_justify": "left",
    "box": box.SIMPLE_HEAD,
    "show_edge": False,
    "pad_edge": False,
    "collapse_padding": True,
}


def print_run_summary(manifest: dict[str, Any], to: Console) -> "RunSummary":
    """A finished run as every command that calls models prints it, readable at 80 columns: compact tables
    under one title line; what this invocation made and paid, then the run's totals over every invocation
    (each labelled); one line per failure kind and failed job; the run's notes. Returns the summary."""
    from tasks.evals.outputs import RunSummary  # it imports Prefect: a second

    run = RunSummary.model_validate(manifest["summary"])
    to.print(run.title())
    for table in run.tables():
        print_table(table, to, **COMPACT)
    for line in run.calls_lines():
        to.print(line, markup=False)
    for line in run.failure_lines():
        to.print(line, style="yellow", markup=False)
    for note in manifest["notes"]:
        to.print(f"[yellow]{note}[/yellow]")
    return run


def print_benchmark_report(
    report_dir: Path,
    tables: Callable[[dict[str, Any]], Iterable[Table]],
    notes: Callable[[dict[str, Any]], Iterable[str]],
    to: Console,
) -> None:
    """A benchmark report's tables of its metrics.json (compact), its notes and where its files are."""
    metrics = json.loads((report_dir / "metrics.json").read_text())
    for table in tables(metrics):
        print_table(table, to, **COMPACT)
    for note in notes(metrics):
        to.print(f"[yellow]{escape(note)}[/yellow]")
    for name in ("report.md", "index.html", "metrics.json"):
        to.print(f"  {report_dir / name}")


def print_report_summary(report_dir: Path, console: Console) -> None:
    """Mean score and wrong rate per model and condition, a judge panel's judges, the judge caveat, and where
    the files are."""
    from tasks.benchmarks.threadmed.tables import judge_note, panel_summary_table, summary_table

    metrics = json.loads((report_dir / "metrics.json").read_text())
    print_table(summary_table(metrics), console)
    if (panel := panel_summary_table(metrics)) is not None:
        print_table(panel, console, markup=False)
    note = judge_note(metrics["judge"]["model"])
    if note:
        console.print(note, style="yellow", markup=False)
    for name in ("report.md", "index.html", "metrics.json"):
        console.print(f"  {report_dir / name}")
