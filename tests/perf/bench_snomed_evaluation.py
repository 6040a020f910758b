"""SNOMED evaluation benchmark: 2 clinicians x 60 cases, interviews of 5 to 20 questions, then scoring.

The real `snomed-evaluate` flow (no report) runs against the test server as a subprocess (tests/perf/
calls.py) with a fixed latency, its `snomed` replies playing both roles: each clinician asks a number of
questions set by a hash of its name and the case, then gives its final answer; the patient is an LLM role
of the same server. Clinicians and patient share one provider limit C.

Inside an interview every call waits for the one before (clinician, patient, clinician, ...), and
interviews run in parallel, so the lower bound of the wall time is the larger of (total calls x latency /
C) and the longest interview's calls x latency. Per call, slot time beyond the latency splits into the
call layer and orchestration as in the evaluation benchmark; orchestration is then split further with the
ledger's call times: time before the first call and after the last (plan, Prefect, writing outputs), slots
idle in the run's tail (fewer interviews left than slots) and slots idle while interviews were between
calls (hand-offs: the interview loop, Prefect, the GIL). Targets: wall within 1.3x of the bound,
orchestration under 10 ms per call.
"""

import json
import os
import random
import shutil
import time
from collections import Counter
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from flows.snomed_evaluate import snomed_evaluate
from tasks.benchmarks.snomed.case import Case
from tasks.benchmarks.snomed.config import SnomedConfig
from tasks.benchmarks.snomed.patient import load_lexicon
from tasks.evals.config import ModelSpec, SampleSpec
from tasks.llm.ledger import CallLedger
from tasks.llm.request import ProviderLimits
from tests.llm_replies import SNOMED_PATIENT
from tests.perf.calls import served, slot_split, slot_split_line, timed_calls
from tests.snomed_fixtures import case, write_case_set

SEED = 11
LATENCY_S = 0.2
# 8 slots at 200 ms is 40 calls/s. An interview's call holds the GIL ~10 ms (litellm and the openai SDK,
# whose request transform walks every message: 4 ms at 3 messages, 11 ms at 41), so the evaluation
# benchmark's 16 slots would keep one process's GIL ~80% busy and queue the calls behind it.
CONCURRENCY = 8
CLINICIANS = ("clinician-1", "clinician-2")
N_CASES = 60
CONDITIONS_PER_CASE = (1, 4)
TARGET_RATIO = 1.3
TARGET_OVERHEAD_MS = 10.0


def synthetic_cases(rng: random.Random) -> list[Case]:
    """Test-split cases of 1 to 4 conditions drawn from the lay lexicon's (real Synthea codes)."""
    conditions = sorted((code, entry.display) for code, entry in load_lexicon().conditions.items())
    return [
        case(f"c{i:03d}", "test", *rng.sample(conditions, rng.randint(*CONDITIONS_PER_CASE)))
        for i in range(N_CASES)
    ]


def config(url: str, limit: int | None = None) -> SnomedConfig:
    return SnomedConfig(
        models=[ModelSpec(name=name, model=f"openai/{name}", api_base=url) for name in CLINICIANS],
        patient=ModelSpec(name=SNOMED_PATIENT, model=f"openai/{SNOMED_PATIENT}", api_base=url),
        providers={"openai": ProviderLimits(max_concurrency=CONCURRENCY)},
        sample=SampleSpec(limit=limit),
    )


def evaluate(cases_dir: Path, run_dir: Path, url: str, limit: int | None = None) -> None:
    snomed_evaluate(cases_dir=str(cases_dir), run_dir=str(run_dir), config=config(url, limit), report=False)


def idle_slot_time(calls: Sequence[tuple[float, float, Hashable]], concurrency: int) -> dict[str, float]:
    """Slot-seconds left idle from the first call's start to the last call's end, by cause.

    `calls` are (start, end, chain) with the chain (an interview) whose calls run one after another. A slot
    is idle in the tail while fewer chains are under way than there are slots; it is idle at a hand-off
    while a chain under way is between two calls.
    """
    spans: dict[Hashable, list[float]] = {}
    for start, end, chain in calls:
        span = spans.setdefault(chain, [start, end])
        span[0], span[1] = min(span[0], start), max(span[1], end)
    # (time, change in calls in flight, change in chains under way); ends sort before starts at one time.
    events = sorted(
        [(start, 1, 0) for start, _, _ in calls]
        + [(end, -1, 0) for _, end, _ in calls]
        + [(start, 0, 1) for start, _ in spans.values()]
        + [(end, 0, -1) for _, end in spans.values()]
    )
    in_flight = under_way = 0
    tail = hand_offs = 0.0
    previous = events[0][0]
    for time_s, calls_change, chains_change in events:
        elapsed = time_s - previous
        usable = min(concurrency, under_way)
        tail += elapsed * (concurrency - usable)
        hand_offs += elapsed * (usable - in_flight)
        in_flight, under_way, previous = in_flight + calls_change, under_way + chains_change, time_s
    return {"span_s": events[-1][0] - events[0][0], "tail_s": tail, "hand_offs_s": hand_offs}


