"""The real `threadmed` command, in a subprocess or in this process, and what a user's terminal shows of its
errors."""

import contextlib
import os
import pty
import re
import select
import subprocess
import sys
import time
import warnings
from pathlib import Path
from unittest import mock

import typer
from prefect.flows import Flow
from typer.testing import CliRunner

from flows.cli import app
from flows.cli.errors import errors
from flows.cli.render import console

THREADMED = str(Path(sys.executable).with_name("threadmed"))
# Root reads and writes through any permission bits; without these capabilities it obeys them like a user.
UNPRIVILEGED = ["setpriv", "--inh-caps=-dac_override,-dac_read_search",
                "--bounding-set=-dac_override,-dac_read_search"]  # fmt: skip
OFFLINE_MODELS = ["--models", "threadmed/deferral", "--judge", "threadmed/overlap-judge"]
# How long a command in a subprocess may run: a guard against a hang, not a speed bound. Under a load
# average of 10, importing and starting a temporary Prefect server alone can take minutes.
COMMAND_TIMEOUT_S = 900


# The app's consoles made at import: each fixed its width then if COLUMNS was set (80 in an xdist worker).
# A new process reads COLUMNS as it prints, and so do they without a width of their own (rich's `_width`).
IMPORTED_CONSOLES = (console, errors)


