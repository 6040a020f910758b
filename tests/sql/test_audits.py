"""Audits pass on a small valid build, and each one catches a violation crafted for it."""

from collections.abc import Iterator

import duckdb
import pytest

from tasks.benchmarks.threadmed.settings import BuildSettings
from tasks.benchmarks.threadmed.warehouse import sql_parameters
from tasks.data import warehouse
from tasks.data.reddit.contracts import RAW_COMMENTS, RAW_SUBMISSIONS
from tasks.data.reddit.pseudonym_salt import DEFAULT_SALT
from tests.sql.conftest import PROJECT
from tests.sql.rows import T0, raw_comment, raw_submission, write_parquet

PARAMETERS = sql_parameters(BuildSettings(), DEFAULT_SALT)
DOCTOR = {"author": "dr_jones", "author_flair_text": "Physician"}


def follow_up(comment_id: str, parent: str, post: str, minute: int, **fields):
    return raw_comment(
        comment_id, parent, post, author="alice", author_flair_text=None, created_utc=T0 + 60 * minute,
        body=f"Thank you, and what about the follow-up number {minute}?", **fields,
    )  # fmt: skip


def answer(comment_id: str, parent: str | None, post: str, minute: int):
    return raw_comment(comment_id, parent, post, created_utc=T0 + 60 * minute, **DOCTOR)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Iterator[duckdb.DuckDBPyConnection]:
    """A warehouse built from two posts: p1 gives an answered thread, p2 a full one ending in orphans."""
    folder = tmp_path_factory.mktemp("raw")
    submissions = [raw_submission("p1"), raw_submission("p2"), raw_submission("p3", selftext="[removed]")]
    comments = [
        answer("a1", None, "p1", 1), follow_up("q1", "a1", "p1", 2), answer("a2", "q1", "p1", 3),
        follow_up("q2", "a2", "p1", 4), answer("a3", "q2", "p1", 5), answer("b1", None, "p1", 6),
        answer("a4", None, "p2", 1), follow_up("q3", "a4", "p2", 2), follow_up("q4", "q3", "p2", 3),
        raw_comment("z1", post="p3"),
    ]  # fmt: skip
    raw_files = {
        "raw_reddit__submissions": [write_parquet(folder / "rs.parquet", RAW_SUBMISSIONS, submissions)],
        "raw_reddit__comments": [write_parquet(folder / "rc.parquet", RAW_COMMENTS, comments)],
    }
    con = duckdb.connect(":memory:")
    counts = warehouse.build(con, raw_files, PARAMETERS, project=PROJECT)
    assert (counts["full_threads"], counts["answered_threads"], counts["full_qa_pairs"]) == (2, 1, 6)
    yield con
    con.close()


def test_every_audit_passes_on_a_valid_build(built):
    warehouse.run_audits(built, PROJECT.audits, PARAMETERS)


def insert_copy(table: str, **replaced: str) -> str:
    """SQL inserting a copy of one row of `table`, with some columns replaced by SQL expressions."""
    replace = (
        f" replace ({', '.join(f'{sql} as {column}' for column, sql in replaced.items())})"
        if replaced
        else ""
    )
    return f"insert into {table} select *{replace} from {table} limit 1"


