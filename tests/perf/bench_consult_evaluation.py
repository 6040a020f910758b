"""Consultation evaluation benchmark: 2 agents x 60 generated cases, four-stage episodes (histories of 3 to
12 questions, a differential, a plan, each scripted follow-up) and scoring with the FQR judge.

The real `consult-evaluate` flow (no report) runs against the test server as a subprocess (tests/perf/
calls.py) with a fixed latency, its `consult` replies playing the agent and the judge: the agent asks a
number of history questions set by a hash of its name and the case's opening, says it is ready, gives its
differential, its plan, and answers each follow-up (a revised plan for an allergy); the judge needs a
re-ask for a question's answer. The simulated patient is local to the episode (no call), so inside an
episode every call waits for the one before and the simulator's answer, then its judge calls run one
after another in the score step; episodes run in parallel up to the provider limit C (agent and judge
share it): the lower bound of the wall time is the larger of (total calls x latency / C) and the longest
episode's calls (its judge calls included) x latency. Per call, slot time beyond the latency splits into
the call layer and orchestration, and orchestration into time outside the calls, the run's tail and
hand-offs, as in the SNOMED evaluation benchmark; the simulator's share is its time (building each
episode's patient and answering) per call, part of the hand-offs. Targets: wall within 1.3x of the
bound, orchestration under 10 ms per call.
"""

import json
import os
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from flows.consult_evaluate import consult_evaluate
from tasks.benchmarks.consult.cases.case_set import write_case_set
from tasks.benchmarks.consult.cases.generate import CaseGenerationSettings, generate_cases
from tasks.benchmarks.consult.config import ConsultConfig
from tasks.benchmarks.consult.judge import judge_follow_ups
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.plan import build_plan
from tasks.benchmarks.consult.scorer import episode_from_messages
from tasks.benchmarks.consult.simulator import Simulator
from tasks.evals.config import EvaluationSettings, JudgeSpec, ModelSpec, SampleSpec
from tasks.llm.ledger import CallLedger
from tasks.llm.request import ProviderLimits
from tests.perf.bench_snomed_evaluation import idle_slot_time, ledger_calls
from tests.perf.calls import served, slot_split, slot_split_line, timed_calls

LATENCY_S = 0.2
CONCURRENCY = 8  # as the SNOMED evaluation benchmark: a call holds the GIL for milliseconds
AGENTS = ("agent-1", "agent-2")
CASES = CaseGenerationSettings(n=60, seed=0)
TARGET_RATIO = 1.3
TARGET_OVERHEAD_MS = 10.0


def config(url: str, limit: int | None = None) -> ConsultConfig:
    return ConsultConfig(
        models=[ModelSpec(name=name, model=f"openai/{name}", api_base=url) for name in AGENTS],
        judge=JudgeSpec(name="judge", model="openai/judge", api_base=url, max_reasks=1),
        providers={"openai": ProviderLimits(max_concurrency=CONCURRENCY)},
        sample=SampleSpec(limit=limit),
    )


def evaluate(cases_dir: Path, run_dir: Path, url: str, limit: int | None = None) -> None:
    consult_evaluate(cases_dir=str(cases_dir), run_dir=str(run_dir), config=config(url, limit), report=False)


