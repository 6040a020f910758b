"""Synthea FHIR R4 bundles (`output/fhir/*.json`, one patient per bundle) -> PatientRecords.

Bundles are read one at a time (a few MB each). Bundles without a Patient (Synthea's hospital and
practitioner information bundles) are skipped.

Other FHIR sources are read too: a partial date (`2019`, `2019-06`, valid FHIR) stands for the first day
of its year or month, so a condition with onset `2019` is part of a record read at any date in 2019; an
STU3 `clinicalStatus` (a plain code) is read like R4's CodeableConcept; a coding without a code is passed
over. Conditions with no SNOMED CT coding (ICD-10 only, or text only) and entries without a resource are
skipped and counted; so are current prescriptions and allergies with no coded drug or substance (text only,
or a Medication not in the bundle), and the record's medications or allergies are then None (not recorded,
never a list that reads as complete). A resource that breaks FHIR's shapes (a date that is no date, a
`code` that is not a CodeableConcept) stops the reading with one line naming the file and the resource.
"""

import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

from tasks.data.patients.records import (
    SNOMED_SYSTEMS,
    PatientRecord,
    RecordObservation,
    SourceCondition,
    SourceError,
    SourceItem,
    located,
    observation_kind,
    read_json_file,
)

Resource = dict[str, Any]
LOINC_SYSTEM = "http://loinc.org"
# FHIR statuses of an allergy or a prescription that still holds at export time.
CURRENT_STATUSES = frozenset({"active", "on-hold"})
# FHIR's date and dateTime: a year, a year-month or a day, the day optionally with a time.
FHIR_DATE = re.compile(r"([0-9]{4})(?:-([0-9]{2})(?:-([0-9]{2})(?:T.+)?)?)?")
NO_SNOMED_CODE = "conditions without a SNOMED CT code (ICD-10 or text only)"
NO_RESOURCE = "bundle entries without a resource"
NO_MEDICATION_CODE = (
    "current prescriptions without a coded medicine (text only, or a Medication not in the bundle)"
)
NO_ALLERGY_CODE = "current allergies without a coded substance (text only)"


def fhir_date(value: object, field: str) -> date | None:
    """`2019-02-17T05:07:38+00:00`, `2019-02-17`, `2019-02` or `2019` -> the (first) day; None stays None."""
    if value is None:
        return None
    match = FHIR_DATE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise SourceError(f"{field} {value!r} is not a FHIR date (YYYY, YYYY-MM or YYYY-MM-DD); fix it")
    year, month, day = match.groups()
    try:
        return date(int(year), int(month or 1), int(day or 1))
    except ValueError as error:
        raise SourceError(f"{field} {value!r} is not a date ({error}); fix the value") from None


def codings(concept: object, field: str) -> list[Resource]:
    """The codings of a CodeableConcept that carry a code (FHIR allows a coding without one)."""
    if concept is None:
        return []
    if not isinstance(concept, dict) or not isinstance(concept.get("coding") or [], list):
        raise SourceError(
            f"{field} {concept!r} is not a CodeableConcept; write it as "
            '{"coding": [{"system": ..., "code": ...}]}'
        )
    return [c for c in concept.get("coding") or [] if isinstance(c, dict) and c.get("code") not in (None, "")]


def first_coding(
    concept: object, systems: frozenset[str] | None = None, field: str = "code"
) -> Resource | None:
    """The first coding with a code of a CodeableConcept, of one of `systems` when given."""
    return next((c for c in codings(concept, field) if systems is None or c.get("system") in systems), None)


def status_code(status: object, field: str) -> str | None:
    """An R4 status CodeableConcept's code, or an STU3 status given as the code itself."""
    if isinstance(status, str):
        return status
    coding = first_coding(status, field=field)
    return str(coding["code"]) if coding else None


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
        coding = first_coding(concept, field="valueCodeableConcept")
        text = concept.get("text") or (coding or {}).get("display") or (coding or {}).get("code")
        return (text, None) if text else None
    for key in ("valueString", "valueBoolean", "valueInteger"):
        if key in resource:
            return str(resource[key]), None
    return None


