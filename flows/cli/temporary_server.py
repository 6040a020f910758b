"""The temporary Prefect server of a `threadmed` command, in its own session and tied to its parent.

Prefect starts a temporary server when no PREFECT_API_URL is set. Its own one shares the terminal's
process group, so Ctrl-C kills the server first and the command then spends minutes retrying a dead
API; and it outlives a parent killed with kill -9 (about 230 MB each time). This one is started the
same way (`SubprocessASGIServer`, so Prefect's start and stop logic still applies), but in a new
session, which a terminal's SIGINT does not reach, and it ends itself once its parent is gone. It logs
only critical errors unless PREFECT_SERVER_LOGGING_LEVEL says otherwise: stopping it while events are
still queued (at every exit, and at once on Ctrl-C) makes it log tracebacks of cancelled writes on the
user's terminal, about the run history only.

A command that runs a flow starts this server process itself, before it imports Prefect
(flows/cli/server_launch.py); Prefect starts it where none was (a command that imported Prefect first).
Importing this module makes it the server Prefect starts (flows/cli/process.py imports it when Prefect
loads its server module). `python -m flows.cli.temporary_server PARENT_PID UVICORN_ARGS...` is the server
process itself.
"""

import asyncio
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from prefect.server.api.server import SubprocessASGIServer
from prefect.settings import get_current_settings

from flows.cli.errors import errors
from flows.cli.server_launch import STARTING_LINE, server_command, server_environment, startup_fix
from tasks.core.preflight import UserError

PARENT_POLL_S = 0.5
STOP_GRACE_S = 5.0
POOL_LOGGER = "sqlalchemy.pool.impl.AsyncAdaptedQueuePool"  # the pool Prefect's server uses (aiosqlite)


class DetachedTemporaryServer(SubprocessASGIServer):
    """Prefect's temporary server, started in a new session by a process that watches its parent."""

    def start(self, timeout: int | None = None) -> None:
        """Start the server, saying so first (it takes seconds); one that does not answer in time is one line
        with the fix, not a traceback."""
        if not self.running:  # Prefect calls this for every client it makes
            errors.print(STARTING_LINE, style="dim", markup=False, soft_wrap=True)
        try:
            super().start(timeout)
        except RuntimeError as error:
            if not str(error).startswith("Timed out while attempting to connect"):
                raise
            timeout_s = timeout or get_current_settings().server.ephemeral.startup_timeout_seconds
            raise UserError(startup_fix(timeout_s)) from None

    def _run_uvicorn_command(self) -> subprocess.Popen[Any]:
        # The same command and environment as SubprocessASGIServer (prefect 3.8.8), behind our watchdog.
        return subprocess.Popen(
            server_command(["--host", "127.0.0.1", "--port", str(self.port)]),
            env={
                **server_environment(os.environ),
                **get_current_settings().to_environment_variables(exclude_unset=True),
            },
            start_new_session=True,
        )


def stop_temporary_server(timeout_s: float) -> None:
    """Stop the temporary server now if this process started one (for exits that skip atexit)."""
    server = SubprocessASGIServer._instances.get(None)
    process = server.server_process if server is not None else None
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()


def end_when_orphaned(parent_pid: int) -> None:
    """Poll the parent; once it is gone (even by kill -9), stop this server, and kill it if it hangs."""
    while os.getppid() == parent_pid:
        time.sleep(PARENT_POLL_S)
    os.kill(os.getpid(), signal.SIGTERM)  # uvicorn's graceful shutdown
    time.sleep(STOP_GRACE_S)
    os._exit(1)


class DropShutdownCancellation(logging.Filter):
    """Drops a connection-pool error caused by the server's own shutdown cancelling a request.

    Stopping the server while a client still waits on it (Ctrl-C mid-run) cancels that request, and
    SQLAlchemy's pool then logs the cancelled rollback as an error with a traceback, on the user's
    terminal, after the one line that says what was kept.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError))


def serve(parent_pid: int, uvicorn_args: list[str]) -> None:
    import uvicorn.main

    logging.getLogger(POOL_LOGGER).addFilter(DropShutdownCancellation())
    threading.Thread(target=end_when_orphaned, args=(parent_pid,), daemon=True).start()
    uvicorn.main.main(args=uvicorn_args, prog_name="uvicorn")


# Registered as the default (port None) instance, which every Prefect client that needs the
# temporary API asks for (as prefect.testing.utilities.prefect_test_harness does with its own).
DetachedTemporaryServer()

if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2:])
