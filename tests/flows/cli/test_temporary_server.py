"""The temporary server's logs, in a subprocess: importing its module registers the server Prefect starts."""

import os
import subprocess
import sys

import pytest

from flows.cli.temporary_server import STARTING_LINE
from tests.flows.cli.terminal import COMMAND_TIMEOUT_S, error_lines, threadmed

SHUTDOWN_LOGGING = """
import asyncio, logging, sys
from flows.cli.temporary_server import POOL_LOGGER, DropShutdownCancellation
pool = logging.getLogger(POOL_LOGGER)
pool.propagate = False
pool.addHandler(logging.StreamHandler(sys.stdout))
pool.addFilter(DropShutdownCancellation())
for error in (asyncio.CancelledError("shutdown"), RuntimeError("disk full")):
    try:
        raise error
    except BaseException:
        pool.error("reset failed: %s", type(error).__name__, exc_info=True)
"""


def test_a_pool_reset_cancelled_by_shutdown_is_dropped_and_any_other_pool_error_kept():
    logged = subprocess.run(
        [sys.executable, "-c", SHUTDOWN_LOGGING],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        check=True,
    )
    assert [line for line in logged.stdout.splitlines() if line.startswith("reset failed")] == [
        "reset failed: RuntimeError"
    ]


def test_a_temporary_server_that_does_not_start_in_time_is_one_line_with_the_fix(tmp_path, monkeypatch):
    # No server answers within 0 s: one started as the command began may be up by its first flow, in 1 s.
    monkeypatch.setenv("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "0")
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    result = threadmed("synth", "--out", "dumps", "--posts", "20", cwd=tmp_path)
    assert "Traceback" not in result.stdout + result.stderr
    assert result.returncode == 1
    assert error_lines(result) == [
        "Writing dumps of 20 r/AskDocs posts (seed 0, subreddit layout) to dumps",  # before any start-up
        STARTING_LINE,
        "Error: Prefect's temporary API server did not start within 0 s (a busy machine starts it slowly): "
        "set PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS higher (e.g. 300), or start one for every "
        "command with `threadmed server start`",
    ]


SERVER_LOGGING_LEVEL = """
import subprocess
from flows.cli.temporary_server import DetachedTemporaryServer
started = {}
subprocess.Popen = lambda command, env, **options: started.update(env)
DetachedTemporaryServer(port=8999)._run_uvicorn_command()
print(started.get("PREFECT_SERVER_LOGGING_LEVEL"))
"""


@pytest.mark.slow
def test_the_temporary_server_logs_only_critical_errors_unless_the_user_sets_its_level():
    """Stopped while events are queued (every exit; at once on Ctrl-C), it would log tracebacks of cancelled
    writes on the user's terminal, before the interrupt's one line."""
    environment = {k: v for k, v in os.environ.items() if k != "PREFECT_SERVER_LOGGING_LEVEL"}
    levels = [
        subprocess.run(
            [sys.executable, "-c", SERVER_LOGGING_LEVEL],
            capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=True, env=env,
        ).stdout.strip()
        for env in (environment, {**environment, "PREFECT_SERVER_LOGGING_LEVEL": "DEBUG"})
    ]  # fmt: skip
    assert levels == ["CRITICAL", "DEBUG"]