def observations_of(resource: Resource) -> list[RecordObservation]:
    """One observation, or one per component (a blood pressure panel gives systolic and diastolic)."""
    category = next((status_code(c, "category") for c in resource.get("category") or []), None)
    observed_on = fhir_date(
        resource.get("effectiveDateTime") or (resource.get("effectivePeriod") or {}).get("start"),
        "effectiveDateTime",
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
        return first_coding(resource["medicationCodeableConcept"], field="medicationCodeableConcept")
    reference = (resource.get("medicationReference") or {}).get("reference") or ""
    medication = medications.get(reference.removeprefix("urn:uuid:").rpartition("/")[2])
    return first_coding(medication.get("code")) if medication else None


def bundle_resources(bundle: Resource, skipped: Counter[str]) -> Iterator[tuple[str, Resource]]:
    """(`entry <n> (<type>/<id>)`, resource) per entry; an entry without a resource is counted, not read."""
    entries = bundle.get("entry") or []
    if not isinstance(entries, list):
        raise SourceError("entry is not a list of bundle entries; fix the bundle")
    for number, entry in enumerate(entries):
        resource = entry.get("resource") if isinstance(entry, dict) else None
        if resource is None:
            skipped[NO_RESOURCE] += 1
        elif isinstance(resource, dict):
            yield f"entry {number} ({resource.get('resourceType')}/{resource.get('id')})", resource
        else:
            raise SourceError(f"entry {number}: resource {resource!r} is not a FHIR resource; fix the entry")


def condition_episode(resource: Resource, skipped: Counter[str]) -> SourceCondition | None:
    coding = first_coding(resource.get("code"), SNOMED_SYSTEMS)
    if coding is None:
        skipped[NO_SNOMED_CODE] += 1
        return None
    return SourceCondition(
        code=str(coding["code"]),
        display=str(coding.get("display") or ""),
        onset=fhir_date(resource.get("onsetDateTime"), "onsetDateTime"),
        stop=fhir_date(resource.get("abatementDateTime"), "abatementDateTime"),
    )


def prescription(
    resource: Resource, medications: dict[str, Resource], skipped: Counter[str]
) -> SourceItem | None:
    """A current prescription's medicine; None, counted, when it has no coded one."""
    coding = medication_coding(resource, medications)
    if coding is None:
        skipped[NO_MEDICATION_CODE] += 1
        return None
    return SourceItem(
        code=str(coding["code"]),
        display=str(coding.get("display") or coding["code"]),
        start=fhir_date(resource.get("authoredOn"), "authoredOn"),
    )


def is_current_allergy(resource: Resource) -> bool:
    return status_code(resource.get("clinicalStatus"), "clinicalStatus") in (None, *CURRENT_STATUSES)


def allergy(resource: Resource, skipped: Counter[str]) -> SourceItem | None:
    """A current allergy's substance; None, counted, when it has no coded one."""
    coding = first_coding(resource.get("code"))
    if coding is None:
        skipped[NO_ALLERGY_CODE] += 1
        return None
    return SourceItem(
        code=str(coding["code"]),
        display=str(coding.get("display") or coding["code"]),
        start=fhir_date(
            resource.get("onsetDateTime") or resource.get("recordedDate"), "onsetDateTime or recordedDate"
        ),
    )


def record_from_bundle(bundle: Resource, skipped: Counter[str]) -> PatientRecord | None:
    """One patient's bundle -> its record; None for a bundle with no Patient. Skipped items are counted."""
    resources = list(bundle_resources(bundle, skipped))
    patient = next((r for _, r in resources if r.get("resourceType") == "Patient"), None)
    if patient is None:
        return None
    medications = {str(r.get("id")): r for _, r in resources if r.get("resourceType") == "Medication"}
    conditions, prescriptions, allergies, observations, encounter_dates = [], [], [], [], []
    for where, resource in resources:
        with located(where), malformed_as_source_error():
            kind = resource.get("resourceType")
            if kind == "Condition":
                conditions.append(condition_episode(resource, skipped))
            elif kind == "MedicationRequest" and resource.get("status") in CURRENT_STATUSES:
                prescriptions.append(prescription(resource, medications, skipped))
            elif kind == "AllergyIntolerance" and is_current_allergy(resource):
                allergies.append(allergy(resource, skipped))
            elif kind == "Observation":
                observations.extend(observations_of(resource))
            elif kind == "Encounter":
                encounter_dates.append(fhir_date((resource.get("period") or {}).get("start"), "period.start"))
    with located(f"Patient/{patient.get('id')}"):
        birth_date = fhir_date(patient.get("birthDate"), "birthDate")
        if not isinstance(patient.get("gender"), str | None):
            raise SourceError(f"gender {patient['gender']!r} is not a code (male, female, other, unknown)")
    kept_conditions = [c for c in conditions if c is not None]
    kept_prescriptions = [m for m in prescriptions if m is not None]
    kept_allergies = [a for a in allergies if a is not None]
    dated = [
        *encounter_dates,
        *(c.onset for c in kept_conditions),
        *(o.observed_on for o in observations),
        *(m.start for m in kept_prescriptions),
        *(a.start for a in kept_allergies),
    ]
    return PatientRecord(
        patient_id=str(patient.get("id")),
        birth_date=birth_date,
        sex=patient.get("gender"),
        last_record_date=max((d for d in dated if d is not None), default=None),
        conditions=tuple(kept_conditions),
        observations=tuple(observations),
        medications=whole_section(prescriptions),
        allergies=whole_section(allergies),
    )


def whole_section(items: list[SourceItem | None]) -> tuple[SourceItem, ...] | None:
    """A section's current items, or None when one of them could not be read: the list is incomplete, and
    a patient answering from it could deny what it takes or is allergic to."""
    if any(item is None for item in items):
        return None
    return tuple(item for item in items if item is not None)


@contextmanager
def malformed_as_source_error() -> Iterator[None]:
    """A resource whose parts have other JSON types than FHIR's (a list where an object goes) -> one line."""
    try:
        yield
    except (AttributeError, TypeError, KeyError) as error:
        raise SourceError(f"does not have the shape FHIR R4 gives it ({error}); fix the resource") from None


def fhir_bundle_paths(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json"))


def read_fhir_bundle(path: Path, skipped: Counter[str]) -> PatientRecord | None:
    """One bundle file -> its patient's record; None for a bundle with no Patient. Skipped items are
    counted; a file that is no FHIR Bundle is a SourceError."""
    bundle = read_json_file(path)
    if not isinstance(bundle, dict) or bundle.get("resourceType") != "Bundle":
        raise SourceError(
            "not a FHIR Bundle; a folder of FHIR input holds one Synthea bundle per patient "
            "(a reference benchmark .json is given as the file itself)"
        )
    return record_from_bundle(bundle, skipped)
