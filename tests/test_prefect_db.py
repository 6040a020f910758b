"""The run's migrated Prefect database (tests/prefect_db.py): made once, copied whole to a new server's
database, never over one that exists, and not at all when there is none or making it failed."""

import os
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pytest

from tests import prefect_db


def rows(database: Path, query: str) -> list[tuple]:
    with closing(sqlite3.connect(database)) as connection:
        return connection.execute(query).fetchall()


@pytest.fixture
def template(tmp_path, monkeypatch) -> Path:
    """A made template: a database of one table, and its outcome "ok"."""
    folder = tmp_path / "template"
    folder.mkdir()
    with closing(sqlite3.connect(folder / prefect_db.DATABASE)) as connection:
        connection.execute("create table alembic_version (version_num text)")
        connection.execute("insert into alembic_version values ('abc123')")
        connection.commit()
    (folder / prefect_db.OUTCOME).write_text("ok")
    (folder / prefect_db.MAKER).write_text(str(os.getpid()))
    monkeypatch.setenv(prefect_db.TEMPLATE_VARIABLE, str(folder))
    return folder


def test_a_new_database_is_a_whole_copy_of_the_template(template, tmp_path):
    copy = tmp_path / "home" / "prefect.db"
    assert prefect_db.seed(copy) is True
    assert rows(copy, "select version_num from alembic_version") == [("abc123",)]


def test_an_existing_database_is_left_as_it_is(template, tmp_path):
    existing = tmp_path / "prefect.db"
    existing.write_bytes(b"a server's own")
    assert (prefect_db.seed(existing), existing.read_bytes()) == (False, b"a server's own")


@pytest.mark.parametrize("outcome", ["exit 1\nmigration failed", None])
def test_without_a_made_template_nothing_is_copied(template, tmp_path, monkeypatch, outcome):
    if outcome is None:
        monkeypatch.delenv(prefect_db.TEMPLATE_VARIABLE)
    else:
        (template / prefect_db.OUTCOME).write_text(outcome)
    copy = tmp_path / "prefect.db"
    assert (prefect_db.seed(copy), copy.exists()) == (False, False)


def test_a_template_whose_maker_ended_without_an_outcome_is_not_waited_for(template, tmp_path, monkeypatch):
    monkeypatch.setattr(prefect_db, "sleep", never_called)
    (template / prefect_db.OUTCOME).unlink()
    (template / prefect_db.MAKER).write_text(str(ended_process()))
    copy = tmp_path / "prefect.db"
    assert (prefect_db.seed(copy), copy.exists()) == (False, False)


def never_called(_: float) -> None:
    raise AssertionError("waited for a template no process is making")


def ended_process() -> int:
    """The pid of a process that has ended."""
    with subprocess.Popen(["true"]) as process:
        process.wait()
    return process.pid


def test_this_run_made_its_template_and_this_process_s_prefect_home_is_a_copy_of_it():
    folder = Path(os.environ[prefect_db.TEMPLATE_VARIABLE])
    home = Path(os.environ["PREFECT_HOME"])
    version = "select version_num from alembic_version"
    assert (folder / prefect_db.OUTCOME).read_text() == "ok"
    assert rows(home / "prefect.db", version) == rows(folder / prefect_db.DATABASE, version) != []
