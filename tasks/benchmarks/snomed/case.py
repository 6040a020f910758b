"""One SNOMED benchmark case: a Synthea patient's record as of a reference date, and its gold codes.

Every case builder (FHIR bundles, Synthea CSV, OMOP CDM, the reference benchmark's JSON) returns these,
so the interview, the offline patient and the scorer never see the source format.
"""

from datetime import date
from typing import Literal

from pydantic import BaseModel

from tasks.data.patients.records import RecordObservation


class RecordCondition(BaseModel, frozen=True):
    """A condition of the record; `semantic_tag` is the display's parenthesised suffix or the vocabulary's."""

    code: str
    display: str
    onset: date | None = None
    stop: date | None = None
    semantic_tag: str | None = None


class RecordItem(BaseModel, frozen=True):
    """A current medication or an allergy: its code (RxNorm, SNOMED) and display."""

    code: str
    display: str


class PatientRecord(BaseModel, frozen=True):
    """What a simulated patient may know: its record as of the reference date, without ids or gold codes."""

    reference_date: date | None
    age_years: int | None
    sex: Literal["female", "male"] | None
    conditions: tuple[RecordCondition, ...]
    observations: tuple[RecordObservation, ...]  # the latest value per kind before the reference date
    # None: the source does not say (no such section, or an item of it unread); () is a recorded "none".
    medications: tuple[RecordItem, ...] | None = None
    allergies: tuple[RecordItem, ...] | None = None

    def patient_record(self) -> "PatientRecord":
        """Only the record's fields (a Case's ids and gold codes left out)."""
        return PatientRecord.model_validate(self.model_dump(include=set(PatientRecord.model_fields)))


class Case(PatientRecord, frozen=True):
    """One patient to interview. `gold_codes` is sorted and unique; `gold_displays` is aligned with it."""

    case_id: str
    source: Literal["fhir", "synthea_csv", "omop", "reference"]
    patient_id: str
    gold_codes: tuple[str, ...]
    gold_displays: tuple[str, ...]
    split: str = "test"