def ledger_calls(run_dir: Path, chain_of_key: dict[str, Hashable]) -> list[tuple[float, float, Hashable]]:
    """Each call's time in its slot (its latency, ending when it was recorded) and its interview."""
    return [
        (
            record.finished_at.timestamp() - record.latency_s,
            record.finished_at.timestamp(),
            chain_of_key[record.key],
        )
        for record in CallLedger(run_dir / "ledger").records()
    ]


def main(out_dir: Path) -> dict[str, Any]:
    cases_dir = write_case_set(out_dir / "cases", synthetic_cases(random.Random(SEED)))
    run_dir = out_dir / f"run-{time.strftime('%Y%m%dT%H%M%S')}"
    warm_up_dir = out_dir / "warm-up"
    shutil.rmtree(warm_up_dir, ignore_errors=True)  # a warm-up replayed from its ledger would call nothing
    load_before = os.getloadavg()
    with served(LATENCY_S, reply="snomed") as url:
        timings = timed_calls(
            lambda: evaluate(cases_dir, warm_up_dir, url, limit=1),
            lambda: evaluate(cases_dir, run_dir, url),
            url,
        )
    load_after = os.getloadavg()
    messages = pq.read_table(
        run_dir / "conversations.parquet", columns=["model", "case_id", "status", "latency_s", "call_key"]
    ).to_pylist()
    made = [m for m in messages if m["status"] == "ok"]
    # Every recorded reply was a call at the server: none was answered from the ledger, so the bound holds.
    assert len(made) == timings["calls"], (len(made), timings["calls"])
    per_interview = Counter((m["model"], m["case_id"]) for m in made)
    longest = max(per_interview.values())
    bound_s = max(timings["calls"] * LATENCY_S / CONCURRENCY, longest * LATENCY_S)
    # Calls' own latencies, measured around litellm.completion inside the provider slot.
    latencies = [m["latency_s"] for m in made]
    idle = idle_slot_time(
        ledger_calls(run_dir, {m["call_key"]: (m["model"], m["case_id"]) for m in made}), CONCURRENCY
    )
    per_call_ms = 1000 / timings["calls"]
    return {
        "clinicians": len(CLINICIANS),
        "cases": N_CASES,
        "interviews": len(per_interview),
        "calls_per_interview": [min(per_interview.values()), longest],
        "latency_s": LATENCY_S,
        "concurrency": CONCURRENCY,
        **timings,
        "bound_s": bound_s,
        "ratio": timings["wall_s"] / bound_s,
        **slot_split(timings["wall_s"], timings["calls"], LATENCY_S, CONCURRENCY, latencies),
        "outside_calls_ms": (timings["wall_s"] - idle["span_s"]) * CONCURRENCY * per_call_ms,
        "tail_ms": idle["tail_s"] * per_call_ms,
        "hand_offs_ms": idle["hand_offs_s"] * per_call_ms,
        "load_average": {"before": load_before, "after": load_after},
        "target_ratio": TARGET_RATIO,
        "target_overhead_ms": TARGET_OVERHEAD_MS,
    }


def summary_lines(results: dict[str, Any]) -> list[str]:
    shortest, longest = results["calls_per_interview"]
    load = " / ".join(f"{value:.2f}" for value in results["load_average"]["after"])
    return [
        f"{results['clinicians']} clinicians x {results['cases']} cases: {results['interviews']} interviews "
        f"of {shortest} to {longest} calls, {results['calls']:,} calls at "
        f"{results['latency_s'] * 1000:.0f} ms, concurrency {results['concurrency']} (max in flight "
        f"{results['max_in_flight']}); start-up {results['startup_s']:.0f} s",
        f"wall {results['wall_s']:.1f} s vs bound {results['bound_s']:.1f} s: {results['ratio']:.2f}x "
        f"(target <= {results['target_ratio']}x); CPU {results['cpu_s']:.1f} s; load average {load}",
        slot_split_line(results),
        f"orchestration: {results['outside_calls_ms']:.1f} ms before the first call and after the last "
        f"(plan, Prefect, outputs), {results['tail_ms']:.1f} ms in the tail (fewer interviews left than "
        f"slots), {results['hand_offs_ms']:.1f} ms at hand-offs between an interview's calls",
    ]


if __name__ == "__main__":
    outcome = main(Path("data_lake/bench/snomed_evaluation"))
    print(json.dumps(outcome, indent=2))
    print("\n".join(summary_lines(outcome)))
