"""Tables of the SNOMED benchmark, defined once: the case set (`cases.parquet`, one row per case)."""

import pyarrow as pa

from tasks.benchmarks.snomed.case import Case

ITEM = pa.struct([("code", pa.string()), ("display", pa.string())])

CASES = pa.schema(
    [
        pa.field("case_id", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),
        pa.field("patient_id", pa.string(), nullable=False),
        pa.field("reference_date", pa.date32()),
        pa.field("age_years", pa.int32()),
        pa.field("sex", pa.string()),
        pa.field(
            "conditions",
            pa.list_(
                pa.struct(
                    [
                        ("code", pa.string()),
                        ("display", pa.string()),
                        ("onset", pa.date32()),
                        ("stop", pa.date32()),
                        ("semantic_tag", pa.string()),
                    ]
                )
            ),
        ),
        pa.field(
            "observations",
            pa.list_(
                pa.struct(
                    [
                        ("code", pa.string()),
                        ("display", pa.string()),
                        ("value", pa.string()),
                        ("unit", pa.string()),
                        ("observed_on", pa.date32()),
                        ("kind", pa.string()),
                    ]
                )
            ),
        ),
        pa.field("medications", pa.list_(ITEM)),
        pa.field("allergies", pa.list_(ITEM)),
        pa.field("gold_codes", pa.list_(pa.string())),
        pa.field("gold_displays", pa.list_(pa.string())),
        pa.field("split", pa.string(), nullable=False),
    ]
)


def cases_to_table(cases: list[Case]) -> pa.Table:
    """Cases -> a table of the CASES schema, rows in the given order."""
    return pa.Table.from_pylist([case.model_dump() for case in cases], schema=CASES)


def cases_from_table(table: pa.Table) -> list[Case]:
    """A table of the CASES schema -> Cases (the inverse of `cases_to_table`)."""
    return [Case.model_validate(row) for row in table.to_pylist()]
