"""What holding provider limits and the spending cap across Dask workers costs (tasks/llm/cluster.py).

A local cluster of two worker processes calls the test server (tests/llm_server.py, its own process,
200 ms per reply, as in the evaluation benchmark) through `complete()`, from 16 threads per worker, with
one provider limit C = 16 for the cluster. Two runs of the same calls, each on a fresh cluster:

- per process: each worker throttles alone with C / 2 (the limits divided by hand), no cap: the way a Dask
  run had to be set up before;
- shared: the cluster's limit C on the scheduler, the key locks and a spending cap (far above what the
  calls cost, so it stops none, but every call reserves and settles in the one budget).

The bound is calls x latency / C; the figure is each run's wall time over it. Target: shared within 1.10x.
"""

import json
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from distributed import Client, LocalCluster

from tasks.llm.budget import SpendingBudget
from tasks.llm.call import complete
from tasks.llm.cluster import shared_by_cluster
from tasks.llm.ledger import CallLedger
from tasks.llm.request import CallOptions, ChatRequest, Prices, ProviderLimits
from tests.perf.bench_evaluation import WORDS
from tests.perf.calls import served, server_stats

LATENCY_S = 0.2
CONCURRENCY = 16
WORKERS = 2
THREADS = 16  # per worker
CALLS_PER_WORKER = 800
CAP_USD = 1000.0
PRICES = Prices(input_per_token=1e-6, output_per_token=3e-6)
TARGET_RATIO = 1.10


def ask(url: str, ledger_dir: Path, limit: int, worker: int) -> None:
    """On a worker: its calls, from THREADS threads, each a question of its own."""
    options = CallOptions(provider="openai", limits=ProviderLimits(max_concurrency=limit), prices=PRICES)
    ledger = CallLedger(ledger_dir)

    def one(i: int) -> None:
        question = f"worker {worker} question {i}: " + " ".join(WORDS[i % len(WORDS) :][:60])
        message = {"role": "user", "content": question}
        complete(ChatRequest(model="openai/m", messages=(message,), api_base=url), options, ledger)

    with ThreadPoolExecutor(THREADS) as threads:
        list(threads.map(one, range(CALLS_PER_WORKER)))


def timed(url: str, ledger_dir: Path, shared: bool) -> float:
    """The wall time of every worker's calls, on a fresh cluster."""
    with (
        LocalCluster(
            n_workers=WORKERS, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        # Asked of the scheduler: scheduler_info() falls back to a cache without workers when its query fails.
        addresses = sorted(client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.workers)))
        client.run(lambda: __import__("tasks.llm.call"))  # imports are not timed
        limit = CONCURRENCY if shared else CONCURRENCY // WORKERS
        budget = SpendingBudget(CAP_USD) if shared else None
        with shared_by_cluster(client, ledger_dir, budget) if shared else nullcontext():
            start = time.perf_counter()
            futures = [
                client.submit(ask, url, ledger_dir, limit, worker, workers=[address], pure=False)
                for worker, address in enumerate(addresses)
            ]
            client.gather(futures)
            return time.perf_counter() - start


def main(out_dir: Path) -> dict[str, Any]:
    calls = WORKERS * CALLS_PER_WORKER
    bound_s = calls * LATENCY_S / CONCURRENCY
    results: dict[str, Any] = {"calls": calls, "latency_s": LATENCY_S, "concurrency": CONCURRENCY}
    with served(LATENCY_S) as url, tempfile.TemporaryDirectory() as scratch:
        for shared in (False, True):
            name = "shared" if shared else "per_process"
            before = server_stats(url)["requests"]
            wall_s = timed(url, Path(scratch) / name / "ledger", shared)
            made = server_stats(url)["requests"] - before
            results[name] = {"wall_s": wall_s, "calls_made": made, "ratio": wall_s / bound_s}
        results["max_in_flight"] = server_stats(url)["max_in_flight"]
    return {**results, "bound_s": bound_s, "target_ratio": TARGET_RATIO}


def summary_lines(results: dict[str, Any]) -> list[str]:
    per_process, shared = results["per_process"], results["shared"]
    return [
        f"{results['calls']:,} calls at {results['latency_s'] * 1000:.0f} ms from {WORKERS} Dask worker "
        f"processes, limit {results['concurrency']} (max in flight {results['max_in_flight']}); "
        f"bound {results['bound_s']:.1f} s",
        f"per process (limit divided by hand, no cap): {per_process['wall_s']:.1f} s, "
        f"{per_process['ratio']:.2f}x",
        f"shared on the scheduler (limit, key locks, cap): {shared['wall_s']:.1f} s, {shared['ratio']:.2f}x "
        f"(target <= {results['target_ratio']}x)",
    ]


if __name__ == "__main__":
    outcome = main(Path("data_lake/bench/cluster-limits"))
    print(json.dumps(outcome, indent=2))
    print("\n".join(summary_lines(outcome)))
