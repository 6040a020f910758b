"""`threadmed export`: a stored run of any benchmark as Inspect eval logs, or as a flat table for pandas/R."""

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from flows.cli.errors import reports_errors
from tasks.core.preflight import UserError, check_writable_folder


class Format(StrEnum):
    inspect = "inspect"
    parquet = "parquet"
    csv = "csv"


# How to open what each format writes; {out} is the output folder, {file} the file.
HOW_TO_OPEN = {
    Format.inspect: "Open them in Inspect's log viewer: inspect view --log-dir {out}",
    Format.parquet: "Open it with pandas: pandas.read_parquet('{file}'), in R: arrow::read_parquet('{file}')",
    Format.csv: "Open it with pandas: pandas.read_csv('{file}'), in R: read.csv('{file}')",
}


@reports_errors("out")
def export(
    run_dir: Annotated[
        Path,
        typer.Argument(
            help="A finished run folder of any benchmark (its benchmark.json says which).",
            metavar="RUN_DIR",
            exists=True,
            file_okay=False,
        ),
    ],
    out: Annotated[Path, typer.Option(help="Folder for the exported files (created if missing).")],
    file_format: Annotated[
        Format,
        typer.Option(
            "--format",
            help="inspect: one Inspect eval log per model (`inspect view` opens them; the inspect extra); "
            "parquet or csv: one row per sample (per turn for ThReadMed-QA).",
        ),
    ] = Format.inspect,
) -> None:
    """Write a stored run as Inspect eval logs or as a flat table of its samples. Calls no model.

    Each sample keeps its input messages, the model's output, its scores with the judge's explanation, its
    thread or case, turn, condition and epoch, and the tokens and cost of every role (tasks/export/README.md).
    """
    check_writable_folder(out, "--out")
    console = Console()
    files = export_run(run_dir, out, file_format, console)
    print_how_to_open(file_format, out, files[0], console)


def export_run(run_dir: Path, out: Path, file_format: Format, console: Console) -> list[Path]:
    """Export the run and print the files written; the files."""
    from tasks.benchmarks.registry import benchmark
    from tasks.export.exports import run_benchmark, write_export

    bench = benchmark(run_benchmark(run_dir))
    if bench.export is None:
        raise UserError(f"{run_dir} is a {bench.name} run, which has no export", "RUN_DIR")
    run = bench.export(run_dir)
    files = write_export(run, out, file_format.value)
    samples = sum(len(samples) for samples in run.samples.values())
    console.print(
        f"Run {run.run_id} ({run.title}): {samples} samples of {len(run.models)} models, exported to:",
        soft_wrap=True,
    )
    for path in files:
        console.print(f"  {escape(str(path))}", soft_wrap=True)
    return files


def print_how_to_open(file_format: Format, out: Path, file: Path, console: Console) -> None:
    console.print(escape(HOW_TO_OPEN[file_format].format(out=out, file=file)), soft_wrap=True)
