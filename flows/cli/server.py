"""`threadmed server start|stop|status`: a Prefect server kept running for the project's state, which every
`threadmed` command then uses instead of starting a temporary one of its own (seconds each time).

The server is `prefect server start` under the process's settings (flows/cli/prefect_env.py: the project's
PREFECT_HOME; PREFECT_SERVER_API_HOST and PREFECT_SERVER_API_PORT, 127.0.0.1:4200 unless set), in a session
of its own (Ctrl-C in the terminal does not reach it), its output in PREFECT_HOME/server.log and its pid in
PREFECT_HOME/server.pid, Prefect's own file: `prefect server stop` stops it too, and `prefect server start
--background` refuses to start a second.
"""

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import typer

from flows.cli.errors import fail
from flows.cli.prefect_env import (
    API_URL,
    HOME,
    PROBE_TIMEOUT_S,
    apply_project_defaults,
    project_root,
    running_server,
    same_home,
    server_address,
    server_home,
)
from flows.cli.render import command_group, console

PID_FILE, LOG_FILE = "server.pid", "server.log"  # the pid file's name is Prefect's (cli/_server_utils.py)
START_POLL_S = 0.25
STOP_WAIT_S = 10.0  # a server stops on SIGTERM in about 3 s (shared/spec/prefect-notes.md)
NOT_RUNNING_EXIT_CODE = 1
PROC = Path("/proc")

app = command_group(
    "A Prefect server kept running for the project's state: every command then uses it instead of starting a "
    "temporary one (seconds each time), and its dashboard shows every run."
)


def home() -> Path:
    """This process's PREFECT_HOME (the project's, unless the user set one)."""
    apply_project_defaults(os.environ, project_root())
    return Path(os.environ[HOME]).expanduser()


def dashboard(api_url: str) -> str:
    return api_url.removesuffix("/api")


@app.command()
def start() -> None:
    """Start the project's Prefect server in the background (or say where it runs already)."""
    state = home()
    api_url = server_address(os.environ)
    if running_server(os.environ) is None:
        pid = started_pid(state)
        if pid is None:
            check_address_free(state, api_url)
            pid = launch(state)
        wait_until_answering(state, pid, api_url)
    console.print(
        f"Prefect server running at {dashboard(api_url)} (state in {state}, log in {state / LOG_FILE}); "
        "every threadmed command with this state uses it; `threadmed server stop` stops it.",
        markup=False,
        soft_wrap=True,
    )


def started_pid(state: Path) -> int | None:
    """The pid in PREFECT_HOME/server.pid if it is a live Prefect server (perhaps still starting); a file
    naming a process that ended is removed."""
    pid_file = state / PID_FILE
    pid = read_pid(pid_file)
    if pid is None:
        return None
    if not is_running(pid):
        pid_file.unlink(missing_ok=True)
        return None
    check_is_prefect(pid, pid_file)
    return pid


def check_address_free(state: Path, api_url: str) -> None:
    """Fail naming the fix when another server, or any other program, listens where this one would: the
    server would log that and exit, its log at the project's quiet level saying nothing."""
    fix = "set PREFECT_SERVER_API_PORT to a free port for every command"
    if (other := server_home(api_url)) is not None:
        fail(f"the Prefect server at {api_url} holds {other}, not {state}: stop it, or {fix}")
    address = urllib.parse.urlsplit(api_url)
    try:
        socket.create_connection((address.hostname, address.port), timeout=PROBE_TIMEOUT_S).close()
    except OSError:  # refused: nothing listens there
        return
    fail(f"another program listens at {address.hostname}:{address.port}: {fix}")


def launch(state: Path) -> int:
    """`prefect server start` in its own session, its output appended to the log; returns its pid."""
    state.mkdir(parents=True, exist_ok=True)
    with (state / LOG_FILE).open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "prefect", "server", "start"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},  # the log current, should it stop while starting
            start_new_session=True,
        )
    (state / PID_FILE).write_text(str(process.pid))
    return process.pid


