from datetime import date

import duckdb
import pytest

from tasks.benchmarks.snomed.case import Case, RecordCondition, RecordItem, RecordObservation
from tasks.benchmarks.snomed.cases.records import read_omop_cases
from tasks.benchmarks.snomed.cases.settings import CaseSetSettings
from tasks.data.patients.omop import eunomia_duckdb_path
from tests.tasks.data.patients.test_omop import TABLES, write_tables

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
        medications=(),
        allergies=(),
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
