"""The case set's table: cases written before a record's section could be None read as they meant."""

import pyarrow as pa

from tasks.benchmarks.snomed.contracts import CASES, cases_from_table


def old_row(case_id: str, source: str) -> dict:
    """A row as case sets wrote it when every section was a list: empty medicine and allergy lists."""
    return {
        "case_id": case_id, "source": source, "patient_id": case_id, "reference_date": None,
        "age_years": 40, "sex": "female", "conditions": [], "observations": [], "medications": [],
        "allergies": [], "gold_codes": [], "gold_displays": [], "split": "test",
    }  # fmt: skip


def test_an_old_reference_cases_empty_sections_read_as_not_recorded_and_a_fhir_cases_as_none():
    table = pa.Table.from_pylist([old_row("r1", "reference"), old_row("f1", "fhir")], schema=CASES)
    assert [(c.case_id, c.medications, c.allergies) for c in cases_from_table(table)] == [
        ("r1", None, None),
        ("f1", (), ()),
    ]
