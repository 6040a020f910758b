"""What the benchmarks of model calls share: the test server as a subprocess, its counters, and the split
of the time a provider slot is held per call into the server's latency, the call layer and orchestration.

The server runs in its own process so that its CPU (HTTP parsing, JSON, threads) is not charged to the
measured process, which matters on a 2-core machine.
"""

import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx


@contextmanager
def served(latency_s: float, reply: str = "default", options: tuple[str, ...] = ()) -> Iterator[str]:
    """`python -m tests.llm_server` answering with the named `reply` after `latency_s`, given any other
    command-line `options`; yields its URL."""
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.llm_server", "--latency", str(latency_s), "--reply", reply, *options],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    try:
        yield server.stdout.readline().strip()
    finally:
        server.terminate()
        server.wait()


def server_stats(url: str) -> dict[str, Any]:
    return httpx.get(url.removesuffix("/v1") + "/stats").json()


def timed_calls(warm_up: Callable[[], None], run: Callable[[], None], url: str) -> dict[str, Any]:
    """`warm_up` (Prefect's API and litellm start once), then `run` timed (wall and this process's CPU),
    with the calls the server saw."""
    start = time.perf_counter()
    warm_up()
    startup_s = time.perf_counter() - start
    before = server_stats(url)
    start, cpu_start = time.perf_counter(), time.process_time()
    run()
    wall_s, cpu_s = time.perf_counter() - start, time.process_time() - cpu_start
    after = server_stats(url)
    return {
        "startup_s": startup_s,
        "wall_s": wall_s,
        "cpu_s": cpu_s,  # of every thread of this process: the server's is not counted
        "calls": after["requests"] - before["requests"],
        "max_in_flight": after["max_in_flight"],
    }


def slot_split(
    wall_s: float, calls: int, latency_s: float, concurrency: int, call_latencies: Sequence[float]
) -> dict[str, float]:
    """Per call, the ms a slot is held beyond the server's latency (all slots busy for the whole wall time),
    split into the call layer (litellm and HTTP: `call_latencies`, measured around each call inside its
    slot) and orchestration (everything else: tasks, ledger, limiter hand-offs, slots left idle)."""
    slot_overhead_ms = 1000 * (wall_s * concurrency - calls * latency_s) / calls
    call_layer_ms = 1000 * (sum(call_latencies) / len(call_latencies) - latency_s)
    return {
        "slot_overhead_ms": slot_overhead_ms,
        "call_layer_ms": call_layer_ms,
        "orchestration_ms": slot_overhead_ms - call_layer_ms,
    }


def slot_split_line(results: dict[str, Any]) -> str:
    return (
        f"per call, a slot is held {results['slot_overhead_ms']:.1f} ms beyond the server's latency: "
        f"{results['call_layer_ms']:.1f} ms in litellm + HTTP, {results['orchestration_ms']:.1f} ms "
        f"orchestration (target < {results['target_overhead_ms']:.0f} ms)"
    )
