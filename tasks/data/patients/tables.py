"""Loading tabular sources (CSV or Parquet files) into DuckDB, and turning query rows into patient records."""

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import duckdb

from tasks.data.patients.records import (
    PatientRecord,
    RecordObservation,
    SourceCondition,
    SourceError,
    SourceItem,
    observation_kind,
)

Rows = dict[str, list[tuple[Any, ...]]]


class RecordRows(NamedTuple):
    """A tabular source's query rows by patient id (rows_by_patient): conditions, medications and allergies
    as (code, display, start, stop), observations as (code, display, value, unit, day, category or None);
    medications or allergies None when the source records none for anyone (`section_rows`)."""

    conditions: Rows
    observations: Rows
    medications: Rows | None
    allergies: Rows | None


def offline_duckdb() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB that never installs or loads an extension by itself (that would go online)."""
    return duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})


def has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    found = con.execute(
        "select count(*) from information_schema.tables where lower(table_name) = lower($name)",
        {"name": name},
    ).fetchall()
    return found[0][0] > 0


def column_types(con: duckdb.DuckDBPyConnection, name: str) -> dict[str, str]:
    """{lower-case column name: DuckDB type (`BIGINT`, `VARCHAR`, ...)} of table or view `name`."""
    rows = con.execute(
        "select lower(column_name), data_type from information_schema.columns "
        "where lower(table_name) = lower($name)",
        {"name": name},
    ).fetchall()
    return dict(rows)


def ensure_table(con: duckdb.DuckDBPyConnection, name: str, columns: Sequence[str]) -> None:
    """Make `name` have at least `columns` (`"<name> <type>"`), as temp objects a read-only database allows:
    a missing table becomes an empty temp table, missing columns come as nulls from a temp view over it."""
    if not has_table(con, name):
        con.execute(f"create temp table {name} ({', '.join(columns)})")
        return
    present = column_types(con, name)
    missing = [column.split() for column in columns if column.split()[0].lower() not in present]
    if missing:
        database = con.execute("select current_database()").fetchall()[0][0]
        extra = ", ".join(f"cast(null as {kind}) as {column}" for column, kind in missing)
        con.execute(f"create temp view {name} as select *, {extra} from {database}.main.{name}")


def load_table_file(con: duckdb.DuckDBPyConnection, name: str, folder: Path, all_varchar: bool) -> bool:
    """Load `<folder>/<name>.csv` (or `.parquet`) as table `name`; False when neither file exists.

    A file DuckDB cannot read (an empty or malformed CSV, a broken Parquet file) is a SourceError naming
    it within the folder.
    """
    csv_path, parquet_path = folder / f"{name}.csv", folder / f"{name}.parquet"
    if csv_path.exists():
        path, query = csv_path, "read_csv($path, header = true, all_varchar = $text)"
    elif parquet_path.exists():
        path, query = parquet_path, "read_parquet($path)"
    else:
        return False
    parameters = {"path": str(path)} | ({"text": all_varchar} if path == csv_path else {})
    try:
        con.execute(f"create table {name} as select * from {query}", parameters)
    except duckdb.Error as error:
        problem = str(error).splitlines()[0]
        raise SourceError(f"{path.name}: DuckDB cannot read it ({problem}); fix or replace it") from None
    return True


def rows_by_patient(rows: Sequence[tuple[Any, ...]]) -> Rows:
    """Rows whose first value is a patient id -> {patient id: the rest of each row}."""
    grouped: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        grouped.setdefault(str(row[0]), []).append(row[1:])
    return grouped


def section_rows(con: duckdb.DuckDBPyConnection, query: str, recorded_sql: str) -> Rows | None:
    """A section's rows by patient (medicines, allergies), or None when `recorded_sql` counts no row of it in
    the whole source: a source that never records the section (a missing file or table, or none of its
    rows) says nothing about a patient's, and its silence must not read as "none"."""
    if not con.execute(recorded_sql).fetchall()[0][0]:
        return None
    return rows_by_patient(con.execute(query).fetchall())


def _items(rows: Rows | None, patient_id: str) -> tuple[SourceItem, ...] | None:
    if rows is None:
        return None
    return tuple(
        SourceItem(code=c, display=d, start=on, stop=off) for c, d, on, off in rows.get(patient_id, [])
    )


def records_from_rows(patients: Iterable[tuple[Any, ...]], rows: RecordRows) -> list[PatientRecord]:
    """One PatientRecord per (patient id, birth date, sex, last record date) row, sorted by patient id."""
    return [
        PatientRecord(
            patient_id=patient_id,
            birth_date=birth_date,
            sex=sex,
            last_record_date=last_record_date,
            conditions=tuple(
                SourceCondition(code=c, display=d, onset=on, stop=off)
                for c, d, on, off in rows.conditions.get(patient_id, [])
            ),
            observations=tuple(
                RecordObservation(
                    code=c, display=d, value=v, unit=u, observed_on=on, kind=observation_kind(category)
                )
                for c, d, v, u, on, category in rows.observations.get(patient_id, [])
            ),
            medications=_items(rows.medications, patient_id),
            allergies=_items(rows.allergies, patient_id),
        )
        for patient_id, birth_date, sex, last_record_date in sorted(patients)
    ]
