"""The `threadmed` process as a user's terminal sees it: a busy run folder, Ctrl-C, kill -9, a quiet exit.

Every case runs the real command in a subprocess, with the temporary Prefect server it starts itself.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.eval_fixtures import write_dataset

THREADMED = str(Path(sys.executable).with_name("threadmed"))
LOCK_HOLDER = """
import sys, time
from tasks.run_lock import hold_run_folder
with hold_run_folder(sys.argv[1]):
    print("held", flush=True)
    time.sleep(120)
"""


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("build"))


def evaluate_command(dataset: Path, run_dir: Path, api_base: str) -> list[str]:
    return [
        THREADMED, "evaluate", "--dataset", str(dataset), "--out", str(run_dir), "--models", "openai/m",
        "--judge", "openai/judge", "--api-base", api_base, "--split", "test", "--no-report",
    ]  # fmt: skip


def test_a_run_folder_being_evaluated_is_refused_in_one_line_naming_the_holder(dataset, tmp_path):
    run_dir = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(run_dir)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline() == "held\n"
        refused = subprocess.run(
            evaluate_command(dataset, run_dir, "http://127.0.0.1:9/v1"),
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        holder.kill()
        holder.wait()
    assert refused.returncode == 1
    lines = (refused.stdout + refused.stderr).splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{run_dir} is being evaluated by another process (pid {holder.pid} on ")
    assert not (run_dir / "ledger").exists()
