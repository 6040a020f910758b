"""The audits every contract implies, generated: key unique and not null, `not_null` columns, references.

Each is a `select` of the violating rows, like a hand-written audit in sql/audits/, and is named the same
way (`<table>__<rule>`), so the build runs both kinds alike. Only rules particular to one table are
written by hand.
"""

from typing import NamedTuple

from tasks.data.contracts import Contract


class GeneratedAudit(NamedTuple):
    """One generated audit: its name, what it checks, the tables it reads and its SQL."""

    name: str
    purpose: str
    upstream: tuple[str, ...]
    sql: str


def key_audit(table: str, contract: Contract) -> GeneratedAudit:
    """Rows whose key is repeated or null (a key column in `nullable_key` may be null)."""
    key = ", ".join(contract.key)
    nulls = [f" or {column} is null" for column in contract.key if column not in contract.nullable_key]
    sql = (
        f"select\n    {key},\n    count(*) as count_rows\nfrom {table}\ngroup by {key}\n"
        f"having count(*) > 1{''.join(nulls)}"
    )
    return GeneratedAudit(f"{table}__key_unique", f"The key ({key}) is unique and never null.", (table,), sql)


def not_null_audit(table: str, column: str) -> GeneratedAudit:
    """Rows where a column the contract declares `not_null` is null."""
    sql = f"select *\nfrom {table}\nwhere {column} is null"
    return GeneratedAudit(f"{table}__{column}_not_null", f"{column} is never null.", (table,), sql)


def reference_audit(table: str, column: str, target_table: str, target_column: str) -> GeneratedAudit:
    """Rows whose non-null `column` names no row of `target_table` (a foreign key that does not resolve)."""
    sql = (
        f"select *\nfrom {table} as child\nwhere\n    child.{column} is not null\n    and not exists (\n"
        f"        select 1 from {target_table} as parent where parent.{target_column} = child.{column}\n    )"
    )
    return GeneratedAudit(
        f"{table}__{column}_references_{target_table}",
        f"Every {column} is a {target_column} of {target_table}.",
        (table, target_table),
        sql,
    )


def contract_audits(table: str, contract: Contract, resolve: dict[str, str]) -> list[GeneratedAudit]:
    """The audits of one table built to `contract`; `resolve` maps a referenced table to the built one."""
    audits = [key_audit(table, contract)]
    audits += [not_null_audit(table, column) for column in contract.not_null]
    for column, target in contract.references.items():
        target_table, target_column = target.split(".")
        audits.append(reference_audit(table, column, resolve.get(target_table, target_table), target_column))
    return audits
