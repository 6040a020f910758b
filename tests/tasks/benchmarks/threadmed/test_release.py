"""A rebuild beside a tiny hand-made copy of the ThReadMed-QA release, and the release files refused."""

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.benchmarks.threadmed.publish import qa_pairs_table1, table1
from tasks.benchmarks.threadmed.release import compare_with_release
from tasks.core.preflight import UserError
from tasks.core.tokens import count_tokens
from tests.eval_fixtures import write_dataset

# thread -> turns of (question, answer); the build's answered subset.
BUILD_TEXTS = {
    "aa1": [("q one", "a one"), ("q two", "a two"), ("q three", "a three")],
    "bb2": [("q one", "a one"), ("q two", "a two"), ("q three", "a three"), ("q four", "a four")],
    "cc3": [("q one", "a one"), ("q two", "a two"), ("q three", "a three")],
}


def write_build(root: Path) -> Path:
    """A build whose answered and full subsets are BUILD_TEXTS' three threads (ten questions)."""
    build = write_dataset(root / "build", {thread: ("test", turns) for thread, turns in BUILD_TEXTS.items()})
    shutil.copytree(build / "dataset" / "answered", build / "dataset" / "full")
    return build


def release_rows(threads: dict[str, list[tuple[str, str | None]]]) -> list[dict]:
    return [
        {"thread_id": thread, "turn": turn, "question": question, "answer": answer}
        for thread, turns in threads.items()
        for turn, (question, answer) in enumerate(turns)
    ]


# The release: aa1 as in the build (with Reddit's t3_ prefix), cc3 removed, dd4 only there; its full
# subset adds an orphan question to dd4 (an empty answer).
RELEASE_ANSWERED = {
    "t3_aa1": BUILD_TEXTS["aa1"],
    "bb2": BUILD_TEXTS["bb2"],
    "dd4": [("q one", "a one"), ("q two", "a two"), ("q three", "a three")],
}
RELEASE_FULL = {**RELEASE_ANSWERED, "dd4": [*RELEASE_ANSWERED["dd4"], ("q four", "")]}


def write_release(root: Path) -> Path:
    """The release as CSV (answered) and JSON lines (full), in the documented layout."""
    release = root / "release"
    (release / "answered").mkdir(parents=True)
    (release / "full").mkdir()
    pa_table = pa.Table.from_pylist(release_rows(RELEASE_ANSWERED))
    (release / "answered" / "qa_pairs.csv").write_text(
        "thread_id,turn,question,answer\n"
        + "".join(
            f"{r['thread_id']},{r['turn']},{r['question']},{r['answer']}\n" for r in pa_table.to_pylist()
        )
    )
    (release / "full" / "qa_pairs.jsonl").write_text(
        "".join(json.dumps(row) + "\n" for row in release_rows(RELEASE_FULL))
    )
    return release


def tokens(*texts: str) -> int:
    return sum(count_tokens(text) for text in texts)


def test_the_table1_of_question_answer_pairs_counts_orphans_as_unanswered():
    pairs = pa.Table.from_pylist(release_rows({"t": [("why", "because"), ("and?", None), ("so", "yes")]}))
    assert qa_pairs_table1(pairs) == table1(
        [3],
        [2],
        [tokens("why"), tokens("and?"), tokens("so")],
        [tokens("because"), tokens("yes")],
        [tokens("why", "because", "and?", "so", "yes")],
    )


