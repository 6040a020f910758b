"""ThReadMed-QA's warehouse: build settings as SQL parameters, answer roles, the build task."""

from datetime import UTC, datetime

import duckdb
import pyarrow.parquet as pq
import pytest

from tasks.benchmarks.threadmed.answer_roles import check_answer_roles, flair_roles
from tasks.benchmarks.threadmed.contracts import QA_PAIRS, THREADS
from tasks.benchmarks.threadmed.settings import BuildSettings
from tasks.benchmarks.threadmed.warehouse import WAREHOUSE, build_warehouse, sql_parameters
from tasks.data.reddit.pseudonym_salt import read_pseudonym_salt
from tasks.data.warehouse import ProjectError, load_project


def test_sql_parameters_cover_every_rule_setting():
    settings = BuildSettings(
        answer_roles=["physician", "nurse_practitioner"], seed=3, min_clean_char_share=0.5
    )
    parameters = sql_parameters(settings, "pepper")
    assert parameters["window_start"] == datetime(2015, 1, 1, tzinfo=UTC)
    assert parameters["window_end"] == datetime(2023, 7, 1, tzinfo=UTC)
    assert (parameters["answer_roles"], parameters["seed"], parameters["min_clean_char_share"]) == (
        ["physician", "nurse_practitioner"], 3, 0.5,
    )  # fmt: skip
    assert parameters["salt"] == "pepper"
    rule_fields = set(BuildSettings.model_fields) - {"start", "end", "keep_truncated"}
    assert set(parameters) == rule_fields | {"window_start", "window_end", "salt"}


def test_build_warehouse_task_writes_one_complete_file(tmp_path):
    db_path = tmp_path / "warehouse" / "build.duckdb"
    counts = build_warehouse.fn(str(db_path), {}, BuildSettings(), read_pseudonym_salt({}))
    # with no input, only the staging stages of the funnel have rows: three reasons and a total each
    assert counts == {model.name: 0 for model in load_project(WAREHOUSE).models} | {"stats_funnel": 8}
    assert sorted(path.name for path in db_path.parent.iterdir()) == ["build.duckdb"]
    with duckdb.connect(str(db_path), read_only=True) as con:
        con.execute("copy full_threads to '{}'".format(tmp_path / "threads.parquet"))
        con.execute("copy answered_qa_pairs to '{}'".format(tmp_path / "qa_pairs.parquet"))
    for path, contract in (
        (tmp_path / "threads.parquet", THREADS),
        (tmp_path / "qa_pairs.parquet", QA_PAIRS),
    ):
        exported = pq.read_schema(path)
        assert [(f.name, f.type) for f in exported] == [(f.name, f.type) for f in contract.schema]


def test_answer_roles_must_be_roles_of_the_flair_seed():
    known = flair_roles()
    assert {"physician", "physician_assistant", "nurse_practitioner", "unverified"} <= known
    check_answer_roles(["physician", "physician_assistant"], known)
    with pytest.raises(ProjectError, match=r"unknown answer role\(s\) \['Physician'\]"):
        check_answer_roles(["physician", "Physician"], known)
