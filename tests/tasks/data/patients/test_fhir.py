from collections import Counter
from datetime import date

import orjson
import pytest

from tasks.data.patients.fhir import NO_ALLERGY_CODE, NO_MEDICATION_CODE, read_fhir_bundle
from tasks.data.patients.records import PatientRecord, RecordObservation, SourceCondition, SourceItem

SNOMED, LOINC, RXNORM = (
    "http://snomed.info/sct",
    "http://loinc.org",
    "http://www.nlm.nih.gov/research/umls/rxnorm",
)


def coded(system: str, code: str, display: str) -> dict:
    return {"coding": [{"system": system, "code": code, "display": display}]}


def category(code: str) -> list[dict]:
    return [{"coding": [{"code": code}]}]


def condition(code: str, display: str, onset: str, stop: str | None = None) -> dict:
    resource = {"resourceType": "Condition", "code": coded(SNOMED, code, display), "onsetDateTime": onset}
    return resource | ({"abatementDateTime": stop} if stop else {})


def quantity(code: str, display: str, day: str, value: float, unit: str, kind: str = "vital-signs") -> dict:
    return {
        "resourceType": "Observation",
        "category": category(kind),
        "code": coded(LOINC, code, display),
        "effectiveDateTime": day,
        "valueQuantity": {"value": value, "unit": unit},
    }


PATIENT_BUNDLE = {
    "resourceType": "Bundle",
    "entry": [
        {"resource": r}
        for r in [
            {"resourceType": "Patient", "id": "p1", "gender": "female", "birthDate": "1980-06-15"},
            {"resourceType": "Encounter", "period": {"start": "2020-03-01T09:00:00+00:00"}},
            condition(
                "444814009", "Viral sinusitis (disorder)", "2010-01-01T00:00:00Z", "2010-01-20T00:00:00Z"
            ),
            condition(
                "444814009", "Viral sinusitis (disorder)", "2019-12-01T00:00:00Z", "2019-12-20T00:00:00Z"
            ),
            condition("59621000", "Essential hypertension (disorder)", "2015-05-05T00:00:00Z"),
            condition("160903007", "Full-time employment (finding)", "2012-01-01T00:00:00Z"),
            condition("73595000", "Stress (finding)", "2012-01-01T00:00:00Z", "2013-01-01T00:00:00Z"),
            quantity("29463-7", "Body Weight", "2019-01-01T00:00:00Z", 70.0, "kg"),
            quantity("29463-7", "Body Weight", "2020-03-01T09:00:00Z", 72.5, "kg"),
            quantity("2339-0", "Glucose", "2018-04-04T00:00:00Z", 99, "mg/dL", kind="laboratory"),
            {
                "resourceType": "Observation",
                "category": category("vital-signs"),
                "code": coded(LOINC, "85354-9", "Blood pressure panel"),
                "effectiveDateTime": "2020-03-01T09:00:00+00:00",
                "component": [
                    {
                        "code": coded(LOINC, "8480-6", "Systolic blood pressure"),
                        "valueQuantity": {"value": 141.0, "unit": "mm[Hg]"},
                    },
                    {
                        "code": coded(LOINC, "8462-4", "Diastolic blood pressure"),
                        "valueQuantity": {"value": 92.0, "unit": "mm[Hg]"},
                    },
                ],
            },
            {
                "resourceType": "Observation",
                "category": category("social-history"),
                "code": coded(LOINC, "72166-2", "Tobacco smoking status"),
                "effectiveDateTime": "2020-03-01T09:00:00+00:00",
                "valueCodeableConcept": coded(SNOMED, "266919005", "Never smoked tobacco (finding)"),
            },
            {
                "resourceType": "Observation",
                "category": category("vital-signs"),
                "code": coded(LOINC, "8289-1", "No value"),
            },
            {
                "resourceType": "MedicationRequest",
                "status": "active",
                "medicationCodeableConcept": coded(RXNORM, "314076", "lisinopril 10 MG Oral Tablet"),
                "authoredOn": "2015-05-05T00:00:00Z",
            },
            {
                "resourceType": "MedicationRequest",
                "status": "stopped",
                "medicationCodeableConcept": coded(RXNORM, "198405", "Ibuprofen 100 MG Oral Tablet"),
                "authoredOn": "2010-01-01T00:00:00Z",
            },
            {
                "resourceType": "AllergyIntolerance",
                "clinicalStatus": coded("x", "active", "Active"),
                "code": coded(SNOMED, "782576004", "Tree pollen (substance)"),
                "recordedDate": "2011-01-01T00:00:00Z",
            },
        ]
    ],
}
PRACTITIONER_BUNDLE = {
    "resourceType": "Bundle",
    "entry": [{"resource": {"resourceType": "Practitioner", "id": "d1"}}],
}

# Every episode, reading and prescription as the bundle holds it: which ones a benchmark keeps is its own.
RECORD = PatientRecord(
    patient_id="p1",
    birth_date=date(1980, 6, 15),
    sex="female",
    last_record_date=date(2020, 3, 1),
    conditions=(
        SourceCondition(
            code="444814009",
            display="Viral sinusitis (disorder)",
            onset=date(2010, 1, 1),
            stop=date(2010, 1, 20),
        ),
        SourceCondition(
            code="444814009",
            display="Viral sinusitis (disorder)",
            onset=date(2019, 12, 1),
            stop=date(2019, 12, 20),
        ),
        SourceCondition(code="59621000", display="Essential hypertension (disorder)", onset=date(2015, 5, 5)),
        SourceCondition(code="160903007", display="Full-time employment (finding)", onset=date(2012, 1, 1)),
        SourceCondition(
            code="73595000", display="Stress (finding)", onset=date(2012, 1, 1), stop=date(2013, 1, 1)
        ),
    ),
    observations=(
        RecordObservation(
            code="29463-7",
            display="Body Weight",
            value="70.0",
            unit="kg",
            observed_on=date(2019, 1, 1),
            kind="vital",
        ),
        RecordObservation(
            code="29463-7",
            display="Body Weight",
            value="72.5",
            unit="kg",
            observed_on=date(2020, 3, 1),
            kind="vital",
        ),
        RecordObservation(
            code="2339-0",
            display="Glucose",
            value="99",
            unit="mg/dL",
            observed_on=date(2018, 4, 4),
            kind="lab",
        ),
        RecordObservation(
            code="8480-6",
            display="Systolic blood pressure",
            value="141.0",
            unit="mm[Hg]",
            observed_on=date(2020, 3, 1),
            kind="vital",
        ),
        RecordObservation(
            code="8462-4",
            display="Diastolic blood pressure",
            value="92.0",
            unit="mm[Hg]",
            observed_on=date(2020, 3, 1),
            kind="vital",
        ),
        RecordObservation(
            code="72166-2",
            display="Tobacco smoking status",
            value="Never smoked tobacco (finding)",
            observed_on=date(2020, 3, 1),
        ),
    ),
    # The stopped ibuprofen prescription is no medication of the record.
    medications=(SourceItem(code="314076", display="lisinopril 10 MG Oral Tablet", start=date(2015, 5, 5)),),
    allergies=(SourceItem(code="782576004", display="Tree pollen (substance)", start=date(2011, 1, 1)),),
)


def write_bundles(folder):
    (folder / "Jane_Doe_p1.json").write_bytes(orjson.dumps(PATIENT_BUNDLE))
    (folder / "practitionerInformation1.json").write_bytes(orjson.dumps(PRACTITIONER_BUNDLE))
    return folder


def test_a_bundle_becomes_its_patients_whole_record_of_all_time(tmp_path):
    skipped = Counter[str]()
    record = read_fhir_bundle(write_bundles(tmp_path) / "Jane_Doe_p1.json", skipped)
    assert (record, skipped) == (RECORD, {})


def test_a_bundle_without_a_patient_has_no_record(tmp_path):
    assert read_fhir_bundle(write_bundles(tmp_path) / "practitionerInformation1.json", Counter()) is None


def test_a_json_file_that_is_not_a_bundle_is_refused(tmp_path):
    path = tmp_path / "cases.json"
    path.write_text('[{"patient_id": "p1"}]')
    with pytest.raises(ValueError, match=r"^not a FHIR Bundle; .* given as the file itself\)$"):
        read_fhir_bundle(path, Counter())


def test_current_prescriptions_and_allergies_without_a_code_are_counted_and_leave_their_section_unrecorded(
    tmp_path,
):
    prescriptions = [
        {"resourceType": "MedicationRequest", "status": "active", "authoredOn": "2020-01-01",
         "medicationCodeableConcept": {"text": "Warfarin 5 mg tablet"}},
        {"resourceType": "MedicationRequest", "status": "active", "authoredOn": "2020-01-01",
         "medicationReference": {"reference": "urn:uuid:not-in-bundle"}},
        # A stopped prescription is no current medicine, coded or not: nothing is lost.
        {"resourceType": "MedicationRequest", "status": "stopped", "authoredOn": "2010-01-01",
         "medicationCodeableConcept": {"text": "Ibuprofen"}},
        {"resourceType": "AllergyIntolerance", "clinicalStatus": coded("x", "active", "Active"),
         "code": {"text": "Penicillin"}, "recordedDate": "2019-01-01"},
    ]  # fmt: skip
    bundle = PATIENT_BUNDLE | {"entry": [*PATIENT_BUNDLE["entry"], *({"resource": r} for r in prescriptions)]}
    (tmp_path / "p1.json").write_bytes(orjson.dumps(bundle))
    skipped = Counter[str]()
    record = read_fhir_bundle(tmp_path / "p1.json", skipped)
    assert (record, skipped) == (
        RECORD.model_copy(update={"medications": None, "allergies": None}),
        {NO_MEDICATION_CODE: 2, NO_ALLERGY_CODE: 1},
    )
