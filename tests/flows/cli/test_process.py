"""The `threadmed` process as a user's terminal sees it: a busy run folder, Ctrl-C, kill -9, a quiet exit.

Every case runs the real command in a subprocess, with the temporary Prefect server it starts itself; the
runs a case needs before or after it, in this process.
"""

import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import prefect.settings
import psutil
import pytest

from tasks.llm.ledger import CallLedger
from tasks.synth.generator import generate_dumps
from tests.eval_fixtures import write_dataset
from tests.flows.cli.terminal import COMMAND_TIMEOUT_S, threadmed_here
from tests.llm_server import LLMServer
from tests.tasks.evals.test_run_lock import HOLDER

# End to end: each case starts the command and its temporary server, and several wait on it for half a minute.
pytestmark = pytest.mark.slow

THREADMED = str(Path(sys.executable).with_name("threadmed"))


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("build"))


def evaluate_command(dataset: Path, run_dir: Path, api_base: str) -> list[str]:
    return [
        THREADMED, "evaluate", "--dataset", str(dataset), "--out", str(run_dir), "--models", "openai/m",
        "--judge", "openai/judge", "--api-base", api_base, "--split", "test", "--no-report",
    ]  # fmt: skip


def test_a_run_folder_being_evaluated_is_refused_in_one_line_naming_the_holder(dataset, tmp_path):
    run_dir = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(run_dir)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline() == "held\n"
        refused = subprocess.run(
            evaluate_command(dataset, run_dir, "http://127.0.0.1:9/v1"),
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
        )
    finally:
        holder.kill()
        holder.wait()
    assert refused.returncode == 1
    lines = (refused.stdout + refused.stderr).splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{run_dir} is being evaluated by another process (pid {holder.pid} on ")
    assert not (run_dir / "ledger").exists()


def wait_until(done: Callable[[], bool], process: subprocess.Popen[bytes], output: Path, what: str) -> None:
    """Wait (10 minutes at most) until `done()`, the process still running; else fail saying `what`."""
    deadline = time.monotonic() + 600  # a liveness bound only
    while not done():
        assert process.poll() is None, output.read_text()
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


@pytest.fixture
def evaluating(dataset, tmp_path) -> Iterator[tuple[subprocess.Popen[bytes], Path, Path, LLMServer]]:
    """`threadmed evaluate` as a terminal's job (its own process group), once calls hang at the server.

    Yields the process, the run folder, the file its output goes to and the LLM server.
    """
    run_dir, output = tmp_path / "run", tmp_path / "output.txt"
    with LLMServer() as llm, output.open("wb") as sink:
        llm.hold_after(1)  # one call succeeds, every later one hangs until the test ends
        process = subprocess.Popen(
            evaluate_command(dataset, run_dir, llm.url), stdout=sink, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            wait_until(lambda: llm.stats()["held"] > 0, process, output, "no call reached the LLM server")
            # Its progress lines are out (a line per role, then one every 30 s): what follows is the test's.
            wait_until(lambda: b" in flight" in output.read_bytes(), process, output, "no progress printed")
            yield process, run_dir, output, llm
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


def still_running(processes: list[psutil.Process], timeout: float) -> list[psutil.Process]:
    """The processes still running after up to `timeout` seconds (a liveness bound). An orphan that has
    exited but that no parent has reaped yet (a zombie) is not running: it holds nothing but its pid."""

    def running() -> list[psutil.Process]:
        alive = []
        for process in processes:
            try:
                if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                    alive.append(process)
            except psutil.NoSuchProcess:
                pass
        return alive

    deadline = time.monotonic() + timeout
    while (alive := running()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


def interrupt_lines(output: Path, printed: int) -> list[str]:
    """What the command printed after the first `printed` bytes, progress lines aside (one may be logged
    between reading the size and the signal: not what Ctrl-C printed)."""
    after = output.read_bytes()[printed:].decode().splitlines()
    return [line for line in after if not re.match(r"\[\d+:\d\d\] ", line)]


def test_ctrl_c_waits_a_bounded_time_for_calls_in_flight_then_exits_130_in_one_line_counting_those_left(
    evaluating,
):
    process, run_dir, output, llm = evaluating
    children = psutil.Process(process.pid).children(recursive=True)
    printed = output.stat().st_size
    os.killpg(process.pid, signal.SIGINT)  # what a terminal does on Ctrl-C
    # A liveness bound: the held calls are never answered, so it waits INTERRUPT_WAIT_S (15 s) for them.
    assert process.wait(timeout=600) == 130
    kept = CallLedger(run_dir / "ledger").count_succeeded()
    assert kept == llm.stats()["ok"] >= 1
    held = llm.stats()["held"]
    calls = "1 call" if held == 1 else f"{held} calls"
    assert interrupt_lines(output, printed) == [
        f"interrupted: {kept} calls kept in {run_dir}, {calls} in flight left after 15 s (a re-run asks them "
        "again); re-run the same command to resume"
    ]
    assert still_running(children, timeout=60) == []


# The main thread waits with no time-out for something that never comes (as a command waits on tasks whose
# calls are all held), and the SIGINT lands in another thread: CPython runs the main thread's handler only
# when that thread runs bytecode again.
SIGINT_OFF_THE_MAIN_THREAD = """
import signal, threading, time
from flows.cli.process import run

def app():
    def interrupt():
        time.sleep(0.5)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
    threading.Thread(target=interrupt).start()
    threading.Event().wait()

run(app)
"""


def test_ctrl_c_is_handled_while_the_main_thread_waits_with_no_time_out_and_another_thread_catches_it():
    interrupted = subprocess.run(
        [sys.executable, "-c", SIGINT_OFF_THE_MAIN_THREAD], capture_output=True, text=True, timeout=600
    )  # a liveness bound: it exits about a second after the signal
    assert (interrupted.returncode, interrupted.stdout, interrupted.stderr) == (
        130,
        "",
        "interrupted; re-run the same command to resume\n",
    )


@pytest.mark.usefixtures("prefect_harness")
def test_ctrl_c_during_a_rerun_records_every_reply_that_comes_and_the_resume_pays_no_call_twice(
    dataset, tmp_path
):
    """Ctrl-C with judge calls in flight: no call is sent after it, the replies that come (paid for) are
    recorded before the one line, and the resume makes exactly the calls still missing. The interrupted
    command runs without the test suite's quiet server logs, as a user's terminal has it; the evaluation
    before it and the resume run in this process, on the worker's Prefect API."""
    source, rejudged, output = tmp_path / "source", tmp_path / "rejudged", tmp_path / "output.txt"
    environment = {k: v for k, v in os.environ.items() if k != "PREFECT_SERVER_LOGGING_LEVEL"}
    with LLMServer() as llm:
        evaluated = threadmed_here(*evaluate_command(dataset, source, llm.url)[1:], cwd=tmp_path)
        assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
        grades = sum(request.model == "judge" for request in llm.requests)
        # Two calls in flight at most: once both are held at the server, no call can be sent before Ctrl-C is
        # handled, however late a loaded machine runs the handler.
        rerun = [THREADMED, "judge", "rerun", str(source), "--judge", "openai/judge2", "--api-base", llm.url,
                 "--out", str(rejudged), "--no-report", "--max-concurrency", "2"]  # fmt: skip
        llm.hold_after(llm.stats()["ok"] + 3)  # three grades, then every call stays in flight until answered
        with output.open("wb") as sink:
            process = subprocess.Popen(
                rerun, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True, env=environment
            )
            try:
                wait_until(lambda: llm.stats()["held"] == 2, process, output, "no two grades held in flight")
                wait_until(
                    lambda: b" in flight" in output.read_bytes(), process, output, "no progress printed"
                )
                printed = output.stat().st_size
                os.killpg(process.pid, signal.SIGINT)
                interrupted_at = time.monotonic()
                # Past the time an exit that leaves calls in flight takes (the crash report's 3 s, the
                # server's 2 s), within the 15 s it waits for them: the replies come now.
                time.sleep(6)
                assert process.poll() is None, "it exited without waiting for the calls in flight"
                llm.answer_held()
                assert process.wait(timeout=600) == 130
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
        asked = [request for request in llm.requests if request.model == "judge2"]
        kept = CallLedger(rejudged / "ledger").count_succeeded()
        # Every grade asked was answered and kept: the 2 held, and those answered before the server began to
        # hold (3, or one more that came while the third was being answered: it counts replies as they end).
        assert kept == len(asked) == sum(request.ok for request in asked)
        assert len(asked) - 2 in (3, 4)
        assert all(request.started < interrupted_at for request in asked)  # none sent after Ctrl-C
        assert interrupt_lines(output, printed) == [
            f"interrupted: {kept} calls kept in {rejudged}; re-run the same command to resume"
        ]
        resumed = threadmed_here(*rerun[1:], cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        asked_in_all = [request for request in llm.requests if request.model == "judge2"]
    assert len(asked_in_all) == grades  # the resume asked exactly the grades still missing
    assert max(Counter(request.body_hash for request in asked_in_all).values()) == 1


def test_ctrl_c_while_batches_wait_says_how_many_calls_are_in_flight_and_that_they_are_collected(
    dataset, tmp_path
):
    run_dir, output = tmp_path / "run", tmp_path / "output.txt"
    command = [*evaluate_command(dataset, run_dir, ""), "--conditions", "oracle", "--batch", "model,judge"]
    with LLMServer(batch_delay_s=3600) as llm, output.open("wb") as sink:
        command[command.index("--api-base") + 1] = llm.url
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_until(lambda: llm.stats()["batches"] > 0, process, output, "no batch reached the LLM server")
            printed = output.stat().st_size
            os.killpg(process.pid, signal.SIGINT)
            assert process.wait(timeout=60) == 130
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert output.read_bytes()[printed:].decode().splitlines() == [
        f"interrupted: 0 calls kept in {run_dir}, 10 more in flight in 1 provider batch; re-run the same "
        "command to resume (it, or the resume-batch-runs poller, collects them without paying again)"
    ]


def test_kill_9_leaves_no_temporary_server_behind(evaluating):
    process = evaluating[0]
    children = psutil.Process(process.pid).children(recursive=True)
    assert any("prefect.server.api.server:create_app" in c.cmdline() for c in children)
    process.kill()
    process.wait()
    alive = still_running(children, timeout=60)
    for orphan in alive:
        orphan.kill()
    assert alive == []


def test_a_command_that_used_duckdb_exits_without_nanobind_leak_reports(tmp_path):
    """Prefect's event-loop threads, alive at exit, kept DuckDB objects past DuckDB's teardown."""
    dumps = generate_dumps(tmp_path / "dumps", posts=500, seed=5)
    submissions, comments = map(str, dumps.files)
    built = subprocess.run(
        [THREADMED, "build", "--submissions", submissions, "--comments", comments,
         "--out", str(tmp_path / "out"), "--lake", str(tmp_path / "lake")],
        capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    assert (tmp_path / "out" / "dataset.duckdb").exists()
    assert "nanobind" not in built.stdout + built.stderr


def flow_run_events(api: str, flow_run_id: str, name: str) -> list[dict[str, object]]:
    body = {"filter": {"event": {"name": [name]}, "resource": {"id": [f"prefect.flow-run.{flow_run_id}"]}}}
    return httpx.post(f"{api}/events/filter", json=body, timeout=30).raise_for_status().json()["events"]


@pytest.mark.usefixtures("prefect_harness")
def test_a_command_s_flow_run_sends_no_heartbeat_unless_the_user_sets_their_frequency(tmp_path):
    """Prefect's heartbeat thread held the end of each flow run for up to a second; only deployment runs
    are watched for missed heartbeats."""
    api = prefect.settings.PREFECT_API_URL.value()
    runs = {"default": {}, "user's": {"PREFECT_FLOWS_HEARTBEAT_FREQUENCY": "30"}}
    for name, env in runs.items():
        done = subprocess.run(
            [THREADMED, "synth", "--posts", "5", "--out", str(tmp_path / name)],
            env={**os.environ, "PREFECT_API_URL": api, **env}, capture_output=True, text=True,
            timeout=COMMAND_TIMEOUT_S,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
    body = {"flows": {"name": {"any_": ["synthesize-dumps"]}}}
    flow_runs = httpx.post(f"{api}/flow_runs/filter", json=body, timeout=30).raise_for_status().json()
    ids = {Path(run["parameters"]["out_dir"]).name: run["id"] for run in flow_runs
           if Path(run["parameters"]["out_dir"]).parent == tmp_path}  # fmt: skip
    deadline = time.monotonic() + 600  # the server stores events a few seconds late; a liveness bound only
    while not all(flow_run_events(api, ids[name], "prefect.flow-run.Completed") for name in runs):
        assert time.monotonic() < deadline, "the flow runs' Completed events were never stored"
        time.sleep(0.5)
    beats = {name: len(flow_run_events(api, ids[name], "prefect.flow-run.heartbeat")) for name in runs}
    assert (beats["default"], beats["user's"] >= 1) == (0, True), beats  # the first beat comes at the start


# A command ending as `code` under `run`, with an object whose finalizer speaks only if the interpreter tears
# the modules down (what a command's exit skips), an exit hook that must still run and an idle thread pool
# that must be told to end (the interpreter tells it, before it waits for threads that are not daemons).
ENDING = """
import atexit, sys
from concurrent.futures import ThreadPoolExecutor
from flows.cli.process import run

pool = ThreadPoolExecutor(1)  # kept: its worker thread, not a daemon, stays idle until told to end
pool.submit(print, end="")

class Noisy:
    def __del__(self):
        print("torn down")

sys.modules["__main__"].kept = Noisy()
atexit.register(print, "exit hook ran")

def app():
    print("the command's output", end="")  # left in the buffer: the exit must flush it
    raise SystemExit(eval(sys.argv[1]))

run(app)
"""


@pytest.mark.parametrize(("code", "status"), [("0", 0), ("None", 0), ("3", 3)])
def test_an_ended_command_runs_its_exit_hooks_flushes_and_leaves_without_tearing_modules_down(code, status):
    ended = subprocess.run(
        [sys.executable, "-c", ENDING, code], capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S
    )
    assert (ended.returncode, ended.stdout, ended.stderr) == (
        status,
        "the command's outputexit hook ran\n",
        "",
    )


DRAINING = """
import logging, sys, threading
from flows.cli.process import run

logging.basicConfig(stream=sys.stderr)
# As Prefect's EventsWorker does at exit with events still queued (prefect/_internal/concurrency/services.py).
service = logging.getLogger("EventsWorker")
threading._register_atexit(service.warning, "Still processing items: 2 items remaining...")
threading._register_atexit(service.error, "Service failed with 2 pending items.")

def app():
    print("Error: the command's last line")
    raise SystemExit(1)

run(app)
"""


def test_below_an_ended_command_s_last_line_prefect_s_services_say_only_what_failed():
    ended = subprocess.run(
        [sys.executable, "-c", DRAINING], capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S
    )
    assert (ended.returncode, ended.stdout, ended.stderr) == (
        1,
        "Error: the command's last line\n",
        "ERROR:EventsWorker:Service failed with 2 pending items.\n",
    )


def test_a_command_ending_with_a_message_is_left_to_the_interpreter():
    ended = subprocess.run(
        [sys.executable, "-c", ENDING, "'no such file'"],
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
    )
    assert (ended.returncode, ended.stdout, ended.stderr) == (
        1,
        "the command's outputexit hook ran\ntorn down\n",
        "no such file\n",
    )
