"""A command's temporary Prefect server, started as soon as the command knows it runs a flow.

Left to Prefect (flows/cli/temporary_server.py), the server starts only once the command has imported what
it runs and then Prefect's server module (about 4 s), and the command waits for it (7-8 s more): the two add
up, and a flow command without a running server took 16-22 s. Started here instead, the server process
imports and starts while the command imports, and Prefect is pointed at it (PREFECT_API_URL) before Prefect
is imported, so it neither imports its server module nor starts a server of its own.

- Only where the command will need one: no API chosen (the user's, or a running server found by
  prefect_env.py) and Prefect not imported yet (its settings are read once, at import).
- The listening socket is the command's, made before the server process and handed to it (uvicorn's
  `--fd`): no other program can take the port, and a request sent before the server is up waits in the
  socket's queue instead of being refused.
- The command waits for the server once, as its first flow starts (Prefect imports `prefect.flow_engine`
  then), within PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS; a server that does not start in time, or
  exits, is one line with the fix.
- The server process is flows/cli/temporary_server.py's: in a session of its own, ended with its parent.
  It is stopped at the command's exit, and at once on Ctrl-C (flows/cli/process.py).

Standard library only until the wait: it runs before Prefect is imported.
"""

import atexit
import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path

from flows.cli.prefect_env import API_URL, settings
from flows.cli.process import AfterImport

SERVER_LOGGING_LEVEL, QUIET = "PREFECT_SERVER_LOGGING_LEVEL", "CRITICAL"
STARTING_LINE = (
    "Starting a temporary Prefect server for this command (seconds; `threadmed server start` keeps one "
    "running for every command)"
)
LISTEN_BACKLOG = 128  # uvicorn's own
EXIT_STOP_S = 5.0  # as Prefect stops its temporary server
RETRY_S = 0.1


class _Launched:
    process: subprocess.Popen[bytes] | None = None
    api_url = ""


def start_temporary_server() -> None:
    """Start the temporary server now if the command will need one (see the module's docstring); its start-up
    line comes now too. Called by a command that runs a flow, once its first line is out."""
    if _Launched.process is not None or "prefect" in sys.modules or API_URL in settings(os.environ):
        return
    from flows.cli.errors import errors

    with socket.create_server(("127.0.0.1", 0), backlog=LISTEN_BACKLOG) as listener:
        descriptor = listener.fileno()
        _Launched.process = subprocess.Popen(
            server_command(["--fd", str(descriptor)]),
            env=server_environment(os.environ),  # before PREFECT_API_URL is set: the server is no client
            start_new_session=True,
            pass_fds=(descriptor,),
        )
        _Launched.api_url = f"http://127.0.0.1:{listener.getsockname()[1]}/api"
    os.environ[API_URL] = _Launched.api_url
    errors.print(STARTING_LINE, style="dim", markup=False, soft_wrap=True)
    atexit.register(stop_started_server, EXIT_STOP_S)
    sys.meta_path.insert(0, AfterImport("prefect.flow_engine", lambda _: wait_until_serving()))


def server_command(listen: Sequence[str]) -> list[str]:
    """The temporary server's process (flows/cli/temporary_server.py, watching this process) serving
    Prefect's API where `listen` says (uvicorn's `--host`/`--port`, or `--fd`), as Prefect 3.8.8's
    SubprocessASGIServer runs it."""
    spec = importlib.util.find_spec("prefect")  # where it is, without importing it
    assert spec is not None and spec.origin is not None, "Prefect is a dependency of the project"
    return [
        sys.executable, "-m", "flows.cli.temporary_server", str(os.getpid()),
        "--app-dir", str(Path(spec.origin).parent.parent),
        "--factory", "prefect.server.api.server:create_app",
        *listen,
        "--log-level", "error", "--lifespan", "on",
    ]  # fmt: skip


def server_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The server's environment: `environ`, quiet unless it sets the server's logging level (stopped while
    events are queued, at every exit, it would log tracebacks of cancelled writes on the user's terminal),
    with Prefect's own settings of a temporary server."""
    return {
        SERVER_LOGGING_LEVEL: QUIET,
        **environ,
        "PREFECT_UI_ENABLED": "0",
        "PREFECT__SERVER_EPHEMERAL": "1",
        "PREFECT__SERVER_FINAL": "1",
    }


def wait_until_serving() -> None:
    """Wait until the started server answers, within Prefect's start-up time-out; else one line with the fix
    (a UserError)."""
    from prefect.settings import get_current_settings

    from tasks.core.preflight import UserError

    process = _Launched.process
    assert process is not None
    timeout_s = get_current_settings().server.ephemeral.startup_timeout_seconds
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        if process.poll() is not None:
            raise UserError(
                f"Prefect's temporary API server exited (status {process.returncode}) before it started: "
                "start one with `threadmed server start`, whose log says why"
            )
        try:
            # One request: it waits in the socket's queue until the server accepts it.
            with urllib.request.urlopen(f"{_Launched.api_url}/health", timeout=left) as reply:
                if reply.status == 200:
                    return
        except OSError:  # reset by a server that exited, or timed out: the loop says which
            pass
        time.sleep(RETRY_S)
    raise UserError(startup_fix(timeout_s))


def startup_fix(timeout_s: float) -> str:
    return (
        f"Prefect's temporary API server did not start within {timeout_s:g} s (a busy machine starts it "
        "slowly): set PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS higher (e.g. 300), or start one for "
        "every command with `threadmed server start`"
    )


def stop_started_server(timeout_s: float) -> None:
    """Stop the server `start_temporary_server` started, if it runs: SIGTERM, then SIGKILL after
    `timeout_s`."""
    process = _Launched.process
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
