"""SQL model tests: an in-memory warehouse with the seeds and macros, rows in, whole tables out."""

from collections.abc import Callable, Iterator
from typing import Any

import duckdb
import pyarrow as pa
import pytest

from tasks.benchmarks.threadmed.settings import BuildSettings
from tasks.benchmarks.threadmed.warehouse import WAREHOUSE, sql_parameters
from tasks.data import warehouse
from tasks.data.contracts import Contract
from tasks.data.reddit.pseudonym_salt import DEFAULT_SALT

PROJECT = warehouse.load_project(WAREHOUSE)
MODELS = {model.name: model for model in PROJECT.models}
CONTRACTS: dict[str, Contract] = {
    **{contract.name: contract for contract in PROJECT.raw},
    **{path.stem: PROJECT.seed_contract(path) for path in PROJECT.seeds},
    **{model.name: model.contract for model in PROJECT.models},
}

Rows = list[dict[str, Any]]


def load_table(con: duckdb.DuckDBPyConnection, table: str, rows: Rows) -> None:
    """Create `table` with its contract's schema and the given rows (missing columns are null)."""
    contract = CONTRACTS[table]
    unknown = {column for row in rows for column in row} - set(contract.columns)
    if unknown:
        raise KeyError(f"{table} has no column(s) {sorted(unknown)}")
    data = pa.Table.from_pylist(
        [{c: row.get(c) for c in contract.columns} for row in rows], schema=contract.schema
    )
    con.register("given_rows", data)
    con.execute(f"create or replace table {table} as select * from given_rows")
    con.unregister("given_rows")


def read_table(con: duckdb.DuckDBPyConnection, table: str) -> Rows:
    """All rows of a table as dicts, sorted by its contract's key."""
    rows = con.sql(f"select * from {table}").to_arrow_table().to_pylist()
    key = CONTRACTS[table].key
    return sorted(rows, key=lambda row: tuple((row[k] is None, row[k]) for k in key))


def build_model(con: duckdb.DuckDBPyConnection, name: str, salt: str = DEFAULT_SALT, **settings: Any) -> Rows:
    """Build one model with BuildSettings(**settings) and `salt` as parameters; return its whole output."""
    warehouse.run_model(con, MODELS[name], sql_parameters(BuildSettings(**settings), salt))
    return read_table(con, name)


@pytest.fixture
def duck() -> Iterator[duckdb.DuckDBPyConnection]:
    """A fresh in-memory warehouse holding the seeds and macros, with UTC session time."""
    con = duckdb.connect(":memory:")
    warehouse.prepare_connection(con)
    warehouse.load_seeds(con, PROJECT.seeds, PROJECT.contracts)
    warehouse.load_macros(con, PROJECT.macros)
    yield con
    con.close()


@pytest.fixture
def load_rows() -> Callable[[duckdb.DuckDBPyConnection, str, Rows], None]:
    """`load_rows(duck, table, rows)`: give a model's input table."""
    return load_table


@pytest.fixture
def run_model() -> Callable[..., Rows]:
    """`run_model(duck, name, **settings)`: build a model, get its whole output sorted by key."""
    return build_model
