"""Loading tabular sources (CSV or Parquet files) into DuckDB, and grouping query rows per patient."""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from tasks.data.patients.records import SourceError


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


def rows_by_patient(rows: Sequence[tuple[Any, ...]]) -> dict[str, list[tuple[Any, ...]]]:
    """Rows whose first value is a patient id -> {patient id: the rest of each row}."""
    grouped: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        grouped.setdefault(str(row[0]), []).append(row[1:])
    return grouped
