"""`threadmed server start|stop|status`: a Prefect server kept for the project's state, which commands use."""

import json
import socket
import subprocess
import urllib.request
from pathlib import Path

import pytest

from flows.cli.server import is_running
from flows.cli.temporary_server import STARTING_LINE
from tests.flows.cli.terminal import threadmed, threadmed_here
from tests.prefect_db import seed


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def filtered(api_url: str, what: str) -> list[dict]:
    """Every record of a kind (flows, flow_runs) the Prefect server at `api_url` holds."""
    request = urllib.request.Request(
        f"{api_url}/{what}/filter", data=b"{}", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as reply:
        return json.loads(reply.read())


def flow_runs(api_url: str) -> list[tuple[str, str]]:
    """(flow name, state) of every flow run the server holds."""
    names = {flow["id"]: flow["name"] for flow in filtered(api_url, "flows")}
    return sorted((names[run["flow_id"]], run["state_type"]) for run in filtered(api_url, "flow_runs"))


@pytest.mark.slow
def test_a_started_server_is_used_by_every_command_until_it_is_stopped(tmp_path):
    home, port = tmp_path / "home", free_port()
    seed(home / "prefect.db")
    env = {"PREFECT_HOME": str(home), "PREFECT_SERVER_API_PORT": str(port)}
    api_url, dashboard = f"http://127.0.0.1:{port}/api", f"http://127.0.0.1:{port}"
    started = threadmed("server", "start", cwd=tmp_path, env=env)
    assert (started.returncode, started.stderr) == (0, "")
    pid = int((home / "server.pid").read_text())
    try:
        assert started.stdout == (
            f"Prefect server running at {dashboard} (state in {home}, log in {home / 'server.log'}); every "
            "threadmed command with this state uses it; `threadmed server stop` stops it.\n"
        )
        status = threadmed("server", "status", cwd=tmp_path, env=env)
        assert (status.returncode, status.stdout) == (
            0,
            f"Prefect server running at {dashboard} (pid {pid}, state in {home}): commands use it.\n",
        )
        again = threadmed("server", "start", cwd=tmp_path, env=env)
        assert (again.returncode, again.stdout) == (0, started.stdout)
        assert int((home / "server.pid").read_text()) == pid  # the same server, not a second one
        synth = threadmed("synth", "--posts", "5", "--out", "dumps", cwd=tmp_path, env=env)
        assert (synth.returncode, synth.stderr) == (0, "")  # no temporary server started: no line saying so
        assert flow_runs(api_url) == [("synthesize-dumps", "COMPLETED")]
    finally:
        stopped = threadmed("server", "stop", cwd=tmp_path, env=env)
    assert (stopped.returncode, stopped.stdout) == (
        0,
        f"Prefect server stopped (pid {pid}, state in {home}).\n",
    )
    assert not is_running(pid)
    assert not (home / "server.pid").exists()
    status = threadmed("server", "status", cwd=tmp_path, env=env)
    assert (status.returncode, status.stdout) == (
        1,
        f"No Prefect server running for {home}: each command starts a temporary one (seconds); "
        "`threadmed server start` keeps one running.\n",
    )


@pytest.fixture
def nothing_served(tmp_path, monkeypatch) -> Path:
    """A PREFECT_HOME no server holds (the settings' port is one nothing listens on); returns it."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("PREFECT_HOME", str(home))
    monkeypatch.setenv("PREFECT_SERVER_API_PORT", str(free_port()))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    return home


def test_stop_never_signals_a_process_that_the_pid_file_names_but_is_not_a_server(tmp_path, nothing_served):
    with subprocess.Popen(["sleep", "600"]) as sleeper:
        try:
            (nothing_served / "server.pid").write_text(str(sleeper.pid))
            result = threadmed_here("server", "stop", cwd=tmp_path)
            assert (result.returncode, result.stdout) == (1, "")
            assert result.stderr == (
                f"Error: {nothing_served / 'server.pid'} names pid {sleeper.pid}, which is not a Prefect "
                "server (sleep 600): remove the file\n"
            )
            assert sleeper.poll() is None
        finally:
            sleeper.kill()


def test_a_pid_file_of_an_ended_process_is_no_server_and_is_removed(tmp_path, nothing_served):
    gone = subprocess.Popen(["true"])
    gone.wait()
    (nothing_served / "server.pid").write_text(str(gone.pid))
    status = threadmed_here("server", "status", cwd=tmp_path)
    assert status.returncode == 1
    assert status.stdout.startswith(f"No Prefect server running for {nothing_served}: ")
    stopped = threadmed_here("server", "stop", cwd=tmp_path)
    assert (stopped.returncode, stopped.stdout) == (0, f"No Prefect server running for {nothing_served}.\n")
    assert not (nothing_served / "server.pid").exists()


@pytest.mark.slow
def test_a_command_without_a_server_says_it_starts_a_temporary_one_after_its_own_first_line(
    tmp_path, nothing_served
):
    synth = threadmed("synth", "--posts", "5", "--out", "dumps", cwd=tmp_path)  # this environment's home
    assert synth.returncode == 0, synth.stderr
    first = "Writing dumps of 5 r/AskDocs posts (seed 0, subreddit layout) to dumps"
    assert synth.stdout.splitlines()[0] == first
    assert synth.stderr == STARTING_LINE + "\n"


def test_start_refuses_an_address_another_program_listens_at(tmp_path, nothing_served, monkeypatch):
    """Prefect's server would log that it cannot bind and exit; at the project's quiet level, silently."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        monkeypatch.setenv("PREFECT_SERVER_API_PORT", str(port))
        result = threadmed_here("server", "start", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"Error: another program listens at 127.0.0.1:{port}: set PREFECT_SERVER_API_PORT to a free port for "
        "every command\n"
    )
    assert list(nothing_served.iterdir()) == []  # no server started, no pid file
