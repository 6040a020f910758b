"""`make bench`: run every benchmark side by side and write their numbers to data_lake/bench/.

Usage: python -m tests.perf [build|evaluation|evaluation-dask|call-throughput|cluster-limits|
cluster-round-trips|report|snomed-cases|snomed-evaluation|snomed-patient-leaks|snomed-oracle-leaks|
consult-simulator|consult-mining|consult-evaluation|consult-critic|parsers|ledger|startup|task-runs ...]
[--calls N]
(default: all but evaluation-dask; `--calls` sets the ledger benchmark's calls, 100,000 by default)
"""

import argparse
import json
import sys
from pathlib import Path

from tests.perf import (
    bench_build,
    bench_call_throughput,
    bench_cluster_limits,
    bench_cluster_round_trips,
    bench_consult_critic,
    bench_consult_evaluation,
    bench_consult_mining,
    bench_consult_simulator,
    bench_evaluation,
    bench_evaluation_dask,
    bench_ledger,
    bench_parsers,
    bench_report,
    bench_snomed_cases,
    bench_snomed_evaluation,
    bench_snomed_oracle_leaks,
    bench_snomed_patient_leaks,
    bench_startup,
    bench_task_runs,
)

BENCHMARKS = {
    "build": bench_build,
    "evaluation": bench_evaluation,
    "evaluation-dask": bench_evaluation_dask,
    "call-throughput": bench_call_throughput,
    "cluster-limits": bench_cluster_limits,
    "cluster-round-trips": bench_cluster_round_trips,
    "report": bench_report,
    "snomed-cases": bench_snomed_cases,
    "snomed-evaluation": bench_snomed_evaluation,
    "snomed-patient-leaks": bench_snomed_patient_leaks,
    "snomed-oracle-leaks": bench_snomed_oracle_leaks,
    "consult-simulator": bench_consult_simulator,
    "consult-mining": bench_consult_mining,
    "consult-evaluation": bench_consult_evaluation,
    "consult-critic": bench_consult_critic,
    "parsers": bench_parsers,
    "ledger": bench_ledger,
    "startup": bench_startup,
    "task-runs": bench_task_runs,
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
        if name == "ledger" and ledger_calls is not None:
            results[name] = bench_ledger.main(OUT / name, ledger_calls)
        else:
            results[name] = BENCHMARKS[name].main(OUT / name)
        for line in BENCHMARKS[name].summary_lines(results[name]):
            print(f"  {line}", flush=True)
    path = OUT / "results.json"
    path.parent.mkdir(parents=True, exist_ok=True)  # a benchmark that writes no files leaves none
    existing = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps({**existing, **results}, indent=2, default=str))
    print(f"numbers written to {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m tests.perf")
    parser.add_argument("names", nargs="*")
    parser.add_argument("--calls", type=int, help="calls the ledger benchmark records (default 100,000)")
    arguments = parser.parse_args()
    main(arguments.names, arguments.calls)
