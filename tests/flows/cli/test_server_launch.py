"""A command's temporary Prefect server started as the command begins, in subprocesses: Prefect is pointed at
it before it is imported, it serves the flow, and it ends with the command."""

import subprocess
import sys

import psutil
import pytest

from flows.cli.server_launch import STARTING_LINE
from tests.flows.cli.terminal import COMMAND_TIMEOUT_S, error_lines, threadmed

LAUNCHED_FLOW = """
import os, sys
from flows.cli.prefect_env import prepare
from flows.cli import server_launch
prepare()
server_launch.start_temporary_server()
from prefect import flow
answer = flow(lambda: 42, name="answer")()
print(answer, server_launch._Launched.process.pid, os.environ["PREFECT_API_URL"])
print("prefect.server.api.server" in sys.modules)
"""

PREFECT_FIRST = """
import sys
from flows.cli.prefect_env import prepare
from flows.cli.process import run
prepare()

def app():
    import prefect  # before the command's start: its settings are read, so Prefect starts the server itself
    from flows.cli import server_launch
    server_launch.start_temporary_server()
    answer = prefect.flow(lambda: 42, name="answer")()
    print(answer, server_launch._Launched.process, "flows.cli.temporary_server" in sys.modules, flush=True)

run(app)
"""

NOT_LAUNCHED = """
import sys
from flows.cli import server_launch
server_launch.start_temporary_server()
print(server_launch._Launched.process, "prefect" in sys.modules)
"""


@pytest.fixture
def no_api(tmp_path, monkeypatch):
    """No API chosen and no server running for the PREFECT_HOME of the commands."""
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)


def run_script(script: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=cwd, timeout=COMMAND_TIMEOUT_S
    )


@pytest.mark.slow
@pytest.mark.usefixtures("no_api")
def test_the_server_started_first_serves_the_flow_without_prefect_s_server_module_and_ends_with_it(tmp_path):
    ran = run_script(LAUNCHED_FLOW, tmp_path)
    assert ran.returncode == 0, ran.stderr
    answer, pid, api_url = ran.stdout.splitlines()[0].split()
    assert (answer, ran.stdout.splitlines()[1]) == ("42", "False")  # Prefect started no server of its own
    assert api_url.startswith("http://127.0.0.1:") and api_url.endswith("/api")
    assert ran.stderr.splitlines()[0] == STARTING_LINE
    assert not psutil.pid_exists(int(pid)) or psutil.Process(int(pid)).status() == psutil.STATUS_ZOMBIE


@pytest.mark.slow
@pytest.mark.usefixtures("no_api")
def test_a_command_that_imported_prefect_first_has_prefect_start_the_same_watched_server(tmp_path):
    ran = run_script(PREFECT_FIRST, tmp_path)
    assert (ran.returncode, ran.stdout) == (0, "42 None True\n"), ran.stderr
    assert ran.stderr == STARTING_LINE + "\n"  # one server, started once


@pytest.mark.usefixtures("no_api")
def test_no_server_is_started_for_an_api_the_user_chose(tmp_path, monkeypatch):
    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")
    ran = run_script(NOT_LAUNCHED, tmp_path)
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "None False\n", "")


@pytest.mark.slow
@pytest.mark.usefixtures("no_api")
def test_a_server_that_exits_before_it_starts_is_one_line_with_the_fix(tmp_path, monkeypatch):
    # Its database cannot be made: the server's start-up fails, and uvicorn exits.
    monkeypatch.setenv("PREFECT_API_DATABASE_CONNECTION_URL", "sqlite+aiosqlite:////nonexistent/state.db")
    result = threadmed("synth", "--out", "dumps", "--posts", "20", cwd=tmp_path)
    assert result.returncode == 1
    assert error_lines(result) == [
        "Writing dumps of 20 r/AskDocs posts (seed 0, subreddit layout) to dumps",
        STARTING_LINE,
        "Error: Prefect's temporary API server exited (status 3) before it started: start one with "
        "`threadmed server start`, whose log says why",
    ]
