"""Every benchmark by name: adding one is a folder under tasks/benchmarks/ and a line here."""

from tasks.benchmarks.consult.benchmark import CONSULT
from tasks.benchmarks.snomed.benchmark import SNOMED
from tasks.benchmarks.snomed.oracle.benchmark import ORACLE_DATA
from tasks.benchmarks.snomed.patient_bench.benchmark import PATIENT_BENCH
from tasks.benchmarks.threadmed.benchmark import THREADMED
from tasks.evals.protocol import Benchmark

BENCHMARKS: dict[str, Benchmark] = {benchmark.name: benchmark for benchmark in (THREADMED, SNOMED, CONSULT)}
# Every run the shared machinery makes, by the name its batches record (`batches/run.json`): the benchmarks
# and the SNOMED patient oracle's tools, whose batch-mode runs the poller finishes too.
RUN_KINDS: dict[str, Benchmark] = {**BENCHMARKS, **{tool.name: tool for tool in (ORACLE_DATA, PATIENT_BENCH)}}


def benchmark(name: str) -> Benchmark:
    """The benchmark called `name`; a ValueError naming the known ones otherwise."""
    return _named(BENCHMARKS, name, "benchmark")


def run_kind(name: str) -> Benchmark:
    """What made a run recorded as `name`: a benchmark or an oracle tool; ValueError naming them if none."""
    return _named(RUN_KINDS, name, "run kind")


def _named(known: dict[str, Benchmark], name: str, noun: str) -> Benchmark:
    try:
        return known[name]
    except KeyError:
        raise ValueError(f"unknown {noun} {name!r}; known {noun}s: {', '.join(sorted(known))}") from None
