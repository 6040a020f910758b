from datetime import date

import duckdb
import pytest

from tasks.benchmarks.snomed.case import Case, RecordCondition, RecordItem, RecordObservation
from tasks.benchmarks.snomed.cases import CaseSetSettings, eunomia_duckdb_path, read_omop_cases

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

EXPECTED = [
    Case(
        case_id="2",
        source="omop",
        patient_id="2",
        reference_date=date(2020, 1, 1),
        age_years=19,
        sex="male",
        conditions=(),
        observations=(),
        gold_codes=(),
        gold_displays=(),
    ),
    Case(
        case_id="uuid-1",
        source="omop",
        patient_id="uuid-1",
        reference_date=date(2019, 4, 4),
        age_years=49,
        sex="female",
        conditions=(
            RecordCondition(code="59621000", display="Essential hypertension", onset=date(2001, 1, 1)),
            RecordCondition(code="428251008", display="History of appendectomy", onset=date(2010, 6, 7)),
            RecordCondition(
                code="195662009",
                display="Acute viral pharyngitis",
                onset=date(2015, 10, 2),
                stop=date(2015, 10, 14),
            ),
            # An ICD-10 source value falls back to the mapped SNOMED concept.
            RecordCondition(
                code="74474003",
                display="Gastrointestinal hemorrhage",
                onset=date(2016, 1, 1),
                stop=date(2016, 2, 1),
            ),
        ),
        observations=(
            RecordObservation(
                code="8480-6",
                display="Systolic blood pressure",
                value="131.0",
                unit="mm[Hg]",
                observed_on=date(2018, 1, 1),
            ),
        ),
        medications=(RecordItem(code="314076", display="lisinopril 10 MG Oral Tablet"),),
        allergies=(RecordItem(code="419474003", display="Allergy to mold"),),
        gold_codes=("195662009", "428251008", "59621000", "74474003"),
        gold_displays=(
            "Acute viral pharyngitis",
            "History of appendectomy",
            "Essential hypertension",
            "Gastrointestinal hemorrhage",
        ),
    ),
]


def write_tables(folder):
    for name, text in TABLES.items():
        (folder / f"{name}.csv").write_text(text)
    return folder


def test_omop_reader_builds_every_person_whole_from_a_table_folder(tmp_path):
    assert (
        read_omop_cases(
            write_tables(tmp_path / "cdm" if (tmp_path / "cdm").mkdir() is None else None), CaseSetSettings()
        ).cases
        == EXPECTED
    )


def test_omop_reader_opens_a_duckdb_file_read_only(tmp_path):
    folder = write_tables(tmp_path)
    database = tmp_path / "cdm.duckdb"
    with duckdb.connect(str(database)) as con:
        for name in TABLES:
            con.execute(
                f"create table {name} as select * from read_csv($path)", {"path": str(folder / f"{name}.csv")}
            )
    database.chmod(0o444)
    assert read_omop_cases(database, CaseSetSettings()).cases == EXPECTED


def test_omop_reader_names_codes_from_the_vocabulary_without_a_concept_table(tmp_path):
    folder = write_tables(tmp_path)
    (folder / "concept.csv").unlink()
    case = read_omop_cases(folder, CaseSetSettings()).cases[1]
    assert [(c.code, c.display) for c in case.conditions] == [
        ("59621000", "59621000"),
        ("428251008", "428251008"),
        ("195662009", "195662009"),
    ]


@pytest.mark.slow
def test_eunomia_builds_a_case_for_every_person_and_its_file_is_left_untouched():
    database = eunomia_duckdb_path()
    before = database.stat()
    cases = read_omop_cases(database, CaseSetSettings()).cases
    after = database.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert not list(database.parent.glob("eunomia.duckdb.wal"))
    assert len(cases) == 2694
    assert all(case.conditions and case.sex and case.age_years is not None for case in cases)
