"""Adversarial inputs through every reader: a bad file or record is one line naming the file, the record
and the fix; valid but unusual FHIR is read; what cannot be used is skipped and counted."""

import sqlite3
from collections import Counter
from datetime import date
from pathlib import Path

import orjson
import pytest

from tasks.benchmarks.snomed.case import RecordCondition, RecordItem
from tasks.benchmarks.snomed.cases.case_set import build_cases
from tasks.benchmarks.snomed.cases.records import read_fhir_cases, read_omop_cases, read_synthea_csv_cases
from tasks.benchmarks.snomed.cases.reference import read_reference_cases
from tasks.benchmarks.snomed.cases.settings import CaseSetSettings
from tasks.data.patients.records import SourceError
from tests.tasks.data.patients.test_omop import write_tables
from tests.tasks.data.patients.test_synthea_csv import write_export

SNOMED, ICD10 = "http://snomed.info/sct", "http://hl7.org/fhir/sid/icd-10-cm"
PATIENT = {"resourceType": "Patient", "id": "p1", "gender": "male", "birthDate": "1970-01-01"}
REFERENCE_ENTRY = {
    "patient_id": "p1",
    "oracle_context": "Age: 40",
    "snomed_gold": ["59621000 - Hypertension"],
}


def condition(**fields) -> dict:
    coded = {
        "coding": [{"system": SNOMED, "code": "59621000", "display": "Essential hypertension (disorder)"}]
    }
    return {"resourceType": "Condition", "id": "c1", "code": coded, "onsetDateTime": "2019-02-01"} | fields


def bundle(*resources) -> dict:
    return {"resourceType": "Bundle", "entry": [{"resource": r} for r in (PATIENT, *resources)]}


def write_bundle(folder: Path, content: object) -> Path:
    path = folder / "Jo_p1.json"
    path.write_bytes(content if isinstance(content, bytes) else orjson.dumps(content))
    return path


BAD_BUNDLES = {
    "zero bytes": (
        b"",
        "not valid JSON: Input is a zero-length, empty document at line 1, column 1 (byte 0); the file may "
        "be truncated or empty: export or copy it again",
    ),
    "truncated": (
        b'{"resourceType": "Bundle", "en',
        "not valid JSON: unexpected end of data at line 1, column 31 (byte 30); the file may be truncated or "
        "empty: export or copy it again",
    ),
    "month 13": (
        bundle(condition(onsetDateTime="2019-13-01")),
        "entry 1 (Condition/c1): onsetDateTime '2019-13-01' is not a date (month must be in 1..12); "
        "fix the value",
    ),
    "not a date": (
        bundle(condition(onsetDateTime="last spring")),
        "entry 1 (Condition/c1): onsetDateTime 'last spring' is not a FHIR date "
        "(YYYY, YYYY-MM or YYYY-MM-DD); fix it",
    ),
    "string code": (
        bundle(condition(code="59621000")),
        "entry 1 (Condition/c1): code '59621000' is not a CodeableConcept; write it as "
        '{"coding": [{"system": ..., "code": ...}]}',
    ),
    "resource that is a list": (
        {"resourceType": "Bundle", "entry": [{"resource": PATIENT}, {"resource": [1]}]},
        "entry 1: resource [1] is not a FHIR resource; fix the entry",
    ),
    "valueQuantity that is a number": (
        bundle(
            {
                "resourceType": "Observation",
                "id": "o1",
                "code": {"coding": [{"code": "x"}]},
                "valueQuantity": 5,
            }
        ),
        "entry 1 (Observation/o1): does not have the shape FHIR R4 gives it ('int' object has no attribute "
        "'get'); fix the resource",
    ),
    "gender that is no code": (
        {"resourceType": "Bundle", "entry": [{"resource": PATIENT | {"gender": 1}}]},
        "Patient/p1: gender 1 is not a code (male, female, other, unknown)",
    ),
    "onset in 9999": (
        bundle(condition(onsetDateTime="9999-01-01")),
        "patient p1: age 8029 at the reference date 9999-01-01 (born 1970-01-01); a date of the record is "
        "wrong: fix it, or pass --reference-date to read the record at a date of your choice",
    ),
}


