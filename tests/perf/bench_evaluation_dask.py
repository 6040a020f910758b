"""The evaluation benchmark (bench_evaluation.py) on a local Dask cluster of two worker processes, with the
provider limit and a spending cap held across both on the cluster's scheduler (tasks/llm/cluster.py).

The same 17,260 calls, server, latency and limit C, so the same bound; the cap is far above what the run
costs (the models have no prices), so it never stops a call, but every call reserves and settles in the
one budget. Target: wall within 1.10x of the bound.
"""

import json
import shutil
from pathlib import Path
from typing import Any

from prefect.events.worker import EventsWorker
from prefect.logging.handlers import APILogWorker
from prefect.settings import PREFECT_API_URL, temporary_settings

from tasks.core.runners import RunnerSettings
from tests.perf import bench_evaluation
from tests.prefect_server import server_on_new_database

WORKERS = 2
RUNNER = RunnerSettings(kind="dask", dask_workers=WORKERS)
CAP_USD = 1000.0
TARGET_RATIO = 1.10
PREFECT_DATABASE_DIR = "prefect"


def main(out_dir: Path) -> dict[str, Any]:
    # A Prefect server the workers report to: left to Prefect's ephemeral mode, each worker process would
    # start a server of its own.
    shutil.rmtree(out_dir / PREFECT_DATABASE_DIR, ignore_errors=True)
    with (
        server_on_new_database(out_dir / PREFECT_DATABASE_DIR) as server,
        temporary_settings({PREFECT_API_URL: server.api_url}),
    ):
        results = bench_evaluation.main(out_dir, RUNNER, CAP_USD)
        # The flow's last logs and events go to the server while it runs: left for the exit, they were
        # retried against the stopped server, and the benchmark did not end.
        APILogWorker.drain_all()
        EventsWorker.drain_all()
    return {**results, "dask_workers": WORKERS, "cap_usd": CAP_USD, "target_ratio": TARGET_RATIO}


def summary_lines(results: dict[str, Any]) -> list[str]:
    heading = f"Dask, {results['dask_workers']} worker processes, shared limit and cap:"
    return [heading, *bench_evaluation.summary_lines(results)]


if __name__ == "__main__":
    outcome = main(Path("data_lake/bench/evaluation-dask"))
    print(json.dumps(outcome, indent=2))
    print("\n".join(summary_lines(outcome)))
