"""Which benchmark a run folder belongs to: `RUN_DIR/benchmark.json`, written when a run first takes it.

A run folder holds one benchmark's ledger, tables, manifest and report: another benchmark's run into it
would overwrite them, and another benchmark's report would read tables of another shape. So every
evaluate (its dry run too) and every report checks the folder's benchmark before reading or writing.
A folder with no such file (new, or a run from before it existed) belongs to no benchmark yet.
"""

import json
from pathlib import Path

from tasks.core.files import write_json_atomic
from tasks.core.preflight import UserError

BENCHMARK_FILE = "benchmark.json"


def run_folder_benchmark(run_dir: Path) -> str | None:
    """The benchmark whose run took `run_dir`, or None."""
    path = Path(run_dir) / BENCHMARK_FILE
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))["benchmark"]


# What to do about a folder of another benchmark, by what was asked of it.
EVALUATE_FIX = "give its runs another --out folder"
REPORT_FIX = "pass run folders of its own"


def check_run_folder_benchmark(
    run_dir: Path, benchmark: str, fix: str = EVALUATE_FIX, option: str | None = None
) -> None:
    """Raise UserError, one line naming the folder and its benchmark, when another benchmark's run took it;
    `option` names the command-line option that gave the folder (a bad option is a usage error)."""
    owner = run_folder_benchmark(run_dir)
    if owner is not None and owner != benchmark:
        raise UserError(f"{run_dir} belongs to the {owner} benchmark, not {benchmark}: {fix}", option)


def claim_run_folder(run_dir: Path, benchmark: str) -> None:
    """Record that `run_dir` belongs to `benchmark`; UserError if another benchmark's run took it."""
    check_run_folder_benchmark(run_dir, benchmark)
    if run_folder_benchmark(run_dir) is None:
        write_json_atomic(Path(run_dir) / BENCHMARK_FILE, {"benchmark": benchmark})
