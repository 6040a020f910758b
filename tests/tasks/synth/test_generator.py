"""generate_dumps end to end: same bytes for the same seed, both layouts, progress, tiny runs."""

import pyarrow.parquet as pq
import pytest

from tasks.synth.generator import generate_dumps
from tasks.synth.timeline import WINDOW_END, WINDOW_START
from tests.tasks.synth.dump_files import MONTHLY_POSTS, POSTS, SEED, read_lines


def test_same_seed_writes_the_same_bytes(subreddit_dump, tmp_path):
    generate_dumps(tmp_path, POSTS, SEED)
    for name in ("AskDocs_submissions.zst", "AskDocs_comments.zst"):
        assert (tmp_path / name).read_bytes() == (subreddit_dump / name).read_bytes()


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


def test_layouts_write_the_same_subreddit_lines_and_truth(monthly_dump, tmp_path):
    generate_dumps(tmp_path, MONTHLY_POSTS, SEED)
    for kind, name in (("RS", "AskDocs_submissions.zst"), ("RC", "AskDocs_comments.zst")):
        ours = [line for line in read_lines(tmp_path / name) if line]
        mixed = [line for path in sorted(monthly_dump.glob(f"{kind}_*.zst")) for line in read_lines(path)]
        known = set(ours)
        assert [line for line in mixed if line in known] == ours
    for table in ("threads.parquet", "qa_pairs.parquet"):
        assert pq.read_table(tmp_path / "truth" / table).equals(pq.read_table(monthly_dump / "truth" / table))


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


def test_unknown_layout_is_refused(tmp_path):
    with pytest.raises(ValueError, match="layout must be"):
        generate_dumps(tmp_path, 10, SEED, layout="weekly")  # type: ignore[arg-type]
