from collections import Counter
from datetime import date

from tasks.data.patients.omop import read_omop_records
from tasks.data.patients.records import PatientRecord, RecordObservation, SourceCondition, SourceItem

TABLES = {
    "person": "person_id,person_source_value,gender_concept_id,year_of_birth,month_of_birth,day_of_birth\n"
    "1,uuid-1,8532,1970,3,9\n"
    "2,,8507,2001,,\n",
    "condition_occurrence": "person_id,condition_concept_id,condition_source_value,condition_start_date,"
    "condition_end_date\n"
    "1,320128,59621000,2001-01-01,\n"
    "1,4112343,195662009,2015-10-02,2015-10-14\n"
    "1,192671,K92.2,2016-01-01,2016-02-01\n",
    "observation": "person_id,observation_concept_id,observation_source_value,observation_type_concept_id,"
    "observation_date,value_as_number\n"
    "1,4323208,428251008,38000276,2010-06-07,\n"
    "1,4084167,419474003,38000280,2012-01-01,\n",
    "measurement": "person_id,measurement_concept_id,measurement_source_value,measurement_date,"
    "value_as_number,unit_source_value\n"
    "1,3004249,8480-6,2018-01-01,131.0,mm[Hg]\n"
    "1,3004249,8480-6,2017-01-01,120.0,mm[Hg]\n"
    "1,3006322,8331-1,2018-01-01,,\n",
    "drug_exposure": "person_id,drug_concept_id,drug_source_value,drug_exposure_start_date,"
    "drug_exposure_end_date\n"
    "1,1308216,314076,2001-01-01,2030-01-01\n"
    "1,40213160,10,2018-01-01,2018-01-01\n",
    "visit_occurrence": "person_id,visit_start_date\n1,2019-04-04\n2,2020-01-01\n",
    "concept": "concept_id,concept_name,vocabulary_id,concept_code,domain_id\n"
    "320128,Essential hypertension,SNOMED,59621000,Condition\n"
    "4112343,Acute viral pharyngitis,SNOMED,195662009,Condition\n"
    "192671,Gastrointestinal hemorrhage,SNOMED,74474003,Condition\n"
    "4323208,History of appendectomy,SNOMED,428251008,Observation\n"
    "4084167,Allergy to mold,SNOMED,419474003,Observation\n"
    "3004249,Systolic blood pressure,LOINC,8480-6,Measurement\n"
    "3006322,Oral temperature,LOINC,8331-1,Measurement\n"
    "1308216,lisinopril 10 MG Oral Tablet,RxNorm,314076,Drug\n"
    "40213160,poliovirus vaccine,CVX,10,Drug\n",
}


def write_tables(folder):
    for name, text in TABLES.items():
        (folder / f"{name}.csv").write_text(text)
    return folder


def test_a_cdm_becomes_one_whole_record_per_person_with_snomed_codes_from_source_values_or_concepts(tmp_path):
    skipped = Counter[str]()
    records = read_omop_records(write_tables(tmp_path), None, skipped)
    assert (records, skipped) == (
        [
            PatientRecord(
                patient_id="2",
                birth_date=date(2001, 1, 1),
                sex="male",
                last_record_date=date(2020, 1, 1),
                medications=(),
                allergies=(),
            ),
            PatientRecord(
                patient_id="uuid-1",
                birth_date=date(1970, 3, 9),
                sex="female",
                last_record_date=date(2019, 4, 4),
                conditions=(
                    SourceCondition(
                        code="195662009",
                        display="Acute viral pharyngitis",
                        onset=date(2015, 10, 2),
                        stop=date(2015, 10, 14),
                    ),
                    # A problem-list observation (type 38000276) is a condition.
                    SourceCondition(
                        code="428251008", display="History of appendectomy", onset=date(2010, 6, 7)
                    ),
                    SourceCondition(
                        code="59621000", display="Essential hypertension", onset=date(2001, 1, 1)
                    ),
                    # An ICD-10 source value falls back to the mapped SNOMED concept.
                    SourceCondition(
                        code="74474003",
                        display="Gastrointestinal hemorrhage",
                        onset=date(2016, 1, 1),
                        stop=date(2016, 2, 1),
                    ),
                ),
                # The latest reading with a value; the vaccine (CVX) is no medication.
                observations=(
                    RecordObservation(
                        code="8480-6",
                        display="Systolic blood pressure",
                        value="131.0",
                        unit="mm[Hg]",
                        observed_on=date(2018, 1, 1),
                    ),
                ),
                medications=(
                    SourceItem(
                        code="314076",
                        display="lisinopril 10 MG Oral Tablet",
                        start=date(2001, 1, 1),
                        stop=date(2030, 1, 1),
                    ),
                ),
                allergies=(SourceItem(code="419474003", display="Allergy to mold", start=date(2012, 1, 1)),),
            ),
        ],
        {},
    )


def test_only_the_latest_measurement_at_the_reference_date_leaves_duckdb(tmp_path):
    [_, person] = read_omop_records(write_tables(tmp_path), date(2017, 6, 1), Counter())
    assert [(o.code, o.value, o.observed_on) for o in person.observations] == [
        ("8480-6", "120.0", date(2017, 1, 1))
    ]


def test_a_cdm_without_drug_exposures_or_allergy_observations_records_neither_rather_than_none(tmp_path):
    """No drug_exposure table, and no observation of the allergy type for anyone: the CDM says nothing of a
    person's medicines or allergies (None), never an empty list a patient would read as "none"."""
    write_tables(tmp_path)
    (tmp_path / "drug_exposure.csv").unlink()
    observations = TABLES["observation"].splitlines()
    (tmp_path / "observation.csv").write_text(
        "\n".join(line for line in observations if "38000280" not in line)
    )
    records = read_omop_records(tmp_path, None, Counter())
    assert [(record.patient_id, record.medications, record.allergies) for record in records] == [
        ("2", None, None),
        ("uuid-1", None, None),
    ]
