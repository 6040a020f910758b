"""The commenter roles a ThReadMed-QA build may count as answers: those the flair seed table can give.

Light (no Prefect): `threadmed build` checks its `--answer-roles` before its first line.
"""

import csv
from collections.abc import Iterable
from pathlib import Path

from tasks.data.warehouse import SQL_DIR, ProjectError


def flair_roles(sql_dir: Path = SQL_DIR) -> set[str]:
    """The roles the flair seed table can give a commenter: what `answer_roles` may name."""
    with (sql_dir / "seeds" / "threadmed" / "flair_roles.csv").open(encoding="utf-8", newline="") as handle:
        return {row["role"] for row in csv.DictReader(handle)}


def check_answer_roles(roles: Iterable[str], known: set[str]) -> None:
    """Raise ProjectError for a role no flair maps to (a typo would silently build an empty dataset)."""
    unknown = sorted(set(roles) - known)
    if unknown:
        raise ProjectError(f"unknown answer role(s) {unknown}; the flair seed table has {sorted(known)}")
