"""`threadmed leaderboard`: one table per benchmark and setup from stored runs, each row with its provenance.

It reads a few manifests and run tables (for each row's status) and writes a few small files, calling no
model, so it runs no Prefect flow: a flow would add an API server's start to a command that takes a second.
"""

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from flows.cli.errors import reports_errors
from flows.cli.render import console
from tasks.core.preflight import check_writable_folder


@reports_errors("out")
def leaderboard(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(
            help="Finished run folders (the --out of any benchmark's evaluate, or of `judge rerun`).",
            exists=True,
            file_okay=False,
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(help="Folder to write: leaderboard.md, leaderboard.html and one CSV per table."),
    ],
) -> None:
    """Rank models across stored runs, each row with its provenance; calls no model.

    Rows are split into separate tables whenever their runs were not measured alike (another benchmark,
    dataset or case set, sample, judge, rubric or prompt, or benchmark setting), each titled by what its
    rows share. Provenance per row: project version, commit, config and prompt hashes, dataset
    fingerprint, judge (model, rubric, epoch), date and cost; what an older run did not record shows as
    unknown. A row is complete only when its run's tables hold every item the run planned for it.
    """
    from tasks.benchmarks.compare import run_coverage
    from tasks.evals.config import RunConfig
    from tasks.report.leaderboard import write_leaderboard

    check_writable_folder(out, "--out")
    boards = write_leaderboard(run_dirs, out, run_coverage, common_settings=RunConfig.model_fields)
    rows = sum(len(board.rows) for board in boards)
    console.print(
        f"Wrote {len(boards)} {'table' if len(boards) == 1 else 'tables'} ({rows} rows) from "
        f"{len(run_dirs)} runs to {escape(str(out))}: leaderboard.md, leaderboard.html and a CSV per table."
    )
