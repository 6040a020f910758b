"""How a `threadmed` process behaves around its command: its temporary server, Ctrl-C and its exit.

- The temporary Prefect server is flows/cli/temporary_server.py's (own session, ends with its parent),
  started by a command that runs a flow as it begins (flows/cli/server_launch.py), else put in place
  when Prefect first loads its server module, so commands that never need it never pay for it.
- Ctrl-C (handled by a thread of its own, whatever the main thread is waiting on: `watch_interrupts`): no
  call is sent any more, and the flow run is reported Crashed. The calls in flight are
  waited for, INTERRUPT_WAIT_S at most, so every reply that arrives (paid for) is in the ledger; then the
  process stops the server, prints one line saying what was kept, how many calls in flight it left
  (their replies would be lost, and a re-run asks them again) and how to resume, and exits 130. A second
  Ctrl-C leaves at once. No half-written file counts.
- At exit, Prefect's event-loop threads are stopped before the interpreter finalizes: left alive,
  they keep DuckDB objects alive past DuckDB's teardown, which then prints `nanobind: leaked ...`.
- A command's last line is its own: Prefect's services, finishing at exit, log only their failures.
- A command that ended (its exit status set) leaves once every exit hook has run, its output flushed,
  without the interpreter's teardown of every module it imported: about 0.45 s of each command, for
  Prefect's import graph mostly, that writes nothing.

Signal handlers are process-wide, so what the interrupt line says is process-wide state too
(`on_interrupt`).
"""

import atexit
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, ClassVar

INTERRUPTED_EXIT_CODE = 130
# How long Ctrl-C waits for the replies of calls in flight: most replies come within it, and a user who
# pressed Ctrl-C is not kept waiting on a slow one for the call's whole time-out (120 s by default).
INTERRUPT_WAIT_S = 15.0
INTERRUPT_GRACE_S = 3.0  # for the server to record the crash
SERVER_STOP_S = 2.0
PREFECT_THREAD_JOIN_S = 5.0
# Prefect's services sending events and logs to its server: their loggers are named after their classes.
PREFECT_SERVICES = ("EventsWorker", "APILogWorker")


def default_interrupt_line(abandoned: int) -> str:
    return f"interrupted{abandoned_words(abandoned)}; re-run the same command to resume"


def abandoned_words(abandoned: int) -> str:
    """What an interrupted command says of the calls in flight it did not wait for (none: nothing)."""
    if not abandoned:
        return ""
    calls = "1 call" if abandoned == 1 else f"{abandoned} calls"
    return f", {calls} in flight left after {INTERRUPT_WAIT_S:g} s (a re-run asks them again)"


class _Interrupt:
    describe: Callable[[int], str] = staticmethod(default_interrupt_line)
    received = False
    exiting = threading.Lock()
    # Each SIGINT reaches the watcher at once and the main thread's handler when (if) it runs bytecode again:
    # the Ctrl-Cs pressed are the larger of their counts.
    seen: ClassVar[dict[str, int]] = {"watcher": 0, "handler": 0}
    counting = threading.Lock()
    handler_ran = threading.Event()  # the main thread's handler ran: its crash report, if any, is started
    reporter: threading.Thread | None = None  # reporting the flow run Crashed


def on_interrupt(describe: Callable[[int], str]) -> None:
    """Set the line printed when the command is interrupted, given how many calls in flight were left
    (called at exit, so counts are current)."""
    _Interrupt.describe = staticmethod(describe)


