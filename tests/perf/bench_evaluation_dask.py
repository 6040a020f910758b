"""The evaluation benchmark (bench_evaluation.py) on Dask clusters of two worker processes, with the provider
limit and a spending cap held across both on the cluster's scheduler (tasks/llm/cluster.py), side by side
with the same run made the way a Dask run had to be set up before them.

The same 17,260 calls, server, latency and limit C, so the same bound. Three runs, each on a Prefect server
of its own (a new database), each after a warm-up run of one thread on the same runner:

- shared: on a local cluster each run starts (its scheduler in the flow's process), the limit C and the call
  keys on the scheduler, and a spending cap far above what the run costs (the models have no prices), so it
  never stops a call, but every call reserves and settles in the one budget;
- per process (the baseline): the same, but each worker throttles alone with C / 2 (the limit divided by
  hand), no cap, no keys shared; its workers have as many threads and import what sends a call as they
  join, as the shared run's do;
- shared on a running cluster: as the first, on a cluster started before the run as deployments/README.md
  starts one for several machines (`dask scheduler`, `dask worker --nworkers 2 --nthreads 32`, each its
  own process): its workers are those the warm-up ran on, as a cluster's are after its first run.

The figures: each run's wall time over the bound, and the shared run's over the baseline's (what sharing
costs). Target: a shared run within 1.10x of the bound.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from distributed import Client, WorkerPlugin
from prefect.events.worker import EventsWorker
from prefect.logging.handlers import APILogWorker
from prefect.settings import PREFECT_API_URL, temporary_settings
from prefect.task_runners import TaskRunner

from tasks.core.runners import LOCAL_CLUSTER_CONFIG, RunnerSettings
from tasks.llm.budget import SpendingBudget
from tasks.llm.call import import_sending_modules
from tasks.llm.cluster import in_background
from tests.perf import bench_evaluation
from tests.perf.calls import slot_split_line
from tests.prefect_server import server_on_new_database

WORKERS = 2
RUNNER = RunnerSettings(kind="dask", dask_workers=WORKERS)
# The threads the shared run's workers get from its limit C (EvalConfig.worker_count); the baseline's limit
# of C / 2 would give it half as many.
BASELINE_RUNNER = RUNNER.model_copy(update={"dask_threads": 2 * bench_evaluation.CONCURRENCY})
CAP_USD = 1000.0
TARGET_RATIO = 1.10
PREFECT_DATABASE_DIR = "prefect"
# One order per run: the host's speed drifts within an hour, so tests/perf/README.md gives runs in both.
VARIANTS = ("shared", "per_process", "running_cluster")
DASK = Path(sys.executable).with_name("dask")
ROOT = Path(__file__).parents[2]


class ImportsSendingModules(WorkerPlugin):
    """What the shared runs' `SharedCalls` does as a worker joins, without the sharing: import litellm in
    the background while the flow sends its tasks."""

    name = "bench-import-sending-modules"

    def setup(self, worker: Any) -> None:
        in_background("import-sending-modules", import_sending_modules)


@contextmanager
def limits_divided_by_hand(
    workers: TaskRunner, ledger_dir: Path, budget: SpendingBudget | None
) -> Iterator[None]:
    """In place of `calls_shared_by` (flows/evaluation.py): each worker process keeps its own limits."""
    assert budget is None, "the baseline has no cap: a cap was refused under Dask before it was shared"
    workers.client.register_plugin(ImportsSendingModules())
    yield


@contextmanager
def running_cluster(api_url: str, log: Path) -> Iterator[str]:
    """A cluster of two worker processes of 2 x C threads, started as deployments/README.md starts one, with
    the local clusters' Dask settings (tasks/core/runners.py), reporting to the Prefect server at `api_url`,
    its processes' logs in `log`; yields its scheduler's address."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    settings = {
        f"DASK_{key.upper().replace('.', '__').replace('-', '_')}": str(value)
        for key, value in LOCAL_CLUSTER_CONFIG.items()
    }
    env = {**os.environ, **settings, "PREFECT_API_URL": api_url, "PYTHONPATH": str(ROOT)}
    threads = str(2 * bench_evaluation.CONCURRENCY)
    commands = (
        [DASK, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
        [DASK, "worker", address, "--nworkers", str(WORKERS), "--nthreads", threads, "--no-dashboard"],
    )
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as output:
        processes = [subprocess.Popen(command, env=env, cwd=ROOT, stderr=output) for command in commands]
    try:
        with Client(address, timeout="60s") as client:
            client.wait_for_workers(WORKERS, timeout=120)
        yield address
    finally:
        for process in reversed(processes):
            process.terminate()
            process.wait()


def timed_variant(out_dir: Path, variant: str) -> dict[str, Any]:
    """One run of `variant` on a Prefect server of its own (a new database in `out_dir`)."""
    shutil.rmtree(out_dir / PREFECT_DATABASE_DIR, ignore_errors=True)
    # A Prefect server the workers report to: left to Prefect's ephemeral mode, each worker process would
    # start a server of its own.
    with (
        server_on_new_database(out_dir / PREFECT_DATABASE_DIR) as server,
        temporary_settings({PREFECT_API_URL: server.api_url}),
    ):
        if variant == "shared":
            results = bench_evaluation.main(out_dir, RUNNER, CAP_USD)
        elif variant == "running_cluster":
            with running_cluster(server.api_url, out_dir / "cluster.log") as address:
                runner = RunnerSettings(kind="dask", dask_address=address)
                results = bench_evaluation.main(out_dir, runner, CAP_USD)
        else:
            with mock.patch("flows.evaluation.calls_shared_by", limits_divided_by_hand):
                per_worker = bench_evaluation.CONCURRENCY // WORKERS
                results = bench_evaluation.main(out_dir, BASELINE_RUNNER, None, per_worker)
        # The flow's last logs and events go to the server while it runs: left for the exit, they were
        # retried against the stopped server, and the benchmark did not end.
        APILogWorker.drain_all()
        EventsWorker.drain_all()
    print(f"  {variant}: wall {results['wall_s']:.1f} s, {results['ratio']:.2f}x the bound", flush=True)
    return results


def main(out_dir: Path) -> dict[str, Any]:
    results: dict[str, Any] = {variant: timed_variant(out_dir / variant, variant) for variant in VARIANTS}
    shared, per_process = results["shared"], results["per_process"]
    return {
        **results,
        "order": list(VARIANTS),
        "sharing_cost": shared["wall_s"] / per_process["wall_s"],
        "dask_workers": WORKERS,
        "cap_usd": CAP_USD,
        "target_ratio": TARGET_RATIO,
    }


def summary_lines(results: dict[str, Any]) -> list[str]:
    shared, per_process, running = (
        results[variant] for variant in ("shared", "per_process", "running_cluster")
    )
    target = f"(target <= {results['target_ratio']}x)"
    return [
        f"Dask, {results['dask_workers']} worker processes; runs in order: {', '.join(results['order'])}",
        *bench_evaluation.summary_lines(shared)[:1],
        f"shared limit and cap, a cluster the run starts: wall {shared['wall_s']:.1f} s vs bound "
        f"{shared['bound_s']:.1f} s: {shared['ratio']:.2f}x {target}; {slot_split_line(shared)}",
        f"per process (limit divided by hand, no cap), a cluster the run starts: wall "
        f"{per_process['wall_s']:.1f} s: {per_process['ratio']:.2f}x; {slot_split_line(per_process)}",
        f"shared limit and cap, a running cluster: wall {running['wall_s']:.1f} s: {running['ratio']:.2f}x "
        f"{target}; {slot_split_line(running)}",
        f"sharing costs {results['sharing_cost']:.3f}x the per-process run's wall time",
    ]


if __name__ == "__main__":
    outcome = main(Path("data_lake/bench/evaluation-dask"))
    print(json.dumps(outcome, indent=2))
    print("\n".join(summary_lines(outcome)))
