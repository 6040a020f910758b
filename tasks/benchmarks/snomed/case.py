"""One SNOMED benchmark case: a Synthea patient's record as of a reference date, and its gold codes.

Every case builder (FHIR bundles, Synthea CSV, OMOP CDM, the reference benchmark's JSON) returns these,
so the interview, the offline patient and the scorer never see the source format.
"""

from datetime import date
from typing import Literal

from pydantic import BaseModel

ObservationKind = Literal["vital", "lab", "survey", "other"]


class RecordCondition(BaseModel, frozen=True):
    """A condition of the record; `semantic_tag` is the display's parenthesised suffix or the vocabulary's."""

    code: str
    display: str
    onset: date | None = None
    stop: date | None = None
    semantic_tag: str | None = None


class RecordObservation(BaseModel, frozen=True):
    """The latest value of one observation kind (LOINC code) before the reference date."""

    code: str
    display: str
    value: str
    unit: str | None = None
    observed_on: date | None = None
    kind: ObservationKind = "other"


class RecordItem(BaseModel, frozen=True):
    """A current medication or an allergy: its code (RxNorm, SNOMED) and display."""

    code: str
    display: str


class Case(BaseModel, frozen=True):
    """One patient to interview. `gold_codes` is sorted and unique; `gold_displays` is aligned with it."""

    case_id: str
    source: Literal["fhir", "synthea_csv", "omop", "reference"]
    patient_id: str
    reference_date: date | None
    age_years: int | None
    sex: Literal["female", "male"] | None
    conditions: tuple[RecordCondition, ...]
    observations: tuple[RecordObservation, ...]
    medications: tuple[RecordItem, ...] = ()
    allergies: tuple[RecordItem, ...] = ()
    gold_codes: tuple[str, ...]
    gold_displays: tuple[str, ...]
    split: str = "test"