VIOLATIONS = {
    "flair_roles__priority_unique": "update flair_roles set priority = 1",
    "length_strata__ranges_partition_counts": (
        "update length_strata set min_pairs = 5 where stratum = 'medium'"
    ),
    "stg_reddit__submissions__author_pseudonymised": (
        "update stg_reddit__submissions set author_pseudonym = 'alice'"
    ),
    "stg_reddit__comments__author_pseudonymised": (
        "update stg_reddit__comments set author_pseudonym = 'dr_jones'"
    ),
    "int_posts__filtered__kept_posts_pass_every_rule": "update int_posts__filtered set count_comments = 0",
    "int_comments__classified__class_matches_reasons": (
        "update int_comments__classified set answer_defect = 'garbled' where comment_class = 'op'"
    ),
    "int_paths__enumerated__paths_are_well_formed": (
        "update int_paths__enumerated set position = position + 1"
    ),
    "int_paths__screened__kept_branches_are_unique": (
        "insert into int_paths__screened "
        "select * replace ('copy' as path_id) from int_paths__screened where is_kept"
    ),
    "int_turns__linearised__turns_are_contiguous": "delete from int_turns__linearised where turn = 1",
    "int_branches__selected__one_per_post": "update int_branches__selected set is_selected = false",
    "int_threads__assembled__questions_are_turns": "delete from int_turns__linearised where turn = 1",
    "int_threads__assembled__counts_add_up": (
        "update int_threads__assembled set count_orphans = count_orphans + 1"
    ),
    "full_threads__follows_the_rules": "update full_threads set n_orphans = n_orphans + 1",
    "full_threads__ops_never_straddle_splits": insert_copy(
        "full_threads", thread_id="'copy'", split="case when split = 'train' then 'test' else 'train' end"
    ),
    "full_qa_pairs__answers_are_whole": "update full_qa_pairs set answer = null",
    "answered_threads__subset_of_full": "update answered_threads set split = 'holdout'",
    "answered_qa_pairs__every_turn_answered": "update answered_qa_pairs set answer_id = null where turn = 2",
    "stats_funnel__stages_add_up": (
        "update stats_funnel set count_rows = count_rows + 1 where stage = 'posts' and reason = 'kept'"
    ),
}


HANDWRITTEN = [audit for audit in PROJECT.audits if not audit.generated]
GENERATED = {audit.name: audit for audit in PROJECT.audits if audit.generated}

# One violation per kind of generated audit, on the tables of a variant model and of a nullable key.
GENERATED_VIOLATIONS = {
    "full_qa_pairs__key_unique": insert_copy("full_qa_pairs"),
    "answered_threads__key_unique": "update answered_threads set thread_id = null",
    "stats_funnel__key_unique": insert_copy("stats_funnel", reason="null"),
    "full_threads__split_not_null": "update full_threads set split = null",
    "answered_qa_pairs__thread_id_references_answered_threads": "delete from answered_threads",
}


def test_every_handwritten_audit_has_a_violation_case():
    assert set(VIOLATIONS) == {audit.name for audit in HANDWRITTEN}


def catches(con: duckdb.DuckDBPyConnection, audit: warehouse.SqlFile, violation: str) -> None:
    con.begin()
    try:
        con.execute(violation)
        with pytest.raises(warehouse.AuditError, match=f"audit {audit.name} failed"):
            warehouse.run_audits(con, [audit], PARAMETERS)
    finally:
        con.rollback()


@pytest.mark.parametrize("audit", HANDWRITTEN, ids=lambda audit: audit.name)
def test_each_audit_catches_its_violation(built, audit):
    catches(built, audit, VIOLATIONS[audit.name])


@pytest.mark.parametrize("name", GENERATED_VIOLATIONS)
def test_each_kind_of_generated_audit_catches_its_violation(built, name):
    catches(built, GENERATED[name], GENERATED_VIOLATIONS[name])


def test_a_null_reason_is_a_value_of_the_funnel_key(built):
    warehouse.run_audits(built, [GENERATED["stats_funnel__key_unique"]], PARAMETERS)
    assert built.execute("select count(*) from stats_funnel where reason is null").fetchall()[0][0] > 0


def test_every_contract_key_is_audited():
    tables = {model.name: model.contract for model in PROJECT.models}
    tables |= {path.stem: PROJECT.seed_contract(path) for path in PROJECT.seeds}
    for table, contract in tables.items():
        audit = GENERATED[f"{table}__key_unique"]
        assert f"group by {', '.join(contract.key)}" in audit.text, table


def test_the_hand_written_key_audits_are_gone():
    key_rules = [
        audit.name for audit in HANDWRITTEN if audit.name.endswith(("_id_unique", "belong_to_threads"))
    ]
    assert not key_rules