def run(app: Callable[[], Any]) -> None:
    """Run the Typer `app` as the `threadmed` process."""
    atexit.register(stop_prefect_threads)  # registered first, so it runs after Prefect's own exit hooks
    sys.meta_path.insert(0, AfterImport("prefect.server.api.server", use_detached_temporary_server))
    sys.meta_path.insert(0, AfterImport("prefect", without_flow_heartbeats))
    signal.signal(signal.SIGINT, interrupted)
    watch_interrupts()
    try:
        app()
    except SystemExit as ended:  # Typer ends every command with SystemExit
        quiet_prefect_service_drain()
        if _Interrupt.received:
            exit_interrupted()
        if (status := exit_status(ended.code)) is None:
            raise
        leave_without_teardown(status)
    except BaseException:
        if _Interrupt.received:
            exit_interrupted()
        raise
    finally:
        # The command is over: stopping the server and Prefect's threads takes a moment, and a Ctrl-C
        # inside those exit hooks would only turn a finished command into a traceback.
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def watch_interrupts() -> None:
    """Handle Ctrl-C in a thread of its own, woken through CPython's wake-up fd.

    CPython runs a Python signal handler only in the main thread, when it next runs bytecode; the C-level
    handler, in whichever thread the signal lands, only flags it. A command's main thread waits on its tasks
    with no time-out (Prefect's `as_completed`), and a SIGINT caught as it goes into that wait, or caught by
    another thread, stayed flagged until a task ended: with every call held at the provider, never (the
    command went on sending attempts for 10 minutes). The C-level handler also writes the signal's number to
    the wake-up fd, at once, whatever the main thread is doing: this thread reads it.
    """
    read_end, write_end = os.pipe()  # not inherited by child processes
    os.set_blocking(write_end, False)
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    threading.Thread(target=read_interrupts, args=(read_end,), daemon=True, name="interrupt-watcher").start()


def read_interrupts(read_end: int) -> None:
    while True:
        for signum in os.read(read_end, 64):
            if signum == signal.SIGINT:
                interrupt_seen("watcher")


def interrupted(signum: int, frame: Any) -> None:
    """The main thread's SIGINT handler: the flow run's crash report (only the main thread knows its flow
    run), and the interrupt itself unless the watcher had it already."""
    report_crash(current_flow_run_id())
    _Interrupt.handler_ran.set()
    interrupt_seen("handler")


def interrupt_seen(by: str) -> None:
    """A SIGINT as `by` saw it. The first Ctrl-C: send no more calls, then exit 130 from another thread once
    the calls in flight are recorded (INTERRUPT_WAIT_S at most); the second: exit now.

    Nothing is raised into the main thread: it may be inside native code (DuckDB, tiktoken, Arrow) that
    does not survive an exception from a signal handler, and unwinding would wait on calls in flight with
    no bound.
    """
    with _Interrupt.counting:
        pressed_before = max(_Interrupt.seen.values())
        _Interrupt.seen[by] += 1
        pressed = max(_Interrupt.seen.values())
    if pressed == pressed_before:  # the other one saw this SIGINT first
        return
    if pressed > 1:  # a second Ctrl-C: now
        exit_interrupted()
    _Interrupt.received = True
    logging.disable(logging.CRITICAL)  # whatever the main thread still logs: the one line says it all
    if (calls := sys.modules.get("tasks.llm.in_flight")) is not None:  # a command that never called has none
        calls.stop_sending()
    threading.Thread(target=stop_after_interrupt, daemon=True).start()


def current_flow_run_id() -> Any:
    """The flow run the main thread is in (the handler runs in its context), or None."""
    context = sys.modules.get("prefect.context")
    flow_run_context = context.FlowRunContext.get() if context is not None else None
    return flow_run_context.flow_run.id if flow_run_context and flow_run_context.flow_run else None


def report_crash(flow_run_id: Any) -> None:
    """Start reporting the flow run Crashed (once), while the calls in flight come back."""
    with _Interrupt.counting:
        if flow_run_id is None or _Interrupt.reporter is not None:
            return
        _Interrupt.reporter = threading.Thread(target=report_crashed, args=(flow_run_id,), daemon=True)
    _Interrupt.reporter.start()


def stop_after_interrupt() -> None:
    """Wait for the calls in flight to be recorded, and for the crash report (started by the main thread's
    handler, INTERRUPT_GRACE_S at most, then given as long), then exit."""
    if (calls := sys.modules.get("tasks.llm.in_flight")) is not None:
        calls.wait_for_calls(INTERRUPT_WAIT_S)
    _Interrupt.handler_ran.wait(INTERRUPT_GRACE_S)
    if (reporter := _Interrupt.reporter) is not None:
        reporter.join(INTERRUPT_GRACE_S)
    exit_interrupted()


