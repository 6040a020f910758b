"""One evaluating process per run folder: `RUN_DIR/.lock`, held with flock(2) while a run evaluates it.

Two processes on one run folder would both make (and pay for) every missing call. The OS releases an
flock when its holder dies, even by kill -9, so a crash never leaves the folder locked; the file only
names the holder (pid, host, start time) for the message of the process that is refused.
"""

import fcntl
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

LOCK_NAME = ".lock"


class RunFolderBusy(RuntimeError):
    """Another process is evaluating the run folder."""


@contextmanager
def hold_run_folder(run_dir: str | Path) -> Iterator[Path]:
    """Lock `run_dir` for this process (creating it) and yield the lock file; raise RunFolderBusy if taken.

    Re-entrant within one process: the command line takes the lock before it starts the flow, which
    takes it again because deployment runs reach the flow without the command line.
    """
    path = Path(run_dir) / LOCK_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = read_holder(path)
            if holder.get("pid") == os.getpid() and holder.get("host") == socket.gethostname():
                yield path
                return
            raise RunFolderBusy(busy_message(Path(run_dir), holder)) from None
        os.ftruncate(descriptor, 0)
        os.write(descriptor, json.dumps(this_process()).encode())
        try:
            yield path
        finally:
            os.ftruncate(descriptor, 0)  # still locked: nobody reads a finished holder's details
    finally:
        os.close(descriptor)  # releases the flock


def check_not_held(run_dir: str | Path) -> None:
    """Raise RunFolderBusy if another process holds `run_dir` now; create nothing. A look, not a hold: the
    command line looks before its first line (a busy folder is then refused in one line) and holds the
    folder once its plan is made, refusing it again if another process took it in between."""
    if (Path(run_dir) / LOCK_NAME).is_file():
        with hold_run_folder(run_dir):
            pass


def this_process() -> dict[str, object]:
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def read_holder(path: Path) -> dict[str, object]:
    """The holder's details, or {} while it is still writing them."""
    try:
        holder = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}


def busy_message(run_dir: Path, holder: dict[str, object]) -> str:
    """One line naming the process that holds the run folder."""
    if holder:
        who = f"pid {holder.get('pid')} on {holder.get('host')}, started {holder.get('started_at')}"
    else:
        who = "details not written yet"
    return (
        f"{run_dir} is being evaluated by another process ({who}); "
        "wait for it to finish or stop it, then re-run to resume"
    )
