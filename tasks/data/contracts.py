"""A table's contract: its columns, types, key and the rules audits check, defined once per table.

Each owner defines its tables beside itself (tasks/data/reddit/contracts.py, each benchmark's
contracts.py); SQL models name their contract in their header, and the build checks what was built
against it and audits its key, `not_null` columns and `references`. Schemas are pyarrow schemas so that
Parquet writers, DuckDB and the tests share one definition.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa


@dataclass(frozen=True)
class Contract:
    """A table's name, schema and key (the columns that identify a row), and what audits check.

    The key is unique and never null, except for key columns in `nullable_key` (where null is a value);
    `not_null` names further columns that are never null; `references` maps a column to the
    `table.column` its values must appear in (a foreign key).
    """

    name: str
    schema: pa.Schema
    key: tuple[str, ...]
    not_null: tuple[str, ...] = ()
    nullable_key: tuple[str, ...] = ()
    references: Mapping[str, str] = field(default_factory=dict)

    @property
    def columns(self) -> list[str]:
        return self.schema.names


def schema(*fields: tuple[str, pa.DataType]) -> pa.Schema:
    """A pyarrow schema from (name, type) pairs."""
    return pa.schema([pa.field(name, dtype) for name, dtype in fields])
