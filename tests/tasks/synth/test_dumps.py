"""The synthetic dump generator, at small scale: format, layouts, era drift and its truth tables."""

import calendar
import contextlib
from collections import Counter, defaultdict
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest
import zstandard

from tasks.synth.dumps import (
    FLAIRS_BY_ROLE,
    OTHER_SUBREDDITS,
    TRUTH_QA_PAIRS_SCHEMA,
    TRUTH_THREADS_SCHEMA,
    WINDOW_END,
    WINDOW_START,
    generate_dumps,
)

POSTS, MONTHLY_POSTS, SEED = 1000, 300, 7
SCENARIOS = {
    "thread",
    *(f"near_miss:{kind}" for kind in ("two_questions", "short_follow_up", "impostor", "non_physician_mid",
                                       "non_physician_top", "mid_tombstone", "physician_reply",
                                       "short_answer", "moderator_notice")),
    *(f"decoy:{kind}" for kind in ("deleted_author", "removed_selftext", "short_post", "image_only", "video",
                                   "removed_by_category", "gallery", "out_of_window")),
}  # fmt: skip


def utc(year: int, month: int) -> int:
    return calendar.timegm((year, month, 1, 0, 0, 0))


def read_lines(path: Path) -> list[bytes]:
    with path.open("rb") as handle:
        return (
            zstandard.ZstdDecompressor(max_window_size=2**31).stream_reader(handle).read().split(b"\n")[:-1]
        )


def read_records(path: Path) -> list[dict]:
    records = []
    for line in read_lines(path):
        with contextlib.suppress(orjson.JSONDecodeError):  # the rare malformed line
            records.append(orjson.loads(line))
    return records


def flair_of(record: dict) -> str | None:
    pieces = record.get("author_flair_richtext") or []
    return record["author_flair_text"] or "".join(piece.get("t", "") for piece in pieces) or None


@pytest.fixture(scope="module")
def subreddit_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("subreddit")
    generate_dumps(out, POSTS, SEED)
    return out


@pytest.fixture(scope="module")
def monthly_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("monthly")
    generate_dumps(out, MONTHLY_POSTS, SEED, layout="monthly")
    return out


@pytest.fixture(scope="module")
def submissions(subreddit_dump: Path) -> list[dict]:
    return read_records(subreddit_dump / "AskDocs_submissions.zst")


@pytest.fixture(scope="module")
def comments(subreddit_dump: Path) -> list[dict]:
    return read_records(subreddit_dump / "AskDocs_comments.zst")


def test_same_seed_writes_the_same_bytes(subreddit_dump, tmp_path):
    generate_dumps(tmp_path, POSTS, SEED)
    for name in ("AskDocs_submissions.zst", "AskDocs_comments.zst"):
        assert (tmp_path / name).read_bytes() == (subreddit_dump / name).read_bytes()


def test_files_declare_a_2gib_window_that_default_decoders_refuse(subreddit_dump):
    path = subreddit_dump / "AskDocs_comments.zst"
    frame = zstandard.get_frame_parameters(path.read_bytes()[:18])
    assert (frame.window_size, frame.content_size) == (2**31, zstandard.CONTENTSIZE_UNKNOWN)
    with path.open("rb") as handle, pytest.raises(zstandard.ZstdError, match="too much memory"):
        zstandard.ZstdDecompressor().stream_reader(handle).read(100)
    assert read_lines(path)


def test_subreddit_layout_writes_the_two_subreddit_files(subreddit_dump, submissions, comments):
    assert sorted(path.name for path in subreddit_dump.glob("*.zst")) == [
        "AskDocs_comments.zst",
        "AskDocs_submissions.zst",
    ]
    assert {record["subreddit"] for record in submissions + comments} == {"AskDocs", "askdocs"}
    window = [
        record for record in submissions if WINDOW_START <= int(float(record["created_utc"])) < WINDOW_END
    ]
    assert POSTS - 3 <= len({record["id"] for record in window}) <= POSTS  # a malformed line may lose one
    assert len(submissions) - len(window) >= 18  # outside the window, at least one post a month


def test_monthly_layout_writes_every_month_mixed_with_other_subreddits(monthly_dump):
    names = {path.name for path in monthly_dump.glob("*.zst")}
    months = [f"{year}-{month:02d}" for year in range(2014, 2024) for month in range(1, 13)]
    assert {f"RS_{month}.zst" for month in months} | {f"RC_{month}.zst" for month in months} <= names
    counts = Counter(
        record.get("subreddit", "").lower() == "askdocs"
        for path in monthly_dump.glob("R[SC]_2020-*.zst")
        for record in read_records(path)
    )
    assert 0.3 < counts[True] / (counts[True] + counts[False]) < 0.7
    subreddits = {record.get("subreddit") for record in read_records(monthly_dump / "RS_2021-03.zst")}
    assert subreddits & set(OTHER_SUBREDDITS)


def test_layouts_write_the_same_subreddit_lines_and_truth(monthly_dump, tmp_path):
    generate_dumps(tmp_path, MONTHLY_POSTS, SEED)
    for kind, name in (("RS", "AskDocs_submissions.zst"), ("RC", "AskDocs_comments.zst")):
        ours = [line for line in read_lines(tmp_path / name) if line]
        mixed = [line for path in sorted(monthly_dump.glob(f"{kind}_*.zst")) for line in read_lines(path)]
        known = set(ours)
        assert [line for line in mixed if line in known] == ours
    for table in ("threads.parquet", "qa_pairs.parquet"):
        assert pq.read_table(tmp_path / "truth" / table).equals(pq.read_table(monthly_dump / "truth" / table))


