"""Reading a built case set for a run: its check, its fingerprint, its seeded sample and its vocabulary."""

import json
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from tasks.benchmarks.snomed.case import Case
from tasks.benchmarks.snomed.cases.case_set import CASES_FILE, MANIFEST_FILE, case_set_vocabulary, unit_hash
from tasks.benchmarks.snomed.contracts import cases_from_table
from tasks.benchmarks.snomed.vocabulary import derive_synthea_vocabulary
from tasks.core.preflight import UserError
from tasks.evals.config import SampleSpec


def check_case_set(case_set_dir: Path) -> None:
    """Raise UserError unless the folder holds a case set that `threadmed snomed cases` wrote."""
    for name in (CASES_FILE, MANIFEST_FILE):
        if not (Path(case_set_dir) / name).is_file():
            raise UserError(
                f"{case_set_dir} is not a SNOMED case set (no {name}); "
                "pass the --out folder of `threadmed snomed cases`",
                "--cases",
            )


def case_set_manifest(case_set_dir: Path) -> dict[str, Any]:
    return json.loads((Path(case_set_dir) / MANIFEST_FILE).read_text(encoding="utf-8"))


def case_set_fingerprint(case_set_dir: Path) -> str:
    """The sha256 of cases.parquet, as its manifest records it."""
    return case_set_manifest(case_set_dir)["cases_sha256"]


def load_case_set(case_set_dir: Path) -> list[Case]:
    check_case_set(case_set_dir)
    return cases_from_table(pq.read_table(Path(case_set_dir) / CASES_FILE))


def load_sample(case_set_dir: Path, sample: SampleSpec) -> list[Case]:
    """The cases of `sample.split` in a seeded order (independent of the file's order), the first `limit`."""
    cases = [case for case in load_case_set(case_set_dir) if case.split == sample.split]
    if not cases:
        splits = sorted({case.split for case in load_case_set(case_set_dir)})
        raise UserError(f"the case set has no {sample.split!r} cases; its splits: {splits}", "--split")
    ordered = sorted(cases, key=lambda case: unit_hash(sample.seed, "run-sample", case.case_id))
    return ordered[: sample.limit]


def vocabulary_codes(case_set_dir: Path) -> frozenset[str]:
    """Every code a valid prediction may name: the installed Synthea modules' and the case set's records'."""
    return _vocabulary_codes(Path(case_set_dir).resolve(), case_set_fingerprint(case_set_dir))


@cache  # by fingerprint too: a case set rebuilt in the same folder is read again
def _vocabulary_codes(case_set_dir: Path, fingerprint: str) -> frozenset[str]:
    return frozenset(case_set_vocabulary(load_case_set(case_set_dir), derive_synthea_vocabulary()))
