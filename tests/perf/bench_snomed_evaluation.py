"""SNOMED evaluation benchmark: 2 clinicians x 60 cases, interviews of 5 to 20 questions, then scoring.

The real `snomed-evaluate` flow (no report) runs against the test server as a subprocess (tests/perf/
calls.py) with a fixed latency, its `snomed` replies playing both roles: each clinician asks a number of
questions set by a hash of its name and the case, then gives its final answer; the patient is an LLM role
of the same server. Clinicians and patient share one provider limit C.

Inside an interview every call waits for the one before (clinician, patient, clinician, ...), and
interviews run in parallel, so the lower bound of the wall time is the larger of (total calls x latency /
C) and the longest interview's calls x latency. Per call, slot time beyond the latency splits into the
call layer and orchestration as in the evaluation benchmark. Targets: wall within 1.3x of the bound,
orchestration under 10 ms per call.
"""

import json
import os
import random
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from flows.snomed_evaluate import snomed_evaluate
from tasks.benchmarks.snomed.case import Case
from tasks.benchmarks.snomed.config import SnomedConfig
from tasks.benchmarks.snomed.patient import load_lexicon
from tasks.evals.config import ModelSpec, SampleSpec
from tasks.llm.request import ProviderLimits
from tests.llm_server import SNOMED_PATIENT
from tests.perf.calls import served, slot_split, slot_split_line, timed_calls
from tests.snomed_fixtures import case, write_case_set

SEED = 11
LATENCY_S = 0.2
# As in the evaluation benchmark: 16 slots at 200 ms (80 calls/s) is what one Python process drives.
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
        run_dir / "conversations.parquet", columns=["model", "case_id", "status", "latency_s"]
    ).to_pylist()
    made = [m for m in messages if m["status"] == "ok"]
    # Every recorded reply was a call at the server: none was answered from the ledger, so the bound holds.
    assert len(made) == timings["calls"], (len(made), timings["calls"])
    per_interview = Counter((m["model"], m["case_id"]) for m in made)
    longest = max(per_interview.values())
    bound_s = max(timings["calls"] * LATENCY_S / CONCURRENCY, longest * LATENCY_S)
    # Calls' own latencies, measured around litellm.completion inside the provider slot.
    latencies = [m["latency_s"] for m in made]
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
    ]


if __name__ == "__main__":
    outcome = main(Path("data_lake/bench/snomed_evaluation"))
    print(json.dumps(outcome, indent=2))
    print("\n".join(summary_lines(outcome)))