def test_replies_go_to_the_month_of_their_own_creation(monthly_dump):
    for path in monthly_dump.glob("RC_2019-*.zst"):
        created = {int(float(record["created_utc"])) for record in read_records(path)}
        month = int(path.stem[-2:])
        assert utc(2019, month) <= min(created) and max(created) < utc(2019 + month // 12, month % 12 + 1)


def test_fields_drift_by_era(submissions, comments):
    records = submissions + comments
    for record in records:
        created = int(float(record["created_utc"]))
        assert not isinstance(record["created_utc"], str) or created < utc(2015, 12)
        assert "author_flair_richtext" not in record or created >= utc(2018, 4)
        assert "removed_by_category" not in record or created >= utc(2019, 9)
        assert "is_submitter" not in record or created >= utc(2017, 8)
    kinds = Counter(type(record["created_utc"]).__name__ for record in records)
    assert kinds["str"] and kinds["int"] and kinds["float"]
    assert any(isinstance(record["edited"], float) for record in records)
    assert any(
        record.get("author_flair_type") == "richtext" and not record["author_flair_text"]
        for record in records
    )
    assert any(record.get("removed_by_category") for record in submissions)
    assert {"retrieved_on", "retrieved_utc"} <= {key for record in records for key in record}


def test_truth_tables_are_consistent(subreddit_dump, submissions, comments):
    threads = pq.read_table(subreddit_dump / "truth" / "threads.parquet")
    pairs = pq.read_table(subreddit_dump / "truth" / "qa_pairs.parquet")
    assert threads.schema.equals(TRUTH_THREADS_SCHEMA) and pairs.schema.equals(TRUTH_QA_PAIRS_SCHEMA)
    rows: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    for row in pairs.to_pylist():
        rows[row["dataset"], row["thread_id"]].append((row["turn"], row["question_id"], row["answer_id"]))
    comment_ids = {record["id"] for record in comments}
    for thread in threads.to_pylist():
        full, answered = (
            rows.pop(("full", thread["thread_id"]), []),
            rows.pop(("answered", thread["thread_id"]), []),
        )
        assert thread["in_answered"] <= thread["in_full"] and bool(full) == thread["in_full"]
        assert [turn for turn, _, _ in full] == list(range(len(full)))
        assert thread["n_questions"] == (len(full) or None) and (not full or len(full) >= 3)
        if full:
            assert thread["n_answered"] == sum(answer is not None for _, _, answer in full)
            assert thread["n_orphans"] == thread["n_questions"] - thread["n_answered"]
            assert full[0][1] == thread["thread_id"] and full[0][2] in comment_ids
        assert answered == full[: len(answered)] and (thread["n_pairs_answered"] or 0) == len(answered)
        assert all(answer for _, _, answer in answered) and (not answered or len(answered) >= 3)
        assert bool(answered) == thread["in_answered"]
    assert not rows  # every QA row belongs to a thread of threads.parquet
    post_ids = {record["id"] for record in submissions}
    assert {row["question_id"] for row in pairs.to_pylist()} <= post_ids | comment_ids


def test_small_runs_cover_every_scenario_and_length(subreddit_dump):
    threads = pq.read_table(subreddit_dump / "truth" / "threads.parquet").to_pylist()
    assert {thread["scenario"] for thread in threads} == SCENARIOS
    for column in ("n_questions", "n_pairs_answered"):  # short, medium and long strata, 5+ threads each
        lengths = Counter(min(6, max(3, thread[column])) for thread in threads if thread[column])
        assert lengths[3] >= 5 and lengths[4] + lengths[5] >= 5 and lengths[6] >= 5


def test_designed_answers_carry_physician_flairs_from_the_shared_list(subreddit_dump, comments):
    answer_ids = {
        row["answer_id"] for row in pq.read_table(subreddit_dump / "truth" / "qa_pairs.parquet").to_pylist()
    }
    flairs = {flair_of(record) for record in comments if record["id"] in answer_ids}
    assert flairs and flairs <= set(FLAIRS_BY_ROLE["physician"])
    known = {flair for role in FLAIRS_BY_ROLE.values() for flair in role}
    assert {flair_of(record) for record in comments} - {None} <= known


def test_some_records_are_duplicated_with_another_score(comments):
    by_id = defaultdict(list)
    for record in comments:
        by_id[record["id"]].append(record)
    twins = [copies for copies in by_id.values() if len(copies) > 1]
    assert twins and all(copies[0]["score"] != copies[1]["score"] for copies in twins)


def test_progress_reports_lines_written(tmp_path):
    seen: list[int] = []
    summary = generate_dumps(tmp_path, 200, SEED, progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == summary.total_records
    assert summary.records == {path.name: len(read_lines(path)) for path in summary.files}


@pytest.mark.parametrize("posts", [1, 7, 50, 120])
def test_tiny_runs_are_consistent_too(tmp_path, posts):
    summary = generate_dumps(tmp_path, posts, seed=posts)
    threads = pq.read_table(summary.truth_threads).to_pylist()
    assert summary.full_threads == sum(t["in_full"] for t in threads)
    assert summary.answered_threads == sum(t["in_answered"] for t in threads) <= summary.full_threads