def test_a_rebuild_and_a_release_side_by_side_with_the_threads_only_one_holds(tmp_path):
    answered, full = compare_with_release(write_build(tmp_path), write_release(tmp_path))
    assert (answered.title, full.title) == ("answered subset", "full subset")
    assert answered.columns == ["", "rebuild", "release", "difference"]
    rows = {row[0]: row[1:] for row in answered.rows}
    assert rows["Threads"] == ["3", "3", "+0"]
    assert rows["Questions"] == ["10", "10", "+0"]
    assert rows["Answered (%)"] == ["100.0", "100.0", "+0.0"]
    assert rows["Threads with >= 4 turns (%)"] == ["33.3", "33.3", "+0.0"]
    assert rows["Threads in both"] == ["2", "2", ""]
    assert rows["Threads on this side only"] == ["1", "1", ""]
    full_rows = {row[0]: row[1:] for row in full.rows}
    assert full_rows["Questions"] == ["10", "11", "-1"]
    assert full_rows["Answered questions"] == ["10", "10", "+0"]
    assert full_rows["Answered (%)"] == ["100.0", "90.9", "+9.1"]
    assert full_rows["Follow-ups per thread, mean"] == ["2.33", "2.67", "-0.34"]


def test_the_full_subset_of_a_release_is_optional(tmp_path):
    release = write_release(tmp_path)
    shutil.rmtree(release / "full")
    assert [table.title for table in compare_with_release(write_build(tmp_path), release)] == [
        "answered subset"
    ]


@pytest.mark.parametrize(
    ("arrange", "message"),
    [
        (
            lambda release: shutil.rmtree(release / "answered"),
            "{release} holds no answered/qa_pairs.parquet, .csv or .jsonl: lay out your copy of the release "
            "as tasks/benchmarks/threadmed/README.md says",
        ),
        (
            lambda release: pq.write_table(
                pa.Table.from_pylist(release_rows(RELEASE_ANSWERED)),
                release / "answered" / "qa_pairs.parquet",
            ),
            "{release}/answered holds qa_pairs in 2 formats (qa_pairs.parquet, qa_pairs.csv): keep one",
        ),
        (
            lambda release: (release / "answered" / "qa_pairs.csv").write_text(
                "thread,turn,question,reply\nt,0,q,a\n"
            ),
            "answered/qa_pairs.csv lacks the column(s) thread_id, answer (it has thread, turn, question, "
            "reply): rename its columns to thread_id, turn, question, answer",
        ),
        (
            lambda release: (release / "answered" / "qa_pairs.csv").write_text(
                "thread_id,turn,question,answer\n"
            ),
            "answered/qa_pairs.csv holds no rows",
        ),
        (
            lambda release: (release / "answered" / "qa_pairs.csv").write_text(
                "thread_id,turn,question,answer\nt,0,q,a\nt,1,,a\n"
            ),
            "answered/qa_pairs.csv: 1 values of thread_id, turn or question are empty",
        ),
        (
            lambda release: (release / "answered" / "qa_pairs.csv").write_text(
                "thread_id,turn,question,answer\nt,0,q,a\nt,0,q again,a\n"
            ),
            "answered/qa_pairs.csv: thread t has turn 0 twice",
        ),
        (
            lambda release: (release / "full" / "qa_pairs.jsonl").write_text("{not json\n"),
            "cannot read full/qa_pairs.jsonl: ",
        ),
    ],
    ids=["no answered", "two formats", "columns", "empty", "null question", "turn twice", "unreadable"],
)
def test_a_release_laid_out_otherwise_is_refused_in_one_line(tmp_path, arrange, message):
    build, release = write_build(tmp_path), write_release(tmp_path)
    arrange(release)
    with pytest.raises(UserError) as refused:
        compare_with_release(build, release)
    assert str(refused.value).startswith(message.format(release=release))
    assert "\n" not in str(refused.value) and refused.value.option == "--release"


def test_a_folder_that_is_not_a_build_is_refused(tmp_path):
    (tmp_path / "dumps").mkdir()
    with pytest.raises(UserError) as refused:
        compare_with_release(tmp_path / "dumps", write_release(tmp_path))
    assert str(refused.value) == (
        f"{tmp_path / 'dumps'} is not a dataset build (no dataset/answered/threads.parquet); pass the --out "
        "folder of `threadmed build`"
    )
    assert refused.value.option == "BUILD_DIR"
