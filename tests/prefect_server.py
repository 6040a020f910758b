"""A real Prefect server, process work pool and worker for end-to-end tests, always torn down.

`PrefectStack` starts `prefect server start` on 127.0.0.1 with a throw-away PREFECT_HOME and drives it
with the `prefect` CLI, exactly as a user would: create the work pool, `prefect --no-prompt deploy --all`,
start a worker, `prefect deployment run ... --watch`. Every process runs in its own process group, so
teardown also reaches the flow-run processes a worker started. Logs go to files whose tails are put
into assertion messages.
"""

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import httpx
import psutil

from tests.prefect_db import seed

if TYPE_CHECKING:
    from prefect.server.api.server import SubprocessASGIServer

PREFECT = str(Path(sys.executable).with_name("prefect"))
SERVER_START_TIMEOUT_S = 180.0
CLI_TIMEOUT_S = 180.0
# A liveness bound: `deploy --all` loads each deployment's flow module in turn. The deployment tests' set-up,
# the server's start included, took 60 s on a quiet machine; the deploy alone passed 180 s in a full suite at
# load 9 on 2 cores.
DEPLOY_TIMEOUT_S = 600.0
STOP_TIMEOUT_S = 15.0
# A liveness bound on one read of the API: in a full suite (5 test workers on 2 cores), the stack's server
# once took more than 30 s to answer a flow run's state.
API_TIMEOUT_S = 300.0
FLOW_RUN_ID = re.compile(r"UUID: ([0-9a-f-]{36})")
FINAL_STATES = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def server_on_new_database(
    database_dir: Path, settings: dict[str, Any] | None = None
) -> Iterator["SubprocessASGIServer"]:
    """Prefect's own subprocess server on a new SQLite database in `database_dir` (which must not exist; left
    for inspection), started with `settings` on top of the environment's; stopped at the end.

    For benchmarks: the server's CPU per task run grows with its tables (their indexes' inserts), so one
    measured against the long-lived database of PREFECT_HOME is not comparable from one run to the next.
    """
    # Imported here: Prefect's server modules take 7 s of CPU to import, and every test process imports
    # this file.
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import temporary_settings

    database_dir.mkdir(parents=True)
    database = database_dir.absolute() / "prefect.db"
    server = SubprocessASGIServer(port=free_port())
    with temporary_settings(
        {**(settings or {}), "server.database.connection_url": f"sqlite+aiosqlite:///{database}"}
    ):
        server.start(timeout=600)  # a liveness bound only: under load it takes minutes
    try:
        yield server
    finally:
        server.stop()


@dataclass
class ManagedProcess:
    """A long-running process started by a test, with its combined output in `log`."""

    name: str
    popen: subprocess.Popen
    log: Path

    def tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return f"--- {self.name} (last {lines} lines of {self.log}) ---\n" + "\n".join(
            text.splitlines()[-lines:]
        )

    def stop(self, terms: int = 1) -> None:
        """SIGTERM the process group up to `terms` times, then SIGKILL whatever is left of the group."""
        group = self.popen.pid  # start_new_session: the group id is the leader's pid
        for _ in range(terms):
            if self.popen.poll() is not None:
                break
            _signal_group(group, signal.SIGTERM)
            try:
                self.popen.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                continue
        # Children (flow runs, their Dask clusters) may outlive the leader: the group goes in any case.
        _signal_group(group, signal.SIGKILL)
        self.popen.wait(timeout=STOP_TIMEOUT_S)


def _signal_group(group: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):  # the whole group is gone already
        os.killpg(group, signum)


def deployment_run_args(name: str, parameters: dict[str, Any]) -> list[str]:
    """`deployment run NAME --param k=<JSON> ... --watch`: the arguments of `prefect` a user would type."""
    params = [arg for key, value in parameters.items() for arg in ("--param", f"{key}={json.dumps(value)}")]
    return ["deployment", "run", name, *params, "--watch"]


@dataclass(frozen=True)
class FlowRunResult:
    """The state of a flow run when it was last read: its type (COMPLETED, FAILED, ...) and message."""

    id: str
    state_type: str
    message: str


