"""Reading a built case set for a run: its check, its fingerprint, its seeded sample and its vocabulary."""

import json
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tasks.benchmarks.snomed.case import Case
from tasks.benchmarks.snomed.cases.case_set import CASES_FILE, MANIFEST_FILE, case_set_vocabulary, unit_hash
from tasks.benchmarks.snomed.contracts import cases_from_table
from tasks.benchmarks.snomed.vocabulary import derive_synthea_vocabulary
from tasks.core.files import read_verified_bytes
from tasks.core.preflight import UserError, remedy
from tasks.evals.config import RunConfig, SampleSpec


def check_case_set(case_set_dir: Path) -> None:
    """Raise UserError unless the folder holds a case set that `threadmed snomed cases` wrote, whole."""
    read_cases_bytes(case_set_dir)


def read_cases_bytes(case_set_dir: Path) -> bytes:
    """cases.parquet's bytes, checked against the sha256 its manifest records: a case set rebuilt or
    interrupted under an old manifest is refused, never read as the manifest's."""
    for name in (CASES_FILE, MANIFEST_FILE):
        if not (Path(case_set_dir) / name).is_file():
            fix = remedy(
                "pass the --out folder of `threadmed snomed cases`", "pass the out_dir of a snomed-cases run"
            )
            raise UserError(f"{case_set_dir} is not a SNOMED case set (no {name}); {fix}", "--cases")
    try:
        return read_verified_bytes(Path(case_set_dir) / CASES_FILE, case_set_fingerprint(case_set_dir))
    except ValueError as error:
        fix = remedy("with `threadmed snomed cases`", "with a snomed-cases run")
        raise UserError(f"{error}: rebuild the case set {fix}", "--cases") from None


def case_set_manifest(case_set_dir: Path) -> dict[str, Any]:
    return json.loads((Path(case_set_dir) / MANIFEST_FILE).read_text(encoding="utf-8"))


def run_case_set_facts(case_set_dir: Path) -> dict[str, Any]:
    """What a run's manifest records of its case set (under `case_set`): settings, counts and source."""
    manifest = case_set_manifest(case_set_dir)
    return {key: manifest[key] for key in ("settings", "counts", "source")}


def case_set_fingerprint(case_set_dir: Path) -> str:
    """The sha256 of cases.parquet, as its manifest records it."""
    return case_set_manifest(case_set_dir)["cases_sha256"]


def load_case_set(case_set_dir: Path) -> list[Case]:
    """The cases in file order, once cases.parquet is checked against its manifest."""
    return cases_from_table(pq.read_table(pa.BufferReader(read_cases_bytes(case_set_dir))))


def load_sample(case_set_dir: Path, sample: SampleSpec) -> list[Case]:
    """The cases of `sample.split` in a seeded order (independent of the file's order), the first `limit`."""
    cases = [case for case in load_case_set(case_set_dir) if case.split == sample.split]
    if not cases:
        splits = sorted({case.split for case in load_case_set(case_set_dir)})
        raise UserError(f"the case set has no {sample.split!r} cases; its splits: {splits}", "--split")
    ordered = sorted(cases, key=lambda case: unit_hash(sample.seed, "run-sample", case.case_id))
    return ordered[: sample.limit]


def check_sample_split(case_set_dir: Path, config: RunConfig) -> None:
    """Raise UserError when the run's sampled split holds no case of the case set."""
    load_sample(case_set_dir, config.sample)


def vocabulary_codes(case_set_dir: Path) -> frozenset[str]:
    """Every code a valid prediction may name: the installed Synthea modules' and the case set's records'."""
    return _vocabulary_codes(Path(case_set_dir).resolve(), case_set_fingerprint(case_set_dir))


@cache  # by fingerprint too: a case set rebuilt in the same folder is read again
def _vocabulary_codes(case_set_dir: Path, fingerprint: str) -> frozenset[str]:
    return frozenset(case_set_vocabulary(load_case_set(case_set_dir), derive_synthea_vocabulary()))