def wait_until_answering(state: Path, pid: int, api_url: str) -> None:
    """Wait until the server answers for this state; fail naming why when it exits or takes longer than the
    start-up time-out (PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, as for a temporary server)."""
    timeout_s = float(os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90"))
    deadline = time.monotonic() + timeout_s
    while not same_home(server_home(api_url), os.environ):
        if not is_running(pid):
            (state / PID_FILE).unlink(missing_ok=True)
            log = state / LOG_FILE
            fail(f"the Prefect server stopped while starting: {last_line(log)} (log: {log}; another port: "
                 "set PREFECT_SERVER_API_PORT for every command)")  # fmt: skip
        if time.monotonic() > deadline:
            fail(f"the Prefect server (pid {pid}) did not answer at {api_url} within {timeout_s:g} s (a "
                 f"busy machine starts it slowly; log: {state / LOG_FILE}): run `threadmed server status` "
                 "later, or `threadmed server stop`")  # fmt: skip
        time.sleep(START_POLL_S)


@app.command()
def stop() -> None:
    """Stop the project's Prefect server started in the background (by `threadmed server start` or
    `prefect server start --background`)."""
    state = home()
    pid_file = state / PID_FILE
    pid = started_pid(state)
    if pid is None:
        if running_server(os.environ) is not None:
            fail(f"the Prefect server at {server_address(os.environ)} holds {state} but was not started in "
                 f"the background (no {pid_file}): stop it where it runs")  # fmt: skip
        console.print(f"No Prefect server running for {state}.", markup=False, soft_wrap=True)
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT_S
    while is_running(pid) and time.monotonic() < deadline:
        time.sleep(START_POLL_S)
    if is_running(pid):
        os.kill(pid, signal.SIGKILL)
    pid_file.unlink(missing_ok=True)
    console.print(f"Prefect server stopped (pid {pid}, state in {state}).", markup=False, soft_wrap=True)


@app.command()
def status() -> None:
    """Which Prefect API the commands use: the project's running server, the one PREFECT_API_URL names, or
    a temporary one each (exit 1)."""
    state = home()
    api_url = server_address(os.environ)
    chosen = os.environ.get(API_URL)
    running = running_server(os.environ)
    if chosen is not None and chosen != running:
        console.print(f"Commands use the Prefect API at {chosen} (PREFECT_API_URL).", markup=False)
        return
    if running is not None:
        pid = started_pid(state)
        started = f"pid {pid}" if pid is not None else "started in the foreground elsewhere"
        console.print(
            f"Prefect server running at {dashboard(api_url)} ({started}, state in {state}): commands use it.",
            markup=False,
            soft_wrap=True,
        )
        return
    other = server_home(api_url)
    elsewhere = f"; the server at {api_url} holds {other}" if other is not None else ""
    console.print(
        f"No Prefect server running for {state}{elsewhere}: each command starts a temporary one (seconds); "
        "`threadmed server start` keeps one running.",
        markup=False,
        soft_wrap=True,
    )
    raise typer.Exit(NOT_RUNNING_EXIT_CODE)


def read_pid(pid_file: Path) -> int | None:
    try:
        text = pid_file.read_text().strip()
    except FileNotFoundError:
        return None
    if not text.isdigit():
        fail(f"{pid_file} holds no pid ({text[:40]!r}): remove it")
    return int(text)


def is_running(pid: int) -> bool:
    """Whether a live process (not a zombie) has this pid. Not read from its command line, which Linux
    gives as empty while a busy machine's process is being set up."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: alive
        return True
    if not PROC.is_dir():  # macOS: the signal is the answer
        return True
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except FileNotFoundError:  # it ended just now
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"  # the state follows the command name in parentheses


def process_command(pid: int) -> str:
    """The command line of a process ("" when it has none to show)."""
    if not PROC.is_dir():  # macOS: ps says
        listed = subprocess.run(["ps", "-o", "command=", "-p", str(pid)], capture_output=True, text=True)
        return listed.stdout.strip()
    try:
        command = (PROC / str(pid) / "cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return ""
    return command.replace(b"\0", b" ").decode(errors="replace").strip()


def check_is_prefect(pid: int, pid_file: Path) -> None:
    """A pid file can outlive its process, and the pid be given to another: never signal that one."""
    command = process_command(pid)
    if "prefect" not in command and "uvicorn" not in command:
        fail(f"{pid_file} names pid {pid}, which is not a Prefect server ({command[:60]}): remove the file")


def last_line(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else "it printed nothing"
