"""`make bench`: run every benchmark side by side and write their numbers to data_lake/bench/.

Usage: python -m tests.perf [build|evaluation|evaluation-dask|call-throughput|cluster-limits|
cluster-round-trips|report|snomed-cases|snomed-evaluation|snomed-patient-leaks|snomed-oracle-leaks|
consult-simulator|consult-mining|consult-evaluation|consult-critic|parsers|ledger|startup|task-runs ...]
[--calls N]
(default: all but evaluation-dask; `--calls` sets the ledger benchmark's calls, 100,000 by default)
"""

import argparse
import importlib
import json
import sys
from pathlib import Path
from types import ModuleType

# Each benchmark's module (tests/perf/bench_<module>.py), imported only when it runs: a Dask worker process
# imports this module again as it starts (multiprocessing's spawn), and importing every benchmark cost each
# worker of the Dask evaluation 1.7 s of CPU that a worker of `threadmed` does not spend.
BENCHMARKS = {
    name: name.replace("-", "_")
    for name in (
        "build",
        "evaluation",
        "evaluation-dask",
        "call-throughput",
        "cluster-limits",
        "cluster-round-trips",
        "report",
        "snomed-cases",
        "snomed-evaluation",
        "snomed-patient-leaks",
        "snomed-oracle-leaks",
        "consult-simulator",
        "consult-mining",
        "consult-evaluation",
        "consult-critic",
        "parsers",
        "ledger",
        "startup",
        "task-runs",
    )
}
# Run only when named: the evaluation on Dask took 17 minutes at load 10-18 (README.md).
ON_REQUEST = {"evaluation-dask"}
OUT = Path("data_lake/bench")


def main(names: list[str], ledger_calls: int | None = None) -> None:
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        sys.exit(f"unknown benchmark(s) {unknown}; choose from {sorted(BENCHMARKS)}")
    results = {}
    for name in names or [name for name in BENCHMARKS if name not in ON_REQUEST]:
        print(f"== {name} ==", flush=True)
        bench = benchmark_module(name)
        if name == "ledger" and ledger_calls is not None:
            results[name] = bench.main(OUT / name, ledger_calls)
        else:
            results[name] = bench.main(OUT / name)
        for line in bench.summary_lines(results[name]):
            print(f"  {line}", flush=True)
    path = OUT / "results.json"
    path.parent.mkdir(parents=True, exist_ok=True)  # a benchmark that writes no files leaves none
    existing = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps({**existing, **results}, indent=2, default=str))
    print(f"numbers written to {path}")


def benchmark_module(name: str) -> ModuleType:
    return importlib.import_module(f"tests.perf.bench_{BENCHMARKS[name]}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m tests.perf")
    parser.add_argument("names", nargs="*")
    parser.add_argument("--calls", type=int, help="calls the ledger benchmark records (default 100,000)")
    arguments = parser.parse_args()
    main(arguments.names, arguments.calls)
