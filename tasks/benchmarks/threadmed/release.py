"""A rebuild beside a local copy of the ThReadMed-QA public release: Table 1 of each (threads, questions,
answered share, turns per thread, token lengths) and which threads each holds. Reads local files only.

The paper does not describe the release's files, so this module reads the release in the layout of a
build's own `dataset/` folder, which a user arranges once from their copy (tasks/benchmarks/threadmed/
README.md): RELEASE/answered/qa_pairs.<ext> (required: the fully answered threads) and
RELEASE/full/qa_pairs.<ext> (optional: orphan questions included), each one row per question with the
columns thread_id, turn, question, answer (empty or null for an orphan), <ext> one of parquet, csv, jsonl.
"""

import itertools
from pathlib import Path
from typing import Any, NamedTuple

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from tasks.benchmarks.threadmed.cases import check_dataset_build
from tasks.benchmarks.threadmed.publish import DATASETS, qa_pairs_table1
from tasks.core.preflight import UserError
from tasks.report.tables import Table

RELEASE_OPTION = "--release"
REQUIRED_SUBSET = "answered"
COLUMNS = ("thread_id", "turn", "question", "answer")
# How DuckDB reads each format the release may come in.
READERS = {
    "parquet": "read_parquet($path)",
    "csv": "read_csv($path, header = true, all_varchar = true)",  # ids as written: `t` is no boolean
    "jsonl": "read_json($path, format = 'newline_delimited')",
}
# Table 1's rows compared, as stats.json names them; the counts then the shares and means.
TABLE1_METRICS = (
    ("Threads", "threads"),
    ("Questions", "questions"),
    ("Answered questions", "answered_questions"),
    ("Answered (%)", "answered_pct"),
    ("Follow-ups per thread, max", "follow_ups_max"),
    ("Follow-ups per thread, mean", "follow_ups_mean"),
    ("Follow-ups per thread, median", "follow_ups_median"),
    ("Threads with exactly 3 turns (%)", "threads_exactly_3_turns_pct"),
    ("Threads with >= 4 turns (%)", "threads_4plus_turns_pct"),
    ("Threads with >= 5 turns (%)", "threads_5plus_turns_pct"),
    ("Question tokens (mean)", "question_tokens_mean"),
    ("Answer tokens (mean)", "answer_tokens_mean"),
    ("Thread tokens (mean)", "thread_tokens_mean"),
)


class SubsetSide(NamedTuple):
    """One side of a comparison of a subset: its Table 1 and its threads (ids without Reddit's t3_)."""

    table1: dict[str, Any]
    thread_ids: set[str]


def release_file(release_dir: Path, subset: str) -> Path | None:
    """RELEASE/<subset>/qa_pairs.<ext>, None when absent; UserError when several formats are there."""
    found = [path for ext in READERS if (path := release_dir / subset / f"qa_pairs.{ext}").is_file()]
    if len(found) > 1:
        names = ", ".join(path.name for path in found)
        raise UserError(
            f"{release_dir / subset} holds qa_pairs in {len(found)} formats ({names}): keep one",
            RELEASE_OPTION,
        )
    return found[0] if found else None


def read_release_pairs(path: Path) -> pa.Table:
    """A release file's rows as thread_id, turn, question, answer (an empty answer is null); UserError, one
    line, when it cannot be read, lacks a column, has a row without thread, turn or question, or a turn twice.
    """
    where = f"{path.parent.name}/{path.name}"
    try:
        with duckdb.connect() as connection:
            relation = connection.sql(f"select * from {READERS[path.suffix[1:]]}", params={"path": str(path)})
            if missing := [column for column in COLUMNS if column not in relation.columns]:
                raise UserError(
                    f"{where} lacks the column(s) {', '.join(missing)} (it has "
                    f"{', '.join(relation.columns)}): rename its columns to {', '.join(COLUMNS)}",
                    RELEASE_OPTION,
                )
            relation.create_view("release_rows")
            table = connection.sql(
                "select thread_id::varchar as thread_id, turn::bigint as turn, "
                "question::varchar as question, nullif(trim(answer::varchar), '') as answer "
                "from release_rows order by thread_id, turn"
            ).to_arrow_table()
    except duckdb.Error as error:
        raise UserError(f"cannot read {where}: {str(error).splitlines()[0]}", RELEASE_OPTION) from None
    check_release_rows(table, where)
    return table


