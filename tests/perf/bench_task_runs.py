"""What recording task runs costs the Prefect server: the project's setting against Prefect's default.

Every task run sends its states to the server as events, and the server's task-run recorder writes them to
its database: by default one event to an insert, with the project's settings 50 (flows/cli/prefect_env.py).
Each round starts a server of its own, on a new database, with one setting, runs a flow of N tasks that do
nothing on 16 threads, and waits until the server has recorded every task run as Completed. It records the
server's CPU seconds from the flow's start to then, and that wall time. Rounds alternate the two settings;
the fastest of each counts. Target: the project's setting at most half the default's CPU.
"""

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import httpx
import psutil
from prefect import flow, task
from prefect.events.worker import EventsWorker
from prefect.settings import PREFECT_API_URL, temporary_settings
from prefect.task_runners import ThreadPoolTaskRunner

from flows.cli.prefect_env import RECORDER_BATCH, project_defaults
from tests.prefect_server import server_on_new_database

TASK_RUNS = 2_400  # the evaluation benchmark's jobs: 5 models x 240 threads x 2 conditions
ROUNDS = 2
SETTINGS = {"Prefect's default (1)": "1", "project's (50)": project_defaults(Path.cwd())[RECORDER_BATCH]}
TARGET_RATIO = 0.5
RECORDED_TIMEOUT_S = 900.0


@task
def nothing(index: int) -> int:
    return index


@flow(task_runner=ThreadPoolTaskRunner(max_workers=16))
def many_tasks(count: int) -> None:
    nothing.map(range(count)).wait()


def main(out_dir: Path) -> dict[str, Any]:
    shutil.rmtree(out_dir, ignore_errors=True)
    rounds: dict[str, list[dict[str, float]]] = {label: [] for label in SETTINGS}
    for index in range(ROUNDS):
        for label, batch in SETTINGS.items():
            rounds[label].append(recorded_round(batch, out_dir / f"round-{index}-batch-{batch}"))
    best = {label: min(runs, key=lambda run: run["server_cpu_s"]) for label, runs in rounds.items()}
    default, ours = (best[label] for label in SETTINGS)
    return {
        "task_runs": TASK_RUNS,
        "rounds": rounds,
        "best": best,
        "cpu_ratio": ours["server_cpu_s"] / default["server_cpu_s"],
        "load_average": os.getloadavg(),
        "target_ratio": TARGET_RATIO,
    }


def recorded_round(batch: str, database_dir: Path) -> dict[str, float]:
    """One flow of TASK_RUNS tasks against a new server, with a new database in `database_dir`, recording
    `batch` events to an insert."""
    recorder = {"server.services.task_run_recorder.batch_size": int(batch)}
    with (
        server_on_new_database(database_dir, recorder) as server,
        temporary_settings({PREFECT_API_URL: server.api_url}),
    ):
        many_tasks(10)  # the flow, its task and the API's first requests, not timed
        EventsWorker.drain_all()
        process = psutil.Process(server.server_process.pid)
        cpu_before, start = _cpu_s(process), time.perf_counter()
        state = many_tasks(TASK_RUNS, return_state=True)
        EventsWorker.drain_all()
        _wait_until_recorded(server.api_url, state.state_details.flow_run_id)
        recorded_after_s = time.perf_counter() - start
        return {"server_cpu_s": _cpu_s(process) - cpu_before, "recorded_after_s": recorded_after_s}


def _cpu_s(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def _wait_until_recorded(api_url: str, flow_run_id: Any) -> None:
    query = {
        "flow_runs": {"id": {"any_": [str(flow_run_id)]}},
        "task_runs": {"state": {"type": {"any_": ["COMPLETED"]}}},
    }
    deadline = time.monotonic() + RECORDED_TIMEOUT_S
    while httpx.post(f"{api_url}/task_runs/count", json=query, timeout=60).json() < TASK_RUNS:
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"the server had not recorded {TASK_RUNS} task runs after {RECORDED_TIMEOUT_S:.0f} s"
            )
        time.sleep(0.5)


def summary_lines(results: dict[str, Any]) -> list[str]:
    lines = [
        f"{label}: server CPU {best['server_cpu_s']:.1f} s, all {results['task_runs']:,} task runs recorded "
        f"after {best['recorded_after_s']:.1f} s"
        for label, best in results["best"].items()
    ]
    return [
        *lines,
        f"server CPU, the project's setting against Prefect's default: {results['cpu_ratio']:.2f}x "
        f"(target <= {results['target_ratio']}x; load {results['load_average'][0]:.1f})",
    ]


if __name__ == "__main__":
    outcome = main(Path("data_lake/bench/task-runs"))
    print(json.dumps(outcome, indent=2))
    print("\n".join(summary_lines(outcome)))
