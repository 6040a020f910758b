"""What a capped call's exchanges with the Dask scheduler cost in CPU (tasks/llm/cluster_keys.py): the hold of
its key carrying its reservation (one round trip), against the baseline of a hold and a reservation each in
a round trip of its own; settling and letting go are told on the worker's stream either way.

One worker process of one thread makes the exchanges of CALLS calls in a row, no HTTP call between them;
the two ways alternate for ROUNDS rounds, and each is reported by its fastest round. CPU per call: the
worker process's (every thread of it), and this process's, where the scheduler runs (its client waits
idle meanwhile). Target: the carried reservation costs at most 0.8x the baseline's CPU.
"""

import logging
import time
import uuid
from pathlib import Path
from typing import Any

import psutil
from distributed import Client, LocalCluster, get_worker

from tasks.llm.budget import SpendingBudget, budget_for
from tasks.llm.cluster import shared_by_cluster
from tasks.llm.cluster_keys import ClusterKeys
from tasks.llm.ledger import CallLedger
from tasks.llm.scheduler_values import SchedulerLink

CALLS = 2_000
ROUNDS = 3
TARGET_RATIO = 0.8
ESTIMATE_USD = 0.001


def exchanges(ledger_dir: Path, calls: int, carried: bool) -> float:
    """On the worker: each call's hold, reservation, settling and letting go; this process's CPU seconds."""
    keys = ClusterKeys(SchedulerLink.of_worker(get_worker()))
    ledger = CallLedger(ledger_dir)
    budget = budget_for(ledger_dir)
    assert budget is not None, "the run's budget is on every worker"
    start = time.process_time()
    for _ in range(calls):
        key = uuid.uuid4().hex
        reservation = budget.reservation(key, ESTIMATE_USD) if carried else None
        with keys.hold(key, ledger, reservation) as reserved:
            if reserved is None:
                reserved = budget.reserve(key, ESTIMATE_USD)
            assert reserved, "the cap is far above what the calls reserve"
            budget.settle(key, ESTIMATE_USD)
    return time.process_time() - start


def main(out_dir: Path) -> dict[str, Any]:
    logging.getLogger("distributed").setLevel(logging.WARNING)  # the cluster's start and close, said twice
    ledger_dir = out_dir / "ledger"
    ledger_dir.mkdir(parents=True, exist_ok=True)
    this_process = psutil.Process()
    rounds: dict[str, list[tuple[float, float]]] = {"carried": [], "separate": []}
    with (
        LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
        shared_by_cluster(client, ledger_dir, SpendingBudget(cap_usd=1e9)),
    ):
        client.submit(exchanges, ledger_dir, 50, True, pure=False).result()  # warm-up: imports, first read
        for _ in range(ROUNDS):
            for way in rounds:
                before = sum(this_process.cpu_times()[:2])
                worker_s = client.submit(exchanges, ledger_dir, CALLS, way == "carried", pure=False).result()
                scheduler_s = sum(this_process.cpu_times()[:2]) - before
                rounds[way].append((1000 * worker_s / CALLS, 1000 * scheduler_s / CALLS))
    best = {way: min(times, key=sum) for way, times in rounds.items()}
    return {
        "calls": CALLS,
        "rounds": ROUNDS,
        "carried_ms": {"worker": best["carried"][0], "scheduler": best["carried"][1]},
        "separate_ms": {"worker": best["separate"][0], "scheduler": best["separate"][1]},
        "ratio": sum(best["carried"]) / sum(best["separate"]),
        "target_ratio": TARGET_RATIO,
    }


def summary_lines(results: dict[str, Any]) -> list[str]:
    def cpu(way: str) -> str:
        times = results[way]
        return (
            f"{times['worker'] + times['scheduler']:.2f} ms "
            f"(worker {times['worker']:.2f}, scheduler {times['scheduler']:.2f})"
        )

    return [
        f"CPU per capped call, key held and budget reserved and settled ({results['calls']:,} calls, "
        f"fastest of {results['rounds']} rounds):",
        f"reservation carried by the hold: {cpu('carried_ms')}",
        f"baseline, a round trip of its own: {cpu('separate_ms')}",
        f"{results['ratio']:.2f}x the baseline (target <= {results['target_ratio']}x)",
    ]
