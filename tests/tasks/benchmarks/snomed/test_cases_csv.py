from datetime import date

from tasks.benchmarks.snomed.case import Case, RecordCondition, RecordItem, RecordObservation
from tasks.benchmarks.snomed.cases.records import read_synthea_csv_cases
from tasks.benchmarks.snomed.cases.settings import CaseSetSettings
from tests.tasks.data.patients.test_synthea_csv import write_export


def test_synthea_csv_reader_builds_every_patient_whole(tmp_path):
    assert read_synthea_csv_cases(write_export(tmp_path), CaseSetSettings()).cases == [
        Case(
            case_id="p1",
            source="synthea_csv",
            patient_id="p1",
            reference_date=date(2021, 5, 1),
            age_years=70,
            sex="male",
            conditions=(
                RecordCondition(
                    code="59621000",
                    display="Essential hypertension (disorder)",
                    onset=date(2000, 1, 1),
                    semantic_tag="disorder",
                ),
                RecordCondition(
                    code="446654005",
                    display="Refugee (person)",
                    onset=date(2010, 1, 1),
                    semantic_tag="person",
                ),
                RecordCondition(
                    code="444814009",
                    display="Viral sinusitis (disorder)",
                    onset=date(2020, 2, 2),
                    stop=date(2020, 2, 20),
                    semantic_tag="disorder",
                ),
            ),
            observations=(
                RecordObservation(
                    code="72166-2",
                    display="Tobacco smoking status",
                    value="Never smoked tobacco (finding)",
                    observed_on=date(2021, 5, 1),
                    kind="survey",
                ),
                RecordObservation(
                    code="8480-6",
                    display="Systolic Blood Pressure",
                    value="138.0",
                    unit="mm[Hg]",
                    observed_on=date(2021, 5, 1),
                    kind="vital",
                ),
                RecordObservation(
                    code="2339-0",
                    display="Glucose",
                    value="101.2",
                    unit="mg/dL",
                    observed_on=date(2019, 5, 1),
                    kind="lab",
                ),
            ),
            medications=(RecordItem(code="314076", display="lisinopril 10 MG Oral Tablet"),),
            allergies=(RecordItem(code="300916003", display="Latex allergy (disorder)"),),
            gold_codes=("444814009", "59621000"),
            gold_displays=("Viral sinusitis (disorder)", "Essential hypertension (disorder)"),
        ),
        Case(
            case_id="p2",
            source="synthea_csv",
            patient_id="p2",
            reference_date=date(2022, 1, 10),
            age_years=31,
            sex="female",
            conditions=(),
            observations=(),
            medications=(),
            allergies=(),
            gold_codes=(),
            gold_displays=(),
        ),
    ]


def test_synthea_csv_reader_keeps_the_observation_known_at_the_reference_date(tmp_path):
    settings = CaseSetSettings(reference_date=date(2020, 6, 1), gold_scope="active", max_observations=1)
    case = read_synthea_csv_cases(write_export(tmp_path), settings).cases[0]
    assert (case.observations, case.medications, case.gold_codes) == (
        (
            RecordObservation(
                code="8480-6",
                display="Systolic Blood Pressure",
                value="150.0",
                unit="mm[Hg]",
                observed_on=date(2020, 5, 1),
                kind="vital",
            ),
        ),
        (RecordItem(code="314076", display="lisinopril 10 MG Oral Tablet"),),
        ("59621000",),
    )


def test_synthea_csv_reader_accepts_an_export_without_optional_files_and_columns(tmp_path):
    (tmp_path / "patients.csv").write_text("Id,BIRTHDATE,GENDER\np1,2000-01-01,F\n")
    (tmp_path / "conditions.csv").write_text(
        "START,STOP,PATIENT,ENCOUNTER,CODE,DESCRIPTION\n2010-01-01,,p1,e,15777000,Prediabetes\n"
    )
    [case] = read_synthea_csv_cases(tmp_path, CaseSetSettings()).cases
    assert (case.reference_date, case.gold_codes, case.conditions[0].semantic_tag) == (
        date(2010, 1, 1),
        ("15777000",),
        None,
    )