@pytest.mark.parametrize("content, message", BAD_BUNDLES.values(), ids=BAD_BUNDLES.keys())
def test_a_bad_fhir_bundle_is_one_line_naming_the_file_and_the_resource(tmp_path, content, message):
    path = write_bundle(tmp_path, content)
    with pytest.raises(SourceError) as raised:
        read_fhir_cases(tmp_path, CaseSetSettings())
    assert str(raised.value) == f"{path}: {message}"


def test_fhir_reads_partial_dates_stu3_statuses_and_codings_without_a_code(tmp_path):
    write_bundle(
        tmp_path,
        {
            "resourceType": "Bundle",
            "entry": [
                {"resource": PATIENT},
                {"resource": None},
                {"resource": condition(onsetDateTime="2019")},
                {
                    "resource": condition(
                        onsetDateTime="2020-06",
                        code={
                            "coding": [
                                {"system": SNOMED},
                                {"system": SNOMED, "code": "44054006", "display": "Diabetes (disorder)"},
                            ]
                        },
                    )
                },
                {"resource": condition(code={"coding": [{"system": ICD10, "code": "E11.9"}]})},
                {"resource": condition(code={"text": "Back pain"})},
                {
                    "resource": {
                        "resourceType": "AllergyIntolerance",
                        "clinicalStatus": "active",  # STU3: a code, not a CodeableConcept
                        "code": {
                            "coding": [{"system": SNOMED, "code": "300916003", "display": "Latex allergy"}]
                        },
                        "assertedDate": "2015",
                    }
                },
            ],
        },
    )
    cases, skipped = read_fhir_cases(tmp_path, CaseSetSettings())
    [case] = cases
    assert (case.reference_date, case.age_years, case.conditions, case.allergies, skipped) == (
        date(2020, 6, 1),  # a partial date stands for its first day
        50,
        (
            RecordCondition(
                code="59621000",
                display="Essential hypertension (disorder)",
                onset=date(2019, 1, 1),
                semantic_tag="disorder",
            ),
            RecordCondition(
                code="44054006",
                display="Diabetes (disorder)",
                onset=date(2020, 6, 1),
                semantic_tag="disorder",
            ),
        ),
        (RecordItem(code="300916003", display="Latex allergy"),),
        Counter(
            {
                "conditions without a SNOMED CT code (ICD-10 or text only)": 2,
                "bundle entries without a resource": 1,
            }
        ),
    )


def test_fhir_bundles_without_a_gold_code_build_nothing_unless_allowed(tmp_path):
    write_bundle(tmp_path, bundle(condition(code={"coding": [{"system": ICD10, "code": "E11.9"}]})))
    with pytest.raises(SourceError) as raised:
        build_cases(tmp_path, "fhir", CaseSetSettings(), {})
    assert str(raised.value) == (
        f"{tmp_path}: none of its 1 cases has a gold code; check that its conditions are SNOMED CT coded and "
        "kept by the gold options, or build it anyway with --allow-empty"
    )
    cases, skipped = build_cases(tmp_path, "fhir", CaseSetSettings(), {}, allow_empty=True)
    assert ([case.gold_codes for case in cases], skipped) == (
        [()],
        Counter({"conditions without a SNOMED CT code (ICD-10 or text only)": 1}),
    )


BAD_REFERENCES = {
    "truncated": (
        b'[{"patient_id": "p1", "oracle_context": "Age: 4',
        "not valid JSON: unexpected end of data at line 1, column 48 (byte 47); the file may be truncated or "
        "empty: export or copy it again",
    ),
    "top-level object": (
        orjson.dumps(REFERENCE_ENTRY),
        'the top level is not a list; the reference format is [{"patient_id": ..., "oracle_context": '
        '"...", "snomed_gold": ["<code> - <display>", ...]}, ...]',
    ),
    "no patient_id": (
        orjson.dumps([REFERENCE_ENTRY, {**REFERENCE_ENTRY, "patient_id": None}]),
        'entry 1: patient_id is missing or empty; each entry is {"patient_id": ..., "oracle_context": "...", '
        '"snomed_gold": ["<code> - <display>", ...]}',
    ),
    "null context": (
        orjson.dumps([{**REFERENCE_ENTRY, "oracle_context": None}]),
        "entry 0: oracle_context is None, not text; fix it",
    ),
    "gold entry without a code": (
        orjson.dumps([{**REFERENCE_ENTRY, "snomed_gold": ["Hypertension"]}]),
        "entry 0: gold entry is not '<code> - <display>': 'Hypertension'",
    ),
}


