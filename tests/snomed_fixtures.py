"""A tiny SNOMED case set written as `threadmed snomed cases` writes one, for the run and report tests, and
the replay of an interview's calls from its stored conversation."""

from datetime import date
from pathlib import Path
from typing import Any

from tasks.benchmarks.snomed.case import Case, RecordCondition, RecordObservation
from tasks.benchmarks.snomed.cases.case_set import case_set_manifest
from tasks.benchmarks.snomed.cases.case_set import write_case_set as write_case_set_files
from tasks.benchmarks.snomed.cases.settings import CaseSetSettings
from tasks.benchmarks.snomed.interview import Messages, Turn, messages_for


def case(case_id: str, split: str, *conditions: tuple[str, str]) -> Case:
    """A 40-year-old woman with `conditions` (all gold) and a high systolic blood pressure."""
    return Case(
        case_id=case_id,
        source="reference",
        patient_id=case_id,
        reference_date=date(2024, 1, 1),
        age_years=40,
        sex="female",
        conditions=tuple(RecordCondition(code=code, display=display) for code, display in conditions),
        observations=(
            RecordObservation(code="8480-6", display="Systolic Blood Pressure", value="150", unit="mm[Hg]"),
        ),
        gold_codes=tuple(code for code, _ in sorted(conditions)),
        gold_displays=tuple(display for _, display in sorted(conditions)),
        split=split,
    )


HYPERTENSION = ("59621000", "Essential hypertension (disorder)")
SINUSITIS = ("444814009", "Viral sinusitis (disorder)")
PREDIABETES = ("714628002", "Prediabetes (finding)")
CASES = [
    case("p1", "test", HYPERTENSION),
    case("p2", "test", SINUSITIS, PREDIABETES),
    case("p3", "train", HYPERTENSION, PREDIABETES),
]


DEFAULT_SETTINGS = CaseSetSettings()


def write_case_set(
    folder: Path, cases: list[Case] = CASES, settings: CaseSetSettings = DEFAULT_SETTINGS
) -> Path:
    """`cases.parquet` in the given order and its manifest, as `threadmed snomed cases` writes them."""
    source = Path(__file__)  # the cases are written here, by hand
    return write_case_set_files(
        cases, lambda sha256: case_set_manifest(cases, source, "reference", settings, {}, sha256), folder
    )


def replay_calls(rows: list[dict[str, Any]]) -> list[tuple[str, Messages]]:
    """(role, messages) of every call of one interview, rebuilt from its CONVERSATIONS rows alone."""
    ordered = sorted(rows, key=lambda row: row["message"])
    stored = [
        Turn(row["turn"], row["role"], row["text"], row["call_key"] or "", tuple(row["leaked_codes"]),
             row["sent_to"])
        for row in ordered
    ]  # fmt: skip
    return [
        (row["role"], messages_for(row["role"], stored[:index]))
        for index, row in enumerate(ordered)
        if row["status"] != "scripted"
    ]
