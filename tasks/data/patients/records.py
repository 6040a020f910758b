"""A patient's whole record as a source gives it, whatever the format: what every patient-record reader
(FHIR, Synthea CSV, OMOP) returns, and what their errors look like.

The readers only translate a format into `PatientRecord`s; what a benchmark makes of a record (a SNOMED
case read at a reference date, a consultation patient's age and sex) is the benchmark's.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import BaseModel

# The oldest verified human lifespan is 122 years (Jeanne Calment, 1875-1997; Guinness World Records):
# an age beyond this bound at the reference date means a wrong date in the record.
MAX_AGE_YEARS = 125

# How SNOMED CT's code system is spelled in FHIR (its URI) and in Synthea's CSV export.
SNOMED_SYSTEMS = frozenset({"SNOMED-CT", "SNOMED CT", "http://snomed.info/sct"})

ObservationKind = Literal["vital", "lab", "survey", "other"]
OBSERVATION_KINDS: dict[str, ObservationKind] = {
    "vital-signs": "vital",
    "laboratory": "lab",
    "survey": "survey",
}


class SourceError(ValueError):
    """Input a reader cannot turn into cases: one line naming the file, the record and the fix."""


@contextmanager
def located(where: object) -> Iterator[None]:
    """Prefix a SourceError raised inside the block with where it happened (a file, then a record)."""
    try:
        yield
    except SourceError as error:
        raise SourceError(f"{where}: {error}") from None


def read_json_file(path: Path) -> Any:
    """A JSON file's value; one line with the position when it is not JSON (a truncated copy, say)."""
    try:
        return orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as error:
        raise SourceError(
            f"not valid JSON: {error.msg} at line {error.lineno}, column {error.colno} (byte {error.pos}); "
            "the file may be truncated or empty: export or copy it again"
        ) from None


class SourceCondition(BaseModel, frozen=True):
    """One episode of a condition: a code can recur (viral sinusitis), each episode with its own dates."""

    code: str
    display: str
    onset: date | None = None
    stop: date | None = None


class SourceItem(BaseModel, frozen=True):
    """A medication or an allergy with the dates it held; no stop means still current."""

    code: str
    display: str
    start: date | None = None
    stop: date | None = None


class RecordObservation(BaseModel, frozen=True):
    """A value of one observation kind (LOINC code) on a day."""

    code: str
    display: str
    value: str
    unit: str | None = None
    observed_on: date | None = None
    kind: ObservationKind = "other"


class PatientRecord(BaseModel, frozen=True):
    """Everything a source holds of one patient, undated facts included; a record of all time."""

    patient_id: str
    birth_date: date | None
    sex: str | None
    last_record_date: date | None
    conditions: tuple[SourceCondition, ...] = ()
    observations: tuple[RecordObservation, ...] = ()
    # None: the source does not say (no such section, or an item of it unread); () is a recorded "none".
    medications: tuple[SourceItem, ...] | None = None
    allergies: tuple[SourceItem, ...] | None = None


def observation_kind(category: str | None) -> ObservationKind:
    """FHIR observation category code (`vital-signs`, `laboratory`, `survey`) -> the case's kind."""
    return OBSERVATION_KINDS.get((category or "").strip().lower(), "other")


def normalize_sex(value: str | None) -> str | None:
    """`male`/`M`/`female`/`F` (any case) -> `male`/`female`; anything else -> None."""
    return {"m": "male", "male": "male", "f": "female", "female": "female"}.get((value or "").strip().lower())


def age_in_years(birth_date: date | None, on: date | None) -> int | None:
    if birth_date is None or on is None:
        return None
    return on.year - birth_date.year - ((on.month, on.day) < (birth_date.month, birth_date.day))


def checked_age(patient_id: str, birth_date: date | None, reference_date: date | None) -> int | None:
    """The age at the reference date; a SourceError when no one could be that old (or not yet born)."""
    age = age_in_years(birth_date, reference_date)
    if age is not None and not 0 <= age <= MAX_AGE_YEARS:
        raise SourceError(
            f"patient {patient_id}: age {age} at the reference date {reference_date} (born {birth_date}); "
            "a date of the record is wrong: fix it, or pass --reference-date to read the record at a "
            "date of your choice"
        )
    return age
