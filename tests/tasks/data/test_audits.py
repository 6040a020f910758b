"""Audits generated from contracts: given rows, each kind returns exactly the rows that break it."""

import duckdb
import pyarrow as pa
import pytest

from tasks.data.audits import contract_audits, key_audit, not_null_audit, reference_audit
from tasks.data.contracts import Contract, schema

ITEMS = Contract(
    "items",
    schema(
        ("item_id", pa.string()), ("version", pa.int64()), ("order_id", pa.string()), ("name", pa.string())
    ),
    key=("item_id", "version"),
    not_null=("name",),
    references={"order_id": "orders.order_id"},
)


@pytest.fixture
def duck():
    with duckdb.connect(":memory:") as con:
        con.execute("create table orders as select * from (values ('o1'), ('o2')) as t (order_id)")
        con.execute(
            "create table items as select * from (values "
            "('i1', 1, 'o1', 'a'), ('i1', 2, 'o2', 'b'), ('i2', 1, null, 'c'), "
            "('i2', 1, 'o1', 'c'), ('i3', null, 'o9', null)) as t (item_id, version, order_id, name)"
        )
        yield con


def violations(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple]:
    return sorted(con.sql(sql).fetchall(), key=str)


def test_key_audit_returns_repeated_and_null_keys(duck):
    audit = key_audit("items", ITEMS)
    assert (audit.name, audit.upstream) == ("items__key_unique", ("items",))
    assert violations(duck, audit.sql) == [("i2", 1, 2), ("i3", None, 1)]


def test_a_nullable_key_column_may_be_null_but_not_repeated(duck):
    contract = Contract("items", ITEMS.schema, key=("item_id", "version"), nullable_key=("version",))
    assert violations(duck, key_audit("items", contract).sql) == [("i2", 1, 2)]


def test_not_null_audit_returns_the_rows_with_a_null(duck):
    audit = not_null_audit("items", "name")
    assert audit.name == "items__name_not_null"
    assert violations(duck, audit.sql) == [("i3", None, "o9", None)]


def test_reference_audit_returns_rows_naming_no_parent(duck):
    audit = reference_audit("items", "order_id", "orders", "order_id")
    assert (audit.name, audit.upstream) == ("items__order_id_references_orders", ("items", "orders"))
    assert violations(duck, audit.sql) == [("i3", None, "o9", None)]


def test_a_contract_gives_one_audit_per_rule_and_references_resolve_to_the_built_table():
    audits = contract_audits("full_items", ITEMS, {"orders": "full_orders"})
    assert [audit.name for audit in audits] == [
        "full_items__key_unique",
        "full_items__name_not_null",
        "full_items__order_id_references_full_orders",
    ]