def report_crashed(flow_run_id: Any) -> None:
    """Mark the flow run Crashed, so a server that outlives the command does not show it as running."""
    from prefect.client.orchestration import get_client
    from prefect.states import Crashed

    try:
        with get_client(sync_client=True) as client:
            client.set_flow_run_state(flow_run_id, Crashed(message="Interrupted (Ctrl-C)"), force=True)
    except Exception:  # best effort while exiting: an unreachable server changes nothing for the user
        return


def exit_interrupted() -> None:
    """Stop the temporary server, print the interrupt line (counting the calls still in flight, left) and
    exit 130, skipping threads still busy."""
    if not _Interrupt.exiting.acquire(blocking=False):
        return  # another thread is exiting already
    calls = sys.modules.get("tasks.llm.in_flight")
    abandoned = calls.wait_for_calls(0) if calls is not None else 0
    if "flows.cli.server_launch" in sys.modules:
        sys.modules["flows.cli.server_launch"].stop_started_server(SERVER_STOP_S)
    if "flows.cli.temporary_server" in sys.modules:
        sys.modules["flows.cli.temporary_server"].stop_temporary_server(SERVER_STOP_S)
    sys.stdout.flush()
    sys.stderr.write(_Interrupt.describe(abandoned) + "\n")
    sys.stderr.flush()
    os._exit(INTERRUPTED_EXIT_CODE)


def exit_status(code: object) -> int | None:
    """The process's exit status for `SystemExit(code)`, or None when Python would print the code (a
    message) and end with 1: that exit is left to the interpreter."""
    if code is None:
        return 0
    return code if isinstance(code, int) else None


def quiet_prefect_service_drain() -> None:
    """Below the command's last line, nothing from Prefect's services: at exit they finish sending the flow
    run's events and logs to the server (for its UI; the command's results are written), and on a busy
    machine logged "Still processing items: N items remaining..." as a WARNING there. Their failures are
    logged at ERROR (and by prefect._internal.concurrency) and still show."""
    for service in PREFECT_SERVICES:
        logging.getLogger(service).setLevel(logging.ERROR)


def leave_without_teardown(status: int) -> None:
    """Exit with `status` as the interpreter would, less its teardown of the modules imported: its first two
    exit steps, then the output flushed, then leave."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # CPython's own exit steps, run here: the threading module's exit hooks (idle thread pools told to end)
    # and the wait for every thread that is not a daemon; then the exit hooks, last registered first.
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe: the interpreter's own exit says so
        raise SystemExit(status) from None
    os._exit(status)


def use_detached_temporary_server(_: ModuleType) -> None:
    importlib.import_module("flows.cli.temporary_server")


def without_flow_heartbeats(prefect: ModuleType) -> None:
    """The command's flow runs send no heartbeat unless the user set their frequency
    (PREFECT_FLOWS_HEARTBEAT_FREQUENCY, in the environment or a profile).

    Only deployment runs are watched for missed heartbeats (deployments/dead_runs.py; prefect.yaml gives them
    30 s), and Prefect 3.8.8's heartbeat thread, which sleeps in steps of one second, held the end of every
    flow run for up to a second (`_send_heartbeats` joins it): half a second of a short command, on average.
    """
    flows = prefect.context.GLOBAL_SETTINGS_CONTEXT.settings.flows
    if "heartbeat_frequency" not in flows.model_fields_set:
        flows.heartbeat_frequency = None


def stop_prefect_threads() -> None:
    """Stop Prefect's daemon event-loop threads (the global loop and run_sync's) and wait for them."""
    threads = sys.modules.get("prefect._internal.concurrency.threads")
    if threads is None:
        return
    loops = [threads._global_loop, threads._run_sync_loop]
    for loop in loops:
        if loop is not None:
            loop.shutdown()
    for loop in loops:
        if loop is not None and loop.thread.is_alive():
            loop.thread.join(PREFECT_THREAD_JOIN_S)


class AfterImport(importlib.abc.MetaPathFinder):
    """Call `then(module)` right after the module `name` is first imported (then step aside)."""

    def __init__(self, name: str, then: Callable[[ModuleType], None]) -> None:
        self.name, self.then = name, then

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        execute, then = spec.loader.exec_module, self.then

        def exec_module(module: ModuleType) -> None:
            execute(module)
            then(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec
