from datetime import date

import pytest

from tasks.benchmarks.snomed.case import Case, RecordCondition, RecordItem, RecordObservation
from tasks.benchmarks.snomed.cases.records import read_fhir_cases
from tasks.benchmarks.snomed.cases.settings import CaseSetSettings
from tests.tasks.data.patients.test_fhir import write_bundles

EXPECTED = Case(
    case_id="p1",
    source="fhir",
    patient_id="p1",
    reference_date=date(2020, 3, 1),
    age_years=39,
    sex="female",
    conditions=(
        RecordCondition(
            code="444814009",
            display="Viral sinusitis (disorder)",
            onset=date(2010, 1, 1),
            stop=date(2019, 12, 20),
            semantic_tag="disorder",
        ),
        RecordCondition(
            code="160903007",
            display="Full-time employment (finding)",
            onset=date(2012, 1, 1),
            semantic_tag="finding",
        ),
        RecordCondition(
            code="73595000",
            display="Stress (finding)",
            onset=date(2012, 1, 1),
            stop=date(2013, 1, 1),
            semantic_tag="finding",
        ),
        RecordCondition(
            code="59621000",
            display="Essential hypertension (disorder)",
            onset=date(2015, 5, 5),
            semantic_tag="disorder",
        ),
    ),
    observations=(
        RecordObservation(
            code="29463-7",
            display="Body Weight",
            value="72.5",
            unit="kg",
            observed_on=date(2020, 3, 1),
            kind="vital",
        ),
        RecordObservation(
            code="72166-2",
            display="Tobacco smoking status",
            value="Never smoked tobacco (finding)",
            observed_on=date(2020, 3, 1),
            kind="other",
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
            code="8480-6",
            display="Systolic blood pressure",
            value="141.0",
            unit="mm[Hg]",
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
    ),
    medications=(RecordItem(code="314076", display="lisinopril 10 MG Oral Tablet"),),
    allergies=(RecordItem(code="782576004", display="Tree pollen (substance)"),),
    gold_codes=("160903007", "444814009", "59621000", "73595000"),
    gold_displays=(
        "Full-time employment (finding)",
        "Viral sinusitis (disorder)",
        "Essential hypertension (disorder)",
        "Stress (finding)",
    ),
)


def test_fhir_reader_builds_the_whole_case_and_skips_bundles_without_a_patient(tmp_path):
    assert read_fhir_cases(write_bundles(tmp_path), CaseSetSettings()) == ([EXPECTED], {})


def test_fhir_reader_reads_the_record_as_of_an_earlier_reference_date(tmp_path):
    settings = CaseSetSettings(reference_date=date(2012, 6, 1), gold_scope="active")
    [case] = read_fhir_cases(write_bundles(tmp_path), settings).cases
    assert (case.age_years, case.conditions, case.observations, case.medications) == (
        31,
        (
            RecordCondition(
                code="444814009",
                display="Viral sinusitis (disorder)",
                onset=date(2010, 1, 1),
                stop=date(2010, 1, 20),
                semantic_tag="disorder",
            ),
            RecordCondition(
                code="160903007",
                display="Full-time employment (finding)",
                onset=date(2012, 1, 1),
                semantic_tag="finding",
            ),
            # Its stop (2013) lies after the reference date: not known yet, so the condition is active.
            RecordCondition(
                code="73595000", display="Stress (finding)", onset=date(2012, 1, 1), semantic_tag="finding"
            ),
        ),
        (),
        (),
    )
    assert case.gold_codes == ("160903007", "73595000")


def test_fhir_reader_names_a_json_file_that_is_not_a_bundle(tmp_path):
    (tmp_path / "cases.json").write_text('[{"patient_id": "p1"}]')
    with pytest.raises(ValueError, match=r"cases.json: not a FHIR Bundle; .* given as the file itself"):
        read_fhir_cases(tmp_path, CaseSetSettings())