def judge_chains(cases_dir: Path, run_dir: Path, url: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The judge calls' keys, each with its episode (model, case): the score step's requests, replayed from
    the ledger (no table records them)."""
    by_episode: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for message in messages:
        by_episode.setdefault((message["model"], message["case_id"]), []).append(message)
    settings = EvaluationSettings[ConsultConfig](dataset_dir=cases_dir, run_dir=run_dir, config=config(url))
    ledger, kb, chains = CallLedger(run_dir / "ledger"), load_kb(), {}
    for job in build_plan(settings).jobs:
        score, chain = job.score, (job.score.model, job.score.case.case_id)
        episode = episode_from_messages(score.case, by_episode[chain], kb, score.diagnosis_match_threshold)

        def lookup(request: Any, chain: tuple[str, str] = chain) -> Any:
            record = ledger.lookup(request.key())
            chains[record.key] = chain
            return record

        judge_follow_ups(score, score.case, episode, lookup)
    return chains


@contextmanager
def simulator_timed() -> Iterator[list[float]]:
    """Seconds of every `Simulator` construction and answer made meanwhile, in any thread of the process."""
    spent: list[float] = []
    lock = threading.Lock()

    def timed(method: Callable[..., Any]) -> Callable[..., Any]:
        @wraps(method)
        def run(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                with lock:
                    spent.append(time.perf_counter() - start)

        return run

    originals = {name: getattr(Simulator, name) for name in ("__init__", "answer")}
    for name, method in originals.items():
        setattr(Simulator, name, timed(method))
    try:
        yield spent
    finally:
        for name, method in originals.items():
            setattr(Simulator, name, method)


def main(out_dir: Path) -> dict[str, Any]:
    cases_dir = write_case_set(generate_cases(load_kb(), CASES), out_dir / "cases", CASES)
    run_dir = out_dir / f"run-{time.strftime('%Y%m%dT%H%M%S')}"
    warm_up_dir = out_dir / "warm-up"
    shutil.rmtree(warm_up_dir, ignore_errors=True)  # a warm-up replayed from its ledger would call nothing
    load_before = os.getloadavg()
    with served(LATENCY_S, reply="consult") as url:
        simulator_s: list[float] = []

        def run() -> None:
            with simulator_timed() as spent:
                evaluate(cases_dir, run_dir, url)
            simulator_s.extend(spent)

        timings = timed_calls(lambda: evaluate(cases_dir, warm_up_dir, url, limit=1), run, url)
    load_after = os.getloadavg()
    messages = pq.read_table(run_dir / "messages.parquet").to_pylist()
    made = [m for m in messages if m["role"] == "agent" and m["status"] == "ok"]
    chains = {m["call_key"]: (m["model"], m["case_id"]) for m in made}
    judged = judge_chains(cases_dir, run_dir, url, messages)
    chains.update(judged)
    latencies = [record.latency_s for record in CallLedger(run_dir / "ledger").records()]
    # Every recorded reply was a call at the server: none was answered from the ledger, so the bound holds.
    assert len(latencies) == len(chains) == timings["calls"], (len(latencies), len(chains), timings["calls"])
    per_episode = Counter(chains.values())
    longest = max(per_episode.values())
    bound_s = max(timings["calls"] * LATENCY_S / CONCURRENCY, longest * LATENCY_S)
    # Calls' own latencies, measured around litellm.completion inside the provider slot.
    split = slot_split(timings["wall_s"], timings["calls"], LATENCY_S, CONCURRENCY, latencies)
    idle = idle_slot_time(ledger_calls(run_dir, chains), CONCURRENCY)
    per_call_ms = 1000 / timings["calls"]
    simulator_ms = sum(simulator_s) * per_call_ms
    return {
        "agents": len(AGENTS),
        "cases": CASES.n,
        "episodes": len(per_episode),
        "judge_calls": len(judged),
        "calls_per_episode": [min(per_episode.values()), longest],
        "latency_s": LATENCY_S,
        "concurrency": CONCURRENCY,
        **timings,
        "bound_s": bound_s,
        "ratio": timings["wall_s"] / bound_s,
        **split,
        "outside_calls_ms": (timings["wall_s"] - idle["span_s"]) * CONCURRENCY * per_call_ms,
        "tail_ms": idle["tail_s"] * per_call_ms,
        "hand_offs_ms": idle["hand_offs_s"] * per_call_ms,
        "simulator_turns": len(simulator_s),
        "simulator_ms": simulator_ms,  # per call; an episode waits for it between two calls
        "simulator_share": simulator_ms / split["orchestration_ms"],
        "load_average": {"before": load_before, "after": load_after},
        "target_ratio": TARGET_RATIO,
        "target_overhead_ms": TARGET_OVERHEAD_MS,
    }


def summary_lines(results: dict[str, Any]) -> list[str]:
    shortest, longest = results["calls_per_episode"]
    load = " / ".join(f"{value:.2f}" for value in results["load_average"]["after"])
    return [
        f"{results['agents']} agents x {results['cases']} cases: {results['episodes']} episodes "
        f"of {shortest} to {longest} calls, {results['calls']:,} calls ({results['judge_calls']:,} by the "
        f"judge) at "
        f"{results['latency_s'] * 1000:.0f} ms, concurrency {results['concurrency']} (max in flight "
        f"{results['max_in_flight']}); start-up {results['startup_s']:.0f} s",
        f"wall {results['wall_s']:.1f} s vs bound {results['bound_s']:.1f} s: {results['ratio']:.2f}x "
        f"(target <= {results['target_ratio']}x); CPU {results['cpu_s']:.1f} s; load average {load}",
        slot_split_line(results),
        f"orchestration: {results['outside_calls_ms']:.1f} ms before the first call and after the last "
        f"(plan, Prefect, outputs), {results['tail_ms']:.1f} ms in the tail (fewer episodes left than "
        f"slots), {results['hand_offs_ms']:.1f} ms at hand-offs between an episode's calls",
        f"simulator: {results['simulator_ms']:.2f} ms per call ({results['simulator_turns']:,} builds and "
        f"answers), {results['simulator_share']:.1%} of orchestration",
    ]


if __name__ == "__main__":
    outcome = main(Path("data_lake/bench/consult_evaluation"))
    print(json.dumps(outcome, indent=2))
    print("\n".join(summary_lines(outcome)))