def check_release_rows(table: pa.Table, where: str) -> None:
    """UserError unless the rows are some, each with a thread, a turn and a question, each turn once."""
    if table.num_rows == 0:
        raise UserError(f"{where} holds no rows", RELEASE_OPTION)
    incomplete = sum(table[column].null_count for column in ("thread_id", "turn", "question"))
    if incomplete:
        raise UserError(
            f"{where}: {incomplete} values of thread_id, turn or question are empty", RELEASE_OPTION
        )
    keys = list(zip(table["thread_id"].to_pylist(), table["turn"].to_pylist(), strict=True))
    repeated = next((key for key, following in itertools.pairwise(keys) if key == following), None)
    if repeated is not None:
        raise UserError(f"{where}: thread {repeated[0]} has turn {repeated[1]} twice", RELEASE_OPTION)


def subset_side(qa_pairs: pa.Table) -> SubsetSide:
    ids = {thread_id.removeprefix("t3_") for thread_id in qa_pairs.column("thread_id").to_pylist()}
    return SubsetSide(qa_pairs_table1(qa_pairs), ids)


def _difference(ours: float, theirs: float) -> str:
    if isinstance(ours, int) and isinstance(theirs, int):
        return f"{ours - theirs:+,}"
    return f"{round(ours - theirs, 2):+,}"


def comparison_table(subset: str, rebuild: SubsetSide, release: SubsetSide) -> Table:
    """Table 1 side by side (rebuild, release, rebuild - release), then the threads each holds."""
    rows = []
    for label, key in TABLE1_METRICS:
        ours, theirs = rebuild.table1[key], release.table1[key]
        rows.append([label, f"{ours:,}", f"{theirs:,}", _difference(ours, theirs)])
    shared = len(rebuild.thread_ids & release.thread_ids)
    rows += [
        ["Threads in both", f"{shared:,}", f"{shared:,}", ""],
        ["Threads on this side only", f"{len(rebuild.thread_ids - release.thread_ids):,}",
         f"{len(release.thread_ids - rebuild.thread_ids):,}", ""],
    ]  # fmt: skip
    caption = (
        "Tokens: tiktoken cl100k_base, as in the paper's Table 1. A thread is matched by its id (the Reddit "
        "post id). Threads only in the rebuild may have been removed from the release on request: drop them "
        "from your copy (see the card's terms)."
    )
    columns = ["", "rebuild", "release", "difference"]
    return Table(f"release-{subset}", f"{subset} subset", columns, rows, caption, tuple(columns[1:]))


def compare_with_release(build_dir: Path, release_dir: Path) -> list[Table]:
    """One comparison table per subset present in the release (answered is required); UserError, one line,
    for a release folder laid out otherwise (module docstring)."""
    if release_file(release_dir, REQUIRED_SUBSET) is None:
        raise UserError(
            f"{release_dir} holds no {REQUIRED_SUBSET}/qa_pairs.parquet, .csv or .jsonl: lay out your copy "
            "of the release as tasks/benchmarks/threadmed/README.md says",
            RELEASE_OPTION,
        )
    try:
        check_dataset_build(build_dir)
    except UserError as error:
        raise UserError(str(error), "BUILD_DIR") from None
    tables = []
    for subset in DATASETS:
        path = release_file(release_dir, subset)
        if path is None:
            continue
        ours = pq.read_table(build_dir / "dataset" / subset / "qa_pairs.parquet", columns=list(COLUMNS))
        tables.append(comparison_table(subset, subset_side(ours), subset_side(read_release_pairs(path))))
    return sorted(tables, key=lambda table: table.key != f"release-{REQUIRED_SUBSET}")
