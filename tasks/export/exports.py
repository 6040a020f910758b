"""`threadmed export`: which benchmark a run folder holds, and its export written in the chosen format."""

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from tasks.core.preflight import UserError
from tasks.core.run_folder import BENCHMARK_FILE, run_folder_benchmark
from tasks.export.flat import write_flat
from tasks.export.samples import ExportedRun

ExportFormat = Literal["inspect", "parquet", "csv"]
INSPECT_EXTRA = "pip install -e '.[inspect]'"


def run_benchmark(run_dir: Path) -> str:
    """The benchmark of the run in `run_dir`; UserError (one line) when the folder holds no run."""
    benchmark = run_folder_benchmark(run_dir)
    if benchmark is None:
        raise UserError(
            f"{run_dir} is not a run folder (no {BENCHMARK_FILE}): pass the --out folder of an evaluate "
            "command",
            "RUN_DIR",
        )
    return benchmark


def inspect_writer() -> Callable[[ExportedRun, Path], list[Path]]:
    """The Inspect log writer; UserError when inspect_ai (the `inspect` extra) is not installed."""
    try:
        from tasks.export.inspect_log import write_inspect_logs
    except ModuleNotFoundError:
        raise UserError(
            f"--format inspect needs inspect_ai, the inspect extra: {INSPECT_EXTRA}", "--format"
        ) from None
    return write_inspect_logs


def write_export(run: ExportedRun, out_dir: Path, file_format: ExportFormat) -> list[Path]:
    """The run's export under `out_dir`: one Inspect log per model, or one flat table -> the files."""
    if file_format == "inspect":
        return inspect_writer()(run, out_dir)
    return [write_flat(run, out_dir, file_format)]
