"""`threadmed compare-release`: a dataset build beside a local copy of the ThReadMed-QA public release.

It reads local files only and calls no model, so it runs no Prefect flow (and downloads nothing).
"""

from pathlib import Path
from typing import Annotated

import typer

from flows.cli.errors import reports_errors
from flows.cli.render import console


@reports_errors()
def compare_release(
    build_dir: Annotated[
        Path,
        typer.Argument(
            help="A dataset build (the --out of `threadmed build`).", exists=True, file_okay=False
        ),
    ],
    release: Annotated[
        Path,
        typer.Option(
            help="Your local copy of the release, laid out as answered/qa_pairs.parquet (.csv or .jsonl also "
            "do) and optionally full/qa_pairs.parquet: one row per question with thread_id, turn, question, "
            "answer.",
            exists=True,
            file_okay=False,
        ),
    ],
) -> None:
    """Compare a rebuild with a local copy of the ThReadMed-QA release; downloads nothing.

    Prints Table 1 of each side by side (threads, questions, answered share, turns per thread, token
    lengths) and the threads only one of them holds. Threads the release lacks may have been removed from
    it on request: the dataset card's terms ask you to drop them.
    """
    from flows.cli.render import print_table
    from tasks.benchmarks.threadmed.release import compare_with_release

    for table in compare_with_release(build_dir, release):
        print_table(table, console, markup=False, title_justify="left", caption_justify="left")
        console.print()
