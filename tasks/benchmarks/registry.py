"""Every benchmark by name: adding one is a folder under tasks/benchmarks/ and a line here."""

from tasks.benchmarks.consult.benchmark import CONSULT
from tasks.benchmarks.protocol import Benchmark
from tasks.benchmarks.snomed.benchmark import SNOMED
from tasks.benchmarks.threadmed.benchmark import THREADMED

BENCHMARKS: dict[str, Benchmark] = {benchmark.name: benchmark for benchmark in (THREADMED, SNOMED, CONSULT)}


def benchmark(name: str) -> Benchmark:
    """The benchmark called `name`; a ValueError naming the known ones otherwise."""
    try:
        return BENCHMARKS[name]
    except KeyError:
        known = ", ".join(sorted(BENCHMARKS))
        raise ValueError(f"unknown benchmark {name!r}; known benchmarks: {known}") from None
