"""`threadmed`: the command line. Every command is a thin wrapper that runs a Prefect flow."""

import json
import os
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from flows.cli_errors import reports_errors
from flows.cli_evaluate import evaluate
from flows.cli_report import print_report_summary, report
from tasks.benchmarks.threadmed.settings import BuildSettings
from tasks.core.preflight import check_readable_files, check_writable_folder
from tasks.data.lake import expand_dump_paths
from tasks.data.reddit.pseudonym_salt import SALT_VARIABLE

# Prefect is imported only inside commands, so these defaults reach it; the user's settings win.
# Telemetry would fail (and log an error) offline; a loaded machine needs time to start the API.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")

app = typer.Typer(
    help="ThReadMed-QA: rebuild the multi-turn r/AskDocs benchmark from Pushshift dumps; evaluate LLMs.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
)
console = Console()
DEFAULTS = BuildSettings()
DEMO_CONFIG = Path(__file__).resolve().parents[1] / "deployments" / "eval.demo.yaml"


class Layout(StrEnum):
    subreddit = "subreddit"
    monthly = "monthly"


def expand_dumps(values: list[str], option: str) -> list[str]:
    try:
        paths = expand_dump_paths(values)
    except FileNotFoundError as error:
        raise typer.BadParameter(str(error), param_hint=option) from None
    check_readable_files(paths, option)
    return paths


def funnel_table(funnel: list[dict[str, Any]]) -> Table:
    table = Table(title="Build funnel: rows kept at every stage, and why others were dropped")
    table.add_column("stage")
    table.add_column("reason")
    table.add_column("rows", justify="right")
    for row in sorted(funnel, key=lambda r: (r["stage_order"], r["reason"] is not None, r["reason"] or "")):
        if row["reason"] is None:
            table.add_row(
                f"[bold]{row['stage']}[/bold]", "[bold]passed on[/bold]", f"[bold]{row['count_rows']:,}"
            )
        else:
            table.add_row("", row["reason"], f"{row['count_rows']:,}")
    return table


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
    table = Table(title=f"Table 1: dataset statistics (tokens: tiktoken {stats['tokenizer']})")
    table.add_column("metric")
    table.add_column("full", justify="right")
    table.add_column("answered", justify="right")
    for label, keys, template in TABLE1_ROWS:
        names = keys if isinstance(keys, tuple) else (keys,)
        cells = [template.format(*(stats[d][k] for k in names)) for d in ("full", "answered")]
        table.add_row(label, *cells)
    return table


def print_build_summary(out_dir: Path) -> None:
    console.print(funnel_table(json.loads((out_dir / "funnel.json").read_text())))
    console.print(table1(json.loads((out_dir / "stats.json").read_text())))
    console.print(f"[green]Dataset written to[/green] {out_dir}")
    for name in ("dataset/full", "dataset/answered", "stats.json", "funnel.json", "funnel.png",
                 "README.md", "dataset.duckdb"):  # fmt: skip
        console.print(f"  {out_dir / name}")


@app.command()
@reports_errors("out")
def synth(
    out: Annotated[Path, typer.Option(help="Folder for the dump files and the generator's truth tables.")],
    posts: Annotated[int, typer.Option(min=1, help="Subreddit posts inside the time window.")] = 3000,
    seed: Annotated[int, typer.Option(help="Random seed: the same seed writes byte-identical files.")] = 0,
    layout: Annotated[
        Layout,
        typer.Option(help="'subreddit': AskDocs_{submissions,comments}.zst; "
                     "'monthly': RS_/RC_YYYY-MM.zst holding other subreddits too."),
    ] = Layout.subreddit,
) -> None:  # fmt: skip
    """Write realistic Pushshift-format dumps of r/AskDocs (for demos, tests and benchmarks).

    Files are zstd-compressed with a 2 GiB window like the real dumps and reproduce their drift by era.
    """
    from flows.synthesize_dumps import synthesize_dumps

    check_writable_folder(out, "--out")
    summary = synthesize_dumps(out_dir=str(out), posts=posts, seed=seed, layout=layout.value)
    console.print(
        f"[green]Wrote[/green] {summary['records']:,} records to {out} in {summary['seconds']:.1f} s"
    )
    for path in summary["files"]:
        console.print(f"  {path}")


