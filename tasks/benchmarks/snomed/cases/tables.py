"""Loading tabular sources (CSV or Parquet files) into DuckDB, and grouping query rows per patient."""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb


def has_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    found = con.execute(
        "select count(*) from information_schema.tables where lower(table_name) = lower($name)",
        {"name": name},
    ).fetchall()
    return found[0][0] > 0


def table_columns(con: duckdb.DuckDBPyConnection, name: str) -> set[str]:
    rows = con.execute(
        "select lower(column_name) from information_schema.columns where lower(table_name) = lower($name)",
        {"name": name},
    ).fetchall()
    return {row[0] for row in rows}


def ensure_table(con: duckdb.DuckDBPyConnection, name: str, columns: Sequence[str]) -> None:
    """Make `name` have at least `columns` (`"<name> <type>"`), as temp objects a read-only database allows:
    a missing table becomes an empty temp table, missing columns come as nulls from a temp view over it."""
    if not has_table(con, name):
        con.execute(f"create temp table {name} ({', '.join(columns)})")
        return
    present = table_columns(con, name)
    missing = [column.split() for column in columns if column.split()[0].lower() not in present]
    if missing:
        database = con.execute("select current_database()").fetchall()[0][0]
        extra = ", ".join(f"cast(null as {kind}) as {column}" for column, kind in missing)
        con.execute(f"create temp view {name} as select *, {extra} from {database}.main.{name}")


def load_table_file(con: duckdb.DuckDBPyConnection, name: str, folder: Path, all_varchar: bool) -> bool:
    """Load `<folder>/<name>.csv` (or `.parquet`) as table `name`; False when neither file exists."""
    csv_path, parquet_path = folder / f"{name}.csv", folder / f"{name}.parquet"
    if csv_path.exists():
        con.execute(
            f"create table {name} as select * from read_csv($path, header = true, all_varchar = $text)",
            {"path": str(csv_path), "text": all_varchar},
        )
        return True
    if parquet_path.exists():
        con.execute(f"create table {name} as select * from read_parquet($path)", {"path": str(parquet_path)})
        return True
    return False


def rows_by_patient(rows: Sequence[tuple[Any, ...]]) -> dict[str, list[tuple[Any, ...]]]:
    """Rows whose first value is a patient id -> {patient id: the rest of each row}."""
    grouped: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        grouped.setdefault(str(row[0]), []).append(row[1:])
    return grouped