@pytest.mark.parametrize("content, message", BAD_REFERENCES.values(), ids=BAD_REFERENCES.keys())
def test_a_bad_reference_json_is_one_line_naming_the_file_and_the_entry(tmp_path, content, message):
    path = tmp_path / "reference.json"
    path.write_bytes(content)
    with pytest.raises(SourceError) as raised:
        read_reference_cases(path, CaseSetSettings())
    assert str(raised.value) == f"{path}: {message}"


def omop_folder(tmp_path: Path, **tables: str | None) -> Path:
    """The OMOP fixture's tables, with `tables` replaced (None removes one)."""
    folder = write_tables(tmp_path)
    for name, text in tables.items():
        (folder / f"{name}.csv").unlink()
        if text is not None:
            (folder / f"{name}.csv").write_text(text)
    return folder


def test_omop_without_a_condition_table_is_one_line(tmp_path):
    folder = omop_folder(tmp_path, condition_occurrence=None)
    with pytest.raises(SourceError) as raised:
        read_omop_cases(folder, CaseSetSettings())
    assert str(raised.value) == (
        f"{folder}: no OMOP table condition_occurrence (condition_occurrence.csv or .parquet in a folder, "
        "or a table of the .duckdb file); an OMOP CDM needs person and condition_occurrence"
    )


def test_omop_column_holding_a_value_of_another_type_is_one_line(tmp_path):
    folder = omop_folder(
        tmp_path, person="person_id,year_of_birth,gender_concept_id\n1,1970,8532\n2,nineteen-ninety,8507\n"
    )
    with pytest.raises(SourceError) as raised:
        read_omop_cases(folder, CaseSetSettings())
    assert str(raised.value) == (
        f"{folder}: table person: column year_of_birth holds 'nineteen-ninety', which is not a bigint; "
        "fix the value (OMOP CDM gives year_of_birth the type bigint)"
    )


def test_omop_header_only_condition_table_reads_persons_without_conditions(tmp_path):
    folder = omop_folder(
        tmp_path,
        condition_occurrence="person_id,condition_concept_id,condition_source_value,condition_start_date\n",
        observation=None,
    )
    cases, skipped = read_omop_cases(folder, CaseSetSettings())
    assert ([(case.case_id, case.conditions) for case in cases], skipped) == ([("2", ()), ("uuid-1", ())], {})


def test_omop_counts_conditions_without_a_snomed_code(tmp_path):
    folder = omop_folder(
        tmp_path,
        condition_occurrence="person_id,condition_concept_id,condition_source_value,condition_start_date\n"
        "1,0,K92.2,2016-01-01\n1,320128,59621000,2001-01-01\n",
    )
    assert read_omop_cases(folder, CaseSetSettings()).skipped == Counter(
        {"conditions without a SNOMED code (no SNOMED source value or concept)": 1}
    )


def test_a_sqlite_file_is_not_taken_for_duckdb(tmp_path):
    path = tmp_path / "cdm.db"
    with sqlite3.connect(path) as con:
        con.execute("create table person (person_id integer)")
    con.close()
    with pytest.raises(SourceError) as raised:
        read_omop_cases(path, CaseSetSettings())
    assert str(raised.value) == (
        f"{path}: a SQLite database, not DuckDB; export its OMOP tables to a folder of <table>.csv or "
        ".parquet files, or copy them into a DuckDB file"
    )


def test_synthea_csv_without_conditions_is_one_line(tmp_path):
    (write_export(tmp_path) / "conditions.csv").unlink()
    with pytest.raises(SourceError) as raised:
        read_synthea_csv_cases(tmp_path, CaseSetSettings())
    assert (
        str(raised.value)
        == f"{tmp_path}: no conditions.csv: not a Synthea CSV export (patients.csv, conditions.csv, ...)"
    )


def test_omop_table_file_duckdb_cannot_read_is_one_line_naming_it(tmp_path):
    folder = omop_folder(tmp_path, person=None)
    (folder / "person.parquet").write_bytes(b"not parquet")
    with pytest.raises(
        SourceError, match=rf"^{folder}: person\.parquet: DuckDB cannot read it \(.+\); fix or replace it$"
    ):
        read_omop_cases(folder, CaseSetSettings())
