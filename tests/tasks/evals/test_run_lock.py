"""The run-folder lock: one evaluating process per run folder, never stuck after a crash."""

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.evals.run_lock import RunFolderBusy, check_not_held, hold_run_folder

HOLDER = """
import sys
from tasks.evals.run_lock import hold_run_folder
with hold_run_folder(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.read()  # held until the test ends (closes stdin or kills it), however long the test takes
"""


@pytest.fixture
def holder(tmp_path):
    """Another process holding the lock of tmp_path/run (killed at the end)."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path / "run")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline() == "held\n"
    yield process
    process.kill()
    process.wait()


def test_a_second_process_is_refused_naming_the_holder(tmp_path, holder):
    with pytest.raises(RunFolderBusy) as refused, hold_run_folder(tmp_path / "run"):
        pass
    message = str(refused.value)
    holder_named = f"(pid {holder.pid} on {socket.gethostname()}, started "
    assert message.startswith(f"{tmp_path / 'run'} is being evaluated by another process {holder_named}")
    assert message.endswith("); wait for it to finish or stop it, then re-run to resume")
    assert "\n" not in message


def test_a_holder_killed_with_kill_9_does_not_block_the_next_run(tmp_path, holder):
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    with hold_run_folder(tmp_path / "run") as lock_file:
        assert f'"pid": {os.getpid()}' in Path(lock_file).read_text()


def test_the_process_holding_the_lock_may_take_it_again(tmp_path):
    """The CLI takes the lock before the flow, which takes it again (deployment runs have no CLI)."""
    with hold_run_folder(tmp_path / "run"), hold_run_folder(tmp_path / "run"):
        pass
    with hold_run_folder(tmp_path / "run"):  # and released it
        pass


def test_a_look_refuses_a_held_folder_and_creates_nothing_for_a_new_one(tmp_path, holder):
    with pytest.raises(RunFolderBusy):
        check_not_held(tmp_path / "run")
    check_not_held(tmp_path / "new")
    assert not (tmp_path / "new").exists()
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    check_not_held(tmp_path / "run")  # a dead holder's lock file holds nothing
