"""One migrated Prefect database per test run, copied to the new database of each Prefect server tests start.

A Prefect server given a new database migrates it first: some 6 of the 10 CPU seconds of its start, on the
2-core reference machine, for each of the run's servers (a harness and a Prefect home per xdist worker, the
deployment stack's, the server command's). The test run's first process starts `prefect server database
upgrade` in a folder of its own once (`start_template`) and tells the processes it starts where
(`TEMPLATE_VARIABLE`); `seed` copies that database to where a server will look for its own, waiting for it
if it is still being made. Without a template (a process not started by the run), or if making it failed,
nothing is copied and the server migrates its own database, as it would anyway.
"""

import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from time import monotonic, sleep

import psutil

TEMPLATE_VARIABLE = "THREADMED_TESTS_PREFECT_DB"
# A liveness bound on making the template (8.6 s quiet), not a speed bound: past it, servers migrate their
# own databases.
TEMPLATE_WAIT_S = 600.0
DATABASE, OUTCOME, MAKER = "prefect.db", "outcome", "maker.pid"


def start_template(folder: Path) -> None:
    """Start migrating a new database in `folder` (in the background), and name the folder in this process's
    environment for the processes it starts."""
    folder.mkdir(parents=True, exist_ok=True)
    maker = subprocess.Popen(
        [sys.executable, "-m", "tests.prefect_db", str(folder)],
        cwd=Path(__file__).parent.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    (folder / MAKER).write_text(str(maker.pid))
    os.environ[TEMPLATE_VARIABLE] = str(folder)


def make_template(folder: Path) -> None:
    """Migrate a new database in `folder`, then write OUTCOME: "ok", or Prefect's output if it failed."""
    try:
        upgrade = subprocess.run(
            [sys.executable, "-m", "prefect", "server", "database", "upgrade", "-y"],
            env={**os.environ, "PREFECT_HOME": str(folder)},
            capture_output=True,
            text=True,
        )
        failed = f"exit {upgrade.returncode}\n{upgrade.stdout}{upgrade.stderr}"
        outcome = "ok" if upgrade.returncode == 0 else failed
    except OSError as error:  # no interpreter to run: the servers migrate their own
        outcome = f"not started: {error}"
    (folder / f"{OUTCOME}.new").write_text(outcome)
    (folder / f"{OUTCOME}.new").rename(folder / OUTCOME)  # whole or absent, for the processes waiting on it


def seed(database: Path) -> bool:
    """Copy the run's migrated database to `database` (a server's SQLite file, not there yet); whether it
    was copied. Waits while the template is being made; not if its maker ended without an outcome."""
    if (folder := os.environ.get(TEMPLATE_VARIABLE)) is None or database.exists():
        return False
    outcome = Path(folder) / OUTCOME
    deadline = monotonic() + TEMPLATE_WAIT_S
    while not outcome.exists() and _maker_alive(Path(folder)) and monotonic() < deadline:
        sleep(0.1)
    # The maker writes its outcome before it ends: read once more after it ended.
    if not outcome.exists() or outcome.read_text() != "ok":
        return False
    database.parent.mkdir(parents=True, exist_ok=True)
    # SQLite's backup: a consistent copy whatever journal files the template was left with.
    with (
        closing(sqlite3.connect(Path(folder) / DATABASE)) as source,
        closing(sqlite3.connect(database)) as copy,
    ):
        source.backup(copy)
    return True


def _maker_alive(folder: Path) -> bool:
    """Whether the process making the template in `folder` still runs (it ended, or was killed, before
    writing its outcome: nothing to wait for)."""
    try:
        return psutil.Process(int((folder / MAKER).read_text())).status() != psutil.STATUS_ZOMBIE
    except (OSError, ValueError, psutil.NoSuchProcess):
        return False


if __name__ == "__main__":
    make_template(Path(sys.argv[1]))
