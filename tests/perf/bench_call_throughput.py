"""Call throughput against a fast local server: our call layer against the client loop a user would write.

The test server (tests/llm_server.py, its own process) answers after 20 ms, as a local vLLM or llama.cpp
server might, and both clients keep 64 calls in flight with the same requests:

- the peer: a plain `openai.AsyncOpenAI` loop, 64 calls under a semaphore, nothing recorded;
- ours: `complete()` from 64 worker threads (as the evaluation runner drives it), with a fresh ledger, so
  every call goes through the whole call layer: key locks, limiter, retries, deadline, costs, the record.

Both run in this process, alternately, several rounds, so a busy machine slows both alike; the ratio of
the median rates is the figure. Target: ours at least 0.8x the peer's calls per second.
"""

import asyncio
import json
import os
import random
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai

from tasks.llm.call import complete
from tasks.llm.ledger import CallLedger
from tasks.llm.request import CallOptions, ChatRequest, ProviderLimits
from tests.perf.bench_evaluation import WORDS
from tests.perf.calls import served

LATENCY_S = 0.02
CONCURRENCY = 64
CALLS = 2000
ROUNDS = 3
PARAMS = {"temperature": 0, "max_tokens": 512}
TARGET_RATIO = 0.8


def questions(count: int, seed: int) -> list[str]:
    """Distinct questions of about 100 words (a distinct request is a distinct call key)."""
    rng = random.Random(seed)
    return [f"{i}: " + " ".join(rng.choices(WORDS, k=100)) for i in range(count)]


def peer_rate(url: str, texts: list[str]) -> tuple[float, float]:
    """(calls per second, ms of this process's CPU per call) of a plain AsyncOpenAI loop with `CONCURRENCY`
    calls in flight."""

    async def run() -> tuple[float, float]:
        client = openai.AsyncOpenAI(base_url=url, api_key="no-key", max_retries=0)
        slots = asyncio.Semaphore(CONCURRENCY)

        async def one(text: str) -> None:
            async with slots:
                await client.chat.completions.create(
                    model="m1", messages=[{"role": "user", "content": text}], **PARAMS
                )

        start, cpu_start = time.perf_counter(), time.process_time()
        await asyncio.gather(*(one(text) for text in texts))
        rates = _rates(len(texts), start, cpu_start)
        await client.close()
        return rates

    return asyncio.run(run())


def our_rate(url: str, texts: list[str], ledger_dir: Path) -> tuple[float, float]:
    """(calls per second, ms of CPU per call) of `complete()` from `CONCURRENCY` worker threads, recording
    into a fresh ledger."""
    options = CallOptions(provider="bench", limits=ProviderLimits(max_concurrency=CONCURRENCY))
    ledger = CallLedger(ledger_dir)
    requests = [
        ChatRequest(
            model="openai/m1", messages=({"role": "user", "content": text},), params=PARAMS, api_base=url
        )
        for text in texts
    ]
    start, cpu_start = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(CONCURRENCY) as workers:
        records = list(workers.map(lambda request: complete(request, options, ledger), requests))
    rates = _rates(len(requests), start, cpu_start)
    if failed := [r for r in records if r.status != "ok"]:
        raise RuntimeError(f"{len(failed)} calls failed, e.g. {failed[0].error}")
    return rates


def _rates(calls: int, start: float, cpu_start: float) -> tuple[float, float]:
    return calls / (time.perf_counter() - start), 1000 * (time.process_time() - cpu_start) / calls


def main(out_dir: Path) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    peer, ours = [], []
    with served(LATENCY_S) as url, tempfile.TemporaryDirectory(dir=out_dir) as scratch:
        # Warm-up: imports, connection pools, litellm's first routing of the model.
        peer_rate(url, questions(200, seed=-1))
        our_rate(url, questions(200, seed=-1), Path(scratch) / "warm-up")
        for round_ in range(ROUNDS):
            texts = questions(CALLS, seed=round_)
            peer.append(peer_rate(url, texts))
            ours.append(our_rate(url, texts, Path(scratch) / f"round-{round_}"))
    return {
        "latency_s": LATENCY_S,
        "concurrency": CONCURRENCY,
        "calls_per_round": CALLS,
        "peer_calls_per_s": [rate for rate, _ in peer],
        "our_calls_per_s": [rate for rate, _ in ours],
        "peer_cpu_ms_per_call": statistics.median(cpu for _, cpu in peer),
        "our_cpu_ms_per_call": statistics.median(cpu for _, cpu in ours),
        "ratio": statistics.median(rate for rate, _ in ours) / statistics.median(rate for rate, _ in peer),
        "target_ratio": TARGET_RATIO,
        "load_average": os.getloadavg(),
    }


def summary_lines(results: dict[str, Any]) -> list[str]:
    pairs = zip(results["our_calls_per_s"], results["peer_calls_per_s"], strict=True)
    rates = " ".join(f"{ours:.0f}/{peer:.0f}" for ours, peer in pairs)
    return [
        f"{results['calls_per_round']:,} calls x {len(results['peer_calls_per_s'])} rounds at "
        f"{results['latency_s'] * 1000:.0f} ms, {results['concurrency']} in flight; calls/s ours/peer per "
        f"round: {rates}",
        f"CPU per call: ours {results['our_cpu_ms_per_call']:.2f} ms, "
        f"peer {results['peer_cpu_ms_per_call']:.2f} ms",
        f"ours / AsyncOpenAI loop: {results['ratio']:.2f}x (target >= {results['target_ratio']}x); "
        f"load average {' '.join(f'{x:.1f}' for x in results['load_average'])}",
    ]


if __name__ == "__main__":
    outcome = main(Path("data_lake/bench/call-throughput"))
    print(json.dumps(outcome, indent=2))
    print("\n".join(summary_lines(outcome)))