@app.command()
@reports_errors("out", "lake")
def build(
    submissions: Annotated[list[str], typer.Option(
        help="Submission dump(s): a file, a folder or a glob such as 'dumps/RS_*.zst'. Repeat the option "
             "for more.")],
    comments: Annotated[list[str], typer.Option(help="Comment dump(s), as for --submissions.")],
    out: Annotated[Path, typer.Option(help="Output folder of the published dataset.")],
    lake: Annotated[Path, typer.Option(help="Data lake (raw Parquet, warehouse, run manifests).")] = Path(
        "data_lake"),
    subreddit: Annotated[str, typer.Option(help="Subreddit to keep (any case).")] = DEFAULTS.subreddit,
    start: Annotated[datetime, typer.Option(formats=["%Y-%m-%d"], help="First day of the post window (UTC).")]
    = datetime(2015, 1, 1),
    end: Annotated[datetime, typer.Option(formats=["%Y-%m-%d"], help="Day after the post window (UTC).")]
    = datetime(2023, 7, 1),
    seed: Annotated[int, typer.Option(help="Seed of the OP-grouped train/val/test split.")] = DEFAULTS.seed,
    salt: Annotated[str | None, typer.Option(
        help=f"Secret salt of the user pseudonyms; default: ${SALT_VARIABLE}, else a public salt that makes "
             "the build unsafe to publish. Prefer the variable: options show in the process list.",
        show_default=False)] = None,
    answer_roles: Annotated[list[str], typer.Option(
        help="Flair role(s) whose comments count as answers (repeat for more): physician, "
             "physician_assistant, nurse_practitioner... (see sql/seeds/flair_roles.csv).")]
    = DEFAULTS.answer_roles,
    keep_truncated: Annotated[bool, typer.Option(
        help="Keep the records before the cut of a truncated dump instead of failing.")] = False,
    versioned: Annotated[bool, typer.Option(
        help="Publish into OUT/versions/<id> and point OUT/latest at it (scheduled rebuilds).")] = False,
    dask: Annotated[bool, typer.Option(
        help="Ingest the dumps in parallel on a Dask cluster (a local one unless --dask-address).")] = False,
    dask_address: Annotated[str | None, typer.Option(
        help="Scheduler of a running Dask cluster, e.g. tcp://10.0.0.5:8786 (implies --dask).")] = None,
    allow_empty: Annotated[bool, typer.Option(
        help="Publish an empty dataset (with a warning) when the dumps hold no record of the subreddit.")]
    = False,
) -> None:  # fmt: skip
    """Build the dataset from Pushshift dumps (the `build-dataset` flow).

    Writes dataset/{full,answered}/{threads,qa_pairs}.parquet, stats.json, funnel.json, funnel.png,
    a dataset card (README.md) and dataset.duckdb under --out. Same inputs, same rows.
    """
    from flows.build_dataset import build_dataset
    from tasks.core.runners import RunnerSettings
    from tasks.data.warehouse import ProjectError, check_answer_roles, flair_roles

    try:
        check_answer_roles(answer_roles, flair_roles())
    except ProjectError as error:
        raise typer.BadParameter(str(error), param_hint="--answer-roles") from None
    settings = BuildSettings(
        subreddit=subreddit, start=start.date(), end=end.date(), seed=seed, answer_roles=answer_roles,
        keep_truncated=keep_truncated,
    )  # fmt: skip
    if salt:  # handed to the flow through its environment: a flow parameter would be stored by Prefect
        os.environ[SALT_VARIABLE] = salt
    runner = RunnerSettings(kind="dask", dask_address=dask_address) if dask or dask_address else None
    # Inputs and outputs are checked before any work: a locked --out must not wait for ingest and SQL.
    check_writable_folder(out, "--out")
    check_writable_folder(lake, "--lake")
    dataset = build_dataset(
        submissions=expand_dumps(submissions, "--submissions"),
        comments=expand_dumps(comments, "--comments"),
        out_dir=str(out),
        lake_dir=str(lake),
        settings=settings,
        versioned=versioned,
        runner=runner,
        allow_empty=allow_empty,
    )
    print_build_summary(Path(dataset))


@app.command()
@reports_errors("workdir")
def demo(
    workdir: Annotated[Path, typer.Option(help="Folder for the demo's dumps, lake, dataset and run.")] = Path(
        "demo"),
    posts: Annotated[int, typer.Option(min=500, help="Posts in the generated dump.")] = 12_000,
    seed: Annotated[int, typer.Option(help="Seed of the generated dump.")] = 7,
) -> None:  # fmt: skip
    """Run everything offline on a generated dump: synthesize, build, evaluate two baselines, report.

    The baselines (threadmed/retrieval, threadmed/deferral) and the judge (threadmed/overlap-judge)
    are built in, so no key is needed; the overlap judge is a heuristic, not comparable to an LLM judge.
    """
    from flows.build_dataset import build_dataset
    from flows.evaluate_models import evaluate_models
    from flows.synthesize_dumps import synthesize_dumps

    check_writable_folder(workdir, "--workdir")
    dumps = workdir / "dumps"
    synthesize_dumps(out_dir=str(dumps), posts=posts, seed=seed, layout="subreddit")
    dataset = Path(build_dataset(
        submissions=[str(dumps / "AskDocs_submissions.zst")],
        comments=[str(dumps / "AskDocs_comments.zst")],
        out_dir=str(workdir / "build"),
        lake_dir=str(workdir / "data_lake"),
    ))  # fmt: skip
    print_build_summary(dataset)
    run_dir = workdir / "run"
    state = evaluate_models(
        dataset_dir=str(dataset), run_dir=str(run_dir), config_file=str(DEMO_CONFIG), return_state=True
    )
    print_report_summary(run_dir / "report", console)
    if not state.is_completed():
        console.print(f"[red]{state.message}[/red]")
        raise typer.Exit(1)


app.command()(evaluate)
app.command()(report)


def main() -> None:
    """The `threadmed` command (pyproject.toml): the app, with Ctrl-C, its server and its exit handled."""
    from flows.cli_process import run

    run(app)


if __name__ == "__main__":
    main()
