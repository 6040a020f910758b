"""A case set: cases from any source, split and sampled by seeded hashes, written as `cases.parquet` plus
`manifest.json`. Same input and settings, same bytes: cases are sorted by id and nothing holds a clock."""

import hashlib
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq

from tasks.benchmarks.snomed.case import Case
from tasks.benchmarks.snomed.cases.records import (
    SourceCases,
    read_fhir_cases,
    read_omop_cases,
    read_synthea_csv_cases,
)
from tasks.benchmarks.snomed.cases.reference import read_reference_cases
from tasks.benchmarks.snomed.cases.settings import CaseSetSettings, SourceFormat
from tasks.benchmarks.snomed.contracts import cases_to_table
from tasks.benchmarks.snomed.vocabulary import (
    Vocabulary,
    add_case_set_codes,
    synthea_version,
    vocabulary_fingerprint,
)
from tasks.core.files import write_folder_atomic
from tasks.core.gc_pause import garbage_collection_paused
from tasks.data.patients.records import SourceError

READERS = {
    "fhir": read_fhir_cases,
    "synthea_csv": read_synthea_csv_cases,
    "omop": read_omop_cases,
    "reference": read_reference_cases,
}
CASES_FILE, MANIFEST_FILE = "cases.parquet", "manifest.json"
CASE_SET_FILES = (CASES_FILE, MANIFEST_FILE)
DUCKDB_SUFFIXES = (".duckdb", ".db", ".ddb")


def detect_source_format(path: Path) -> SourceFormat:
    """A reference JSON file, an OMOP DuckDB file, or a Synthea CSV, OMOP table or FHIR bundle folder."""
    if path.is_file():
        if path.suffix == ".json":
            return "reference"
        if path.suffix in DUCKDB_SUFFIXES:
            return "omop"
    elif path.is_dir():
        if (path / "patients.csv").exists():
            return "synthea_csv"
        if (path / "person.csv").exists() or (path / "person.parquet").exists():
            return "omop"
        if any(path.glob("*.json")):
            return "fhir"
    raise ValueError(
        f"cannot tell the format of {path}: expected a reference .json file, an OMOP .duckdb file, "
        "or a folder with patients.csv (Synthea CSV), person.csv/.parquet (OMOP) or *.json bundles (FHIR)"
    )


def unit_hash(seed: int, purpose: str, key: str) -> float:
    """A number in [0, 1) fixed by seed, purpose and key: the same patient always lands the same way."""
    digest = hashlib.sha256(f"{seed}:{purpose}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def finish_case_set(cases: list[Case], settings: CaseSetSettings) -> list[Case]:
    """Sort by case id (refusing duplicates), keep the seeded sample, and assign each case its split."""
    ordered = sorted(cases, key=lambda c: c.case_id)
    duplicates = sorted({a.case_id for a, b in itertools.pairwise(ordered) if a.case_id == b.case_id})
    if duplicates:
        raise ValueError(f"duplicate case ids: {duplicates[:5]}")
    if settings.sample_size is not None:
        chosen = sorted(ordered, key=lambda c: unit_hash(settings.seed, "sample", c.patient_id))
        keep = {c.case_id for c in chosen[: settings.sample_size]}
        ordered = [c for c in ordered if c.case_id in keep]
    return [
        case.model_copy(
            update={
                "split": "train"
                if unit_hash(settings.seed, "split", case.patient_id) < settings.train_share
                else "test"
            }
        )
        for case in ordered
    ]


def source_fingerprint(path: Path) -> str:
    """sha256 over content only: a file's bytes (what `sha256sum` prints), or a folder's top-level files as
    (name within the folder, sha256 of bytes) in name order. Where the source lies does not count."""
    if path.is_file():
        return file_sha256(path)
    digest = hashlib.sha256()
    for file in sorted(p for p in path.iterdir() if p.is_file()):
        digest.update(f"{file.name}\0{file_sha256(file)}\n".encode())
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def case_set_vocabulary(cases: list[Case], modules_vocabulary: Vocabulary) -> Vocabulary:
    """The Synthea modules' condition codes plus the case set's gold codes (snomed.md, "Scoring"): a record's
    condition that the gold scope or tags leave out (a "History of ... (situation)") is not a valid answer."""
    gold = (
        (code, display) for c in cases for code, display in zip(c.gold_codes, c.gold_displays, strict=True)
    )
    return add_case_set_codes(modules_vocabulary, gold)


def case_set_counts(cases: list[Case]) -> dict[str, int]:
    return {
        "cases": len(cases),
        "train": sum(c.split == "train" for c in cases),
        "test": sum(c.split == "test" for c in cases),
        "cases_without_gold": sum(not c.gold_codes for c in cases),
        "gold_codes": sum(len(c.gold_codes) for c in cases),
        "distinct_gold_codes": len({code for c in cases for code in c.gold_codes}),
        "conditions": sum(len(c.conditions) for c in cases),
        "observations": sum(len(c.observations) for c in cases),
    }


def write_cases_parquet(cases: list[Case], path: Path) -> str:
    """Write the cases (already in their final order) to `path`; return the file's sha256."""
    pq.write_table(cases_to_table(cases), path, compression="zstd")
    return file_sha256(path)


def write_case_set(cases: list[Case], manifest: Callable[[str], dict[str, Any]], out_dir: Path) -> Path:
    """`cases.parquet` and `manifest.json` (`manifest` of the parquet's sha256) written to `out_dir` as one:
    an interrupted build leaves the previous case set whole, never new cases under an old manifest."""

    def write(folder: Path) -> None:
        sha256 = write_cases_parquet(cases, folder / CASES_FILE)
        (folder / MANIFEST_FILE).write_bytes(
            orjson.dumps(manifest(sha256), option=orjson.OPT_INDENT_2) + b"\n"
        )

    return write_folder_atomic(out_dir, write, CASE_SET_FILES)


def case_set_manifest(
    cases: list[Case],
    source: Path,
    source_format: SourceFormat,
    settings: CaseSetSettings,
    vocabulary: Vocabulary,
    cases_sha256: str,
) -> dict[str, Any]:
    return {
        "table": "cases",
        "cases_sha256": cases_sha256,
        "source": {"path": str(source), "format": source_format, "fingerprint": source_fingerprint(source)},
        "settings": settings.model_dump(mode="json"),
        "counts": case_set_counts(cases),
        "vocabulary": {
            "fingerprint": vocabulary_fingerprint(vocabulary),
            "codes": len(vocabulary),
            "synthea_version": synthea_version(),
        },
    }


def check_gold(cases: list[Case], source: Path) -> None:
    """Raise SourceError when no case has a gold code: such a case set cannot score anything."""
    if not any(case.gold_codes for case in cases):
        raise SourceError(
            f"{source}: none of its {len(cases)} cases has a gold code; check that its conditions are "
            "SNOMED CT coded and kept by the gold options, or build it anyway with --allow-empty"
        )


def build_cases(
    source: Path,
    source_format: SourceFormat,
    settings: CaseSetSettings,
    modules_vocabulary: Vocabulary,
    allow_empty: bool = False,
) -> SourceCases:
    """Read the source in its format -> the finished, sorted, sampled and split cases, and what the reader
    skipped. Raises SourceError on an unreadable source, or one without a gold code unless `allow_empty`."""
    with garbage_collection_paused():
        read = READERS[source_format](source, settings, modules_vocabulary)
    cases = finish_case_set(read.cases, settings)
    if not allow_empty:
        check_gold(cases, source)
    return SourceCases(cases, read.skipped)
