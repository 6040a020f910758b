"""Synthea FHIR R4 bundles (`output/fhir/*.json`, one patient per bundle) -> PatientRecords -> Cases.

Bundles are read one at a time (a few MB each). Bundles without a Patient (Synthea's hospital and
practitioner information bundles) are skipped.
"""

from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import orjson

from tasks.benchmarks.snomed.case import Case, RecordObservation
from tasks.benchmarks.snomed.cases.records import (
    PatientRecord,
    SourceCondition,
    SourceItem,
    build_case,
    observation_kind,
)
from tasks.benchmarks.snomed.cases.settings import CaseSetSettings
from tasks.benchmarks.snomed.vocabulary import SNOMED_SYSTEMS, Vocabulary

Resource = dict[str, Any]
LOINC_SYSTEM = "http://loinc.org"
# FHIR statuses of an allergy or a prescription that still holds at export time.
CURRENT_STATUSES = frozenset({"active", "on-hold"})


def fhir_date(value: str | None) -> date | None:
    """`2019-02-17T05:07:38+00:00` or `2019-02-17` -> the date; None stays None."""
    return date.fromisoformat(value[:10]) if value else None


def first_coding(concept: Resource | None, systems: frozenset[str] | None = None) -> Resource | None:
    """The first coding of a CodeableConcept, of one of `systems` when given."""
    for coding in (concept or {}).get("coding") or []:
        if systems is None or coding.get("system") in systems:
            return coding
    return None


def status_code(concept: Resource | None) -> str | None:
    coding = first_coding(concept)
    return coding.get("code") if coding else None


def format_quantity(value: Any) -> str:
    """Numbers as Synthea wrote them (`166.8`, `3`), never in exponent form."""
    return repr(value) if isinstance(value, float) else str(value)


def observation_value(resource: Resource) -> tuple[str, str | None] | None:
    """(value, unit) of a valueQuantity, valueCodeableConcept or valueString; None when it has no value."""
    if "valueQuantity" in resource:
        quantity = resource["valueQuantity"]
        if quantity.get("value") is None:
            return None
        return format_quantity(quantity["value"]), quantity.get("unit") or quantity.get("code")
    if "valueCodeableConcept" in resource:
        concept = resource["valueCodeableConcept"]
        coding = first_coding(concept)
        text = concept.get("text") or (coding or {}).get("display") or (coding or {}).get("code")
        return (text, None) if text else None
    for key in ("valueString", "valueBoolean", "valueInteger"):
        if key in resource:
            return str(resource[key]), None
    return None


def observations_of(resource: Resource) -> list[RecordObservation]:
    """One observation, or one per component (a blood pressure panel gives systolic and diastolic)."""
    category = next((status_code(c) for c in resource.get("category") or []), None)
    observed_on = fhir_date(
        resource.get("effectiveDateTime") or (resource.get("effectivePeriod") or {}).get("start")
    )
    parts = resource.get("component") or [resource]
    found = []
    for part in parts:
        coding = first_coding(part.get("code"), frozenset({LOINC_SYSTEM})) or first_coding(part.get("code"))
        value = observation_value(part)
        if coding is None or value is None:
            continue
        found.append(
            RecordObservation(
                code=str(coding["code"]),
                display=str(coding.get("display") or coding["code"]),
                value=value[0],
                unit=value[1],
                observed_on=observed_on,
                kind=observation_kind(category),
            )
        )
    return found


def medication_coding(resource: Resource, medications: dict[str, Resource]) -> Resource | None:
    """The drug of a MedicationRequest, inline or through a Medication resource of the bundle."""
    if "medicationCodeableConcept" in resource:
        return first_coding(resource["medicationCodeableConcept"])
    reference = (resource.get("medicationReference") or {}).get("reference") or ""
    medication = medications.get(reference.removeprefix("urn:uuid:").rpartition("/")[2])
    return first_coding(medication.get("code")) if medication else None


def bundle_resources(bundle: Resource) -> Iterator[Resource]:
    for entry in bundle.get("entry") or []:
        if "resource" in entry:
            yield entry["resource"]


def record_from_bundle(bundle: Resource) -> PatientRecord | None:
    """One patient's bundle -> its record; None for a bundle with no Patient."""
    resources = list(bundle_resources(bundle))
    patient = next((r for r in resources if r.get("resourceType") == "Patient"), None)
    if patient is None:
        return None
    by_type: dict[str, list[Resource]] = {}
    for resource in resources:
        by_type.setdefault(resource.get("resourceType", ""), []).append(resource)
    medications = {str(r.get("id")): r for r in by_type.get("Medication", [])}

    conditions = []
    for resource in by_type.get("Condition", []):
        coding = first_coding(resource.get("code"), SNOMED_SYSTEMS)
        if coding is not None:
            conditions.append(
                SourceCondition(
                    code=str(coding["code"]),
                    display=str(coding.get("display") or ""),
                    onset=fhir_date(resource.get("onsetDateTime")),
                    stop=fhir_date(resource.get("abatementDateTime")),
                )
            )
    prescriptions = []
    for resource in by_type.get("MedicationRequest", []):
        coding = medication_coding(resource, medications)
        if coding is not None and resource.get("status") in CURRENT_STATUSES:
            prescriptions.append(
                SourceItem(
                    code=str(coding["code"]),
                    display=str(coding.get("display") or coding["code"]),
                    start=fhir_date(resource.get("authoredOn")),
                )
            )
    allergies = []
    for resource in by_type.get("AllergyIntolerance", []):
        coding = first_coding(resource.get("code"))
        status = status_code(resource.get("clinicalStatus"))
        if coding is not None and status in (None, *CURRENT_STATUSES):
            allergies.append(
                SourceItem(
                    code=str(coding["code"]),
                    display=str(coding.get("display") or coding["code"]),
                    start=fhir_date(resource.get("onsetDateTime") or resource.get("recordedDate")),
                )
            )
    observations = [o for r in by_type.get("Observation", []) for o in observations_of(r)]
    encounter_dates = [fhir_date((r.get("period") or {}).get("start")) for r in by_type.get("Encounter", [])]
    dated = [
        *encounter_dates,
        *(c.onset for c in conditions),
        *(o.observed_on for o in observations),
        *(m.start for m in prescriptions),
        *(a.start for a in allergies),
    ]
    return PatientRecord(
        patient_id=str(patient.get("id")),
        birth_date=fhir_date(patient.get("birthDate")),
        sex=patient.get("gender"),
        last_record_date=max((d for d in dated if d is not None), default=None),
        conditions=tuple(conditions),
        observations=tuple(observations),
        medications=tuple(prescriptions),
        allergies=tuple(allergies),
    )


def fhir_bundle_paths(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json"))


def read_fhir_cases(
    folder: Path, settings: CaseSetSettings, vocabulary: Vocabulary | None = None
) -> list[Case]:
    """A folder of Synthea FHIR R4 bundles -> one Case per patient bundle, in file-name order."""
    cases = []
    for path in fhir_bundle_paths(folder):
        record = record_from_bundle(orjson.loads(path.read_bytes()))
        if record is not None:
            cases.append(build_case(record, "fhir", settings, vocabulary))
    return cases
