"""`threadmed synth` and `threadmed build`: the dumps and the dataset built from them."""

import os
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from flows.cli.errors import reports_errors
from flows.cli.render import console, print_build_summary
from flows.cli.server_launch import start_temporary_server
from tasks.benchmarks.threadmed.settings import BuildSettings
from tasks.core.preflight import check_readable_files, check_writable_folder
from tasks.data.lake import expand_dump_paths
from tasks.data.reddit.pseudonym_salt import SALT_VARIABLE

DEFAULTS = BuildSettings()


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
    check_writable_folder(out, "--out")
    console.print(f"Writing dumps of {posts:,} r/AskDocs posts (seed {seed}, {layout.value} layout) to {out}",
                  markup=False, soft_wrap=True)  # fmt: skip
    start_temporary_server()  # while Prefect is imported
    from flows.synthesize_dumps import synthesize_dumps  # Prefect: after the line, which comes at once

    summary = synthesize_dumps(out_dir=str(out), posts=posts, seed=seed, layout=layout.value)
    console.print(
        f"[green]Wrote[/green] {summary['records']:,} records to {out} in {summary['seconds']:.1f} s"
    )
    for path in summary["files"]:
        console.print(f"  {path}")


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
             "physician_assistant, nurse_practitioner... (see sql/seeds/threadmed/flair_roles.csv).")]
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
    from tasks.benchmarks.threadmed.answer_roles import check_answer_roles, flair_roles
    from tasks.data.warehouse import ProjectError

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
    # Inputs and outputs are checked before any work: a locked --out must not wait for ingest and SQL.
    check_writable_folder(out, "--out")
    check_writable_folder(lake, "--lake")
    submission_files = expand_dumps(submissions, "--submissions")
    comment_files = expand_dumps(comments, "--comments")
    console.print(build_line(submission_files, comment_files, settings, out), markup=False, soft_wrap=True)
    start_temporary_server()  # while Prefect is imported
    from flows.build_dataset import build_dataset  # Prefect: seconds, after the line
    from tasks.core.runners import RunnerSettings

    runner = RunnerSettings(kind="dask", dask_address=dask_address) if dask or dask_address else None
    dataset = build_dataset(
        submissions=submission_files,
        comments=comment_files,
        out_dir=str(out),
        lake_dir=str(lake),
        settings=settings,
        versioned=versioned,
        runner=runner,
        allow_empty=allow_empty,
    )
    print_build_summary(Path(dataset))


def build_line(submissions: list[str], comments: list[str], settings: BuildSettings, out: Path) -> str:
    """What `build` will do, its inputs checked: printed before the flow (and Prefect's start-up)."""

    def files(paths: list[str], kind: str) -> str:
        size = sum(os.path.getsize(path) for path in paths) / 2**20
        return f"{len(paths)} {kind} file{'s' if len(paths) != 1 else ''} ({size:,.1f} MiB)"

    return (
        f"Building the r/{settings.subreddit} dataset of {settings.start}..{settings.end} from "
        f"{files(submissions, 'submission')} and {files(comments, 'comment')} into {out}"
    )