class PrefectStack:
    """`with PrefectStack(tmp_path, project_root) as stack:` a server on a free port, stopped on exit."""

    def __init__(self, root: Path, project_root: Path) -> None:
        self.root = root
        self.project_root = project_root
        self.port = free_port()
        self.api_url = f"http://127.0.0.1:{self.port}/api"
        self.processes: list[ManagedProcess] = []
        home = root / "prefect-home"
        root.mkdir(parents=True, exist_ok=True)  # Prefect does not create PREFECT_HOME's parent
        self.env = {
            **os.environ,
            "PREFECT_HOME": str(home),
            "PREFECT_API_URL": self.api_url,
            "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(root / "results"),
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
            # Tests need neither the UI nor cron runs (which could fire mid-test on the 2nd of a month).
            "PREFECT_SERVER_UI_ENABLED": "false",
            "PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": "false",
            # Automations (deployments/dead_runs.py) are evaluated and acted on by these services.
            "PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED": "true",
            "PREFECT_WORKER_QUERY_SECONDS": "1",
            "PREFECT_LOGGING_LEVEL": "INFO",
            "PREFECT_CLI_WRAP_LINES": "false",
            "PROJECT_ROOT": str(project_root),
        }

    def __enter__(self) -> Self:
        try:
            self._start_server()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the worker first (TERM twice: the first one only asks it to drain), then the server."""
        for process in reversed(self.processes):
            process.stop(terms=2 if process.name == "worker" else 1)
        self.processes.clear()

    def _start(self, name: str, args: list[str]) -> ManagedProcess:
        log = self.root / f"{name}.log"
        with log.open("wb") as handle:
            popen = subprocess.Popen(
                args, cwd=self.project_root, env=self.env, stdout=handle, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        process = ManagedProcess(name, popen, log)
        self.processes.append(process)
        return process

    def _start_server(self) -> None:
        seed(Path(self.env["PREFECT_HOME"]) / "prefect.db")
        server = self._start(
            "server", [PREFECT, "server", "start", "--host", "127.0.0.1", "--port", str(self.port)]
        )
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while time.monotonic() < deadline:
            if server.popen.poll() is not None:
                raise AssertionError(f"prefect server exited with {server.popen.returncode}\n{server.tail()}")
            try:
                if httpx.get(f"{self.api_url}/health", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"prefect server not healthy in {SERVER_START_TIMEOUT_S:.0f} s\n{server.tail()}")

    def logs(self) -> str:
        """The tails of every process's log, for assertion messages."""
        return "\n".join(process.tail() for process in self.processes)

    def cli(self, *args: str, check: bool = True, timeout: float = CLI_TIMEOUT_S) -> str:
        """Run `prefect ARGS` against this server; return its standard output."""
        return self._run([PREFECT, *args], check, timeout)

    def python(self, *args: str) -> str:
        """Run `python ARGS` (this interpreter) against this server; return its standard output."""
        return self._run([sys.executable, *args], check=True, timeout=CLI_TIMEOUT_S)

    def _run(self, command: list[str], check: bool, timeout: float) -> str:
        completed = subprocess.run(
            command, cwd=self.project_root, env=self.env, capture_output=True, text=True, timeout=timeout
        )
        if check and completed.returncode != 0:
            raise AssertionError(
                f"{' '.join(command)} exited with {completed.returncode}\n"
                f"{completed.stdout}{completed.stderr}\n{self.logs()}"
            )
        return completed.stdout

    def create_process_pool(self, pool: str) -> None:
        self.cli("work-pool", "create", pool, "--type", "process")

    def deploy(self) -> None:
        """`PROJECT_ROOT=<project root> prefect --no-prompt deploy --all`: all of prefect.yaml."""
        self.cli("--no-prompt", "deploy", "--all", timeout=DEPLOY_TIMEOUT_S)

    def start_worker(self, pool: str) -> None:
        self._start("worker", [PREFECT, "worker", "start", "--pool", pool])

    def kill_worker(self) -> list[list[str]]:
        """kill -9 the worker and every process it started (its flow runs), as a lost machine would; return
        their command lines, the worker's first. Nothing is left to tell the server the runs ended."""
        worker = next(process for process in self.processes if process.name == "worker")
        leader = psutil.Process(worker.popen.pid)
        victims = [leader, *leader.children(recursive=True)]
        command_lines = [victim.cmdline() for victim in victims]
        for victim in victims:
            with contextlib.suppress(psutil.NoSuchProcess):  # a flow run that ended meanwhile
                victim.kill()
        psutil.wait_procs(victims, timeout=STOP_TIMEOUT_S)
        worker.popen.wait(timeout=STOP_TIMEOUT_S)
        self.processes.remove(worker)
        return command_lines

    def watch_deployment(self, name: str, parameters: dict[str, Any]) -> ManagedProcess:
        """Start `prefect deployment run NAME --param k=v ... --watch` (no time-out) and return at once."""
        return self._start(f"watch-{len(self.processes)}", [PREFECT, *deployment_run_args(name, parameters)])

    def flow_run_id(self, watch: ManagedProcess, deadline: float) -> str:
        """The id of the flow run a `watch_deployment` created, once it has printed it."""
        while (match := FLOW_RUN_ID.search(watch.log.read_text(errors="replace"))) is None:
            if watch.popen.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"no flow run was created\n{watch.tail()}\n{self.logs()}")
            time.sleep(0.5)
        return match.group(1)

    def flow_run(self, flow_run_id: str) -> dict[str, Any]:
        """The flow run as the API stores it."""
        return self._read(f"/flow_runs/{flow_run_id}")

    def events(self, name: str, resource_id: str) -> list[dict[str, Any]]:
        """The last 50 events `name` of the resource `resource_id` (`prefect.flow-run.<id>`), newest first."""
        body = {"filter": {"event": {"name": [name]}, "resource": {"id": [resource_id]}, "order": "DESC"},
                "limit": 50}  # fmt: skip
        page = httpx.post(f"{self.api_url}/events/filter", json=body, timeout=API_TIMEOUT_S)
        return page.raise_for_status().json()["events"]

    def run_deployment(self, name: str, parameters: dict[str, Any], timeout_s: float = 300) -> FlowRunResult:
        """`prefect deployment run NAME --param k=v ... --watch`; return the run's final state."""
        deadline = time.monotonic() + timeout_s
        output = self.cli(
            *deployment_run_args(name, parameters), "--watch-timeout", str(int(timeout_s)),
            check=False, timeout=timeout_s + 60,
        )  # fmt: skip
        match = FLOW_RUN_ID.search(output)
        if match is None:
            raise AssertionError(f"no flow run was created for {name}\n{output}\n{self.logs()}")
        # `--watch` follows an event stream; the API has the last word on the state.
        return self.wait_for_flow_run(match.group(1), deadline)

    def retry_flow_run(self, flow_run_id: str, timeout_s: float = 300) -> FlowRunResult:
        """`prefect flow-run retry ID` (the UI's Retry button): the same flow run goes back to the pool."""
        deadline = time.monotonic() + timeout_s
        self.cli("flow-run", "retry", flow_run_id)
        return self.wait_for_flow_run(flow_run_id, deadline)

    def read_deployment(self, name: str) -> dict[str, Any]:
        """The deployment `flow-name/deployment-name` as the API stores it."""
        return self._read(f"/deployments/name/{name}")

    def _read(self, path: str) -> dict[str, Any]:
        return httpx.get(f"{self.api_url}{path}", timeout=API_TIMEOUT_S).raise_for_status().json()

    def wait_for_flow_run(self, flow_run_id: str, deadline: float) -> FlowRunResult:
        """Poll the API until the run reaches a final state or the deadline; return its last state."""
        while True:
            state = self.flow_run(flow_run_id)["state"]
            if state["type"] in FINAL_STATES or time.monotonic() > deadline:
                return FlowRunResult(flow_run_id, state["type"], state["message"] or "")
            servers = [p for p in self.processes if not p.name.startswith("watch-")]
            if exited := [p.name for p in servers if p.popen.poll() is not None]:
                raise AssertionError(f"{exited} exited before flow run {flow_run_id} ended\n{self.logs()}")
            time.sleep(1)

    def explain(self, run: FlowRunResult) -> str:
        """Everything worth reading when a run did not end as expected."""
        flow_logs = self.cli("flow-run", "logs", run.id, check=False)
        tail = "\n".join(flow_logs.splitlines()[-60:])
        return f"{run}\n--- flow run logs (last 60 lines) ---\n{tail}\n{self.logs()}"