def threadmed(
    *arguments: object, cwd: Path, unprivileged: bool = False, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    prefix = UNPRIVILEGED if unprivileged and os.geteuid() == 0 else []
    environment = {**os.environ, "COLUMNS": "200", **(env or {})}  # a wide terminal: one message, one line
    command = [*prefix, THREADMED, *map(str, arguments)]
    return subprocess.run(
        command, capture_output=True, text=True, cwd=cwd, env=environment, timeout=COMMAND_TIMEOUT_S
    )


# What rich and Prefect write to a terminal besides text: colours, cursor moves, hyperlinks.
TERMINAL_CODES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def run_in_terminal(command: list[str], cwd: Path, env: dict[str, str]) -> str:
    """What a terminal shows of `command` run in it (a pseudo-terminal as stdin, stdout and stderr), its
    colours and cursor moves removed; fails if it does not exit within COMMAND_TIMEOUT_S."""
    primary, secondary = pty.openpty()
    shown = bytearray()
    deadline = time.monotonic() + COMMAND_TIMEOUT_S
    terminal = {"stdin": secondary, "stdout": secondary, "stderr": secondary}
    with subprocess.Popen(command, cwd=cwd, env=env, **terminal) as process:
        os.close(secondary)
        while time.monotonic() < deadline:
            if not select.select([primary], [], [], 1.0)[0]:
                continue
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # EIO: every writer of the terminal is gone
                break
            if not chunk:
                break
            shown += chunk
        process.wait(timeout=max(1.0, deadline - time.monotonic()))
    os.close(primary)
    return TERMINAL_CODES.sub("", shown.decode(errors="replace")).replace("\r\n", "\n")


def threadmed_here(*arguments: object, cwd: Path, columns: int = 200) -> subprocess.CompletedProcess:
    """`threadmed(...)` run in this process: the same app, its output and its exit status, `columns` wide.

    A new interpreter pays every import again (seconds of CPU: litellm, scipy, Prefect's client; `consult`
    commands also load the KB and the drug libraries); here they are paid once per test worker, and a flow
    the command starts runs on the worker's Prefect API (conftest.py). Keep the subprocess for a test that
    starts a server, runs unprivileged, sets its own environment (Prefect reads its settings once, at
    import; `build --salt` sets the salt's variable), or checks signals or how the process exits. A crash
    raises here rather than exiting 1. Warnings the command raises are added to its stderr (a new
    interpreter prints them there); log records are not.
    """
    runner = CliRunner(env={"COLUMNS": str(columns)})  # rich reads it: one message, one line
    with contextlib.ExitStack() as stack:
        stack.enter_context(contextlib.chdir(cwd))
        for imported in IMPORTED_CONSOLES:
            stack.enter_context(mock.patch.object(imported, "_width", None))
        raised = stack.enter_context(warnings.catch_warnings(record=True))
        result = runner.invoke(app, list(map(str, arguments)), prog_name="threadmed", catch_exceptions=False)
    shown = "".join(warnings.formatwarning(w.message, w.category, w.filename, w.lineno) for w in raised)
    return subprocess.CompletedProcess(
        ["threadmed", *map(str, arguments)], result.exit_code, result.stdout, result.stderr + shown
    )


def error_lines(result: subprocess.CompletedProcess) -> list[str]:
    """The lines the command printed, with rich's box drawing (usage errors) removed."""
    lines = [line.strip(" │╭╮╰╯─") for line in (result.stdout + result.stderr).splitlines()]
    return [line for line in lines if line and line != "Error"]


def assert_usage_error(result: subprocess.CompletedProcess, message: str) -> None:
    """Click's usage error: two lines of usage, then the message (wrapped only if the terminal is narrow)."""
    assert "Traceback" not in result.stdout + result.stderr
    assert result.returncode == 2
    lines = error_lines(result)
    assert lines[1].startswith("Try 'threadmed ")
    assert " ".join(lines[2:]) == message
    assert len(lines) <= 4


def threadmed_before_any_flow(*arguments: object, cwd: Path) -> subprocess.CompletedProcess:
    """`threadmed_here`, failing the test if the command starts a Prefect flow: for refusals that must come
    before any flow runs, whatever the flow would check itself."""

    def no_flow(flow: Flow, *_: object, **__: object) -> None:
        raise AssertionError(f"the command started the {flow.name} flow before refusing")

    with mock.patch.object(Flow, "__call__", no_flow):
        return threadmed_here(*arguments, cwd=cwd)


FLOW_STARTS = "<the flow starts here>"


def threadmed_until_its_flow(*arguments: object, cwd: Path) -> list[str]:
    """The lines `threadmed_here` prints before its first Prefect flow starts (and so before Prefect's
    server does), then FLOW_STARTS: the flow itself is not run, the command ends there."""

    def stop_at_flow(flow: Flow, *_: object, **__: object) -> None:
        print(FLOW_STARTS)
        raise typer.Exit(0)

    with mock.patch.object(Flow, "__call__", stop_at_flow):
        result = threadmed_here(*arguments, cwd=cwd)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.splitlines()


def imported(module: str) -> str:
    """What `threadmed_until_import` prints when `module` is first imported."""
    return f"<{module} imported>"


# `threadmed` in a new process that stops (exit 0) when it first imports a module: the audit event of an
# import, not of a lookup (tasks/__init__.py looks litellm up without importing it).
STOPPED_AT_IMPORT = """
import os, sys

module = sys.argv[1]

def stop_at_import(event, arguments):
    if event == "import" and arguments[0] == module:
        print(f"<{module} imported>", flush=True)
        os._exit(0)

sys.addaudithook(stop_at_import)
sys.argv = ["threadmed", *sys.argv[2:]]
from flows.cli import main
main()
"""


def threadmed_until_import(module: str, *arguments: object, cwd: Path) -> list[str]:
    """The lines `threadmed` prints before it first imports `module`, then `imported(module)`; fails if it
    exits otherwise."""
    said = subprocess.run(
        [sys.executable, "-c", STOPPED_AT_IMPORT, module, *map(str, arguments)],
        cwd=cwd, env={**os.environ, "COLUMNS": "200"}, capture_output=True, text=True,
        timeout=COMMAND_TIMEOUT_S,
    )  # fmt: skip
    marker = imported(module)
    assert said.returncode == 0 and said.stdout.endswith(marker + "\n"), said.stdout + said.stderr
    return said.stdout.splitlines()
