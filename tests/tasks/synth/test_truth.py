"""Truth tables: built from the designed turns, and consistent with the dumps they describe."""

from collections import defaultdict

import pyarrow.parquet as pq

from tasks.synth.forge import Comment, Post
from tasks.synth.truth import TRUTH_QA_PAIRS_SCHEMA, TRUTH_THREADS_SCHEMA, Truth, truth_tables


def test_answered_dataset_trims_trailing_orphans():
    post = Post("p1", 0, "op", "A title", "A body", "AskDocs")
    a0, q1, a1, q2, a2, q3 = (Comment(post, None, "x", None, "b", 0, seq, id=f"c{seq}") for seq in range(6))
    truths = [
        Truth(post, "thread", [(post, a0), (q1, a1), (q2, a2), (q3, None)]),
        Truth(Post("p2", 0, "op", "Another", "Body", "AskDocs"), "near_miss:impostor", None),
    ]
    threads, pairs = truth_tables(truths)
    assert threads.to_pylist() == [
        {"thread_id": "p1", "scenario": "thread", "in_full": True, "in_answered": True, "n_questions": 4,
         "n_answered": 3, "n_orphans": 1, "n_pairs_answered": 3},
        {"thread_id": "p2", "scenario": "near_miss:impostor", "in_full": False, "in_answered": False,
         "n_questions": None, "n_answered": None, "n_orphans": None, "n_pairs_answered": None},
    ]  # fmt: skip
    rows = [(row["dataset"], row["turn"], row["question_id"], row["answer_id"]) for row in pairs.to_pylist()]
    assert rows == [
        ("full", 0, "p1", "c0"), ("full", 1, "c1", "c2"), ("full", 2, "c3", "c4"), ("full", 3, "c5", None),
        ("answered", 0, "p1", "c0"), ("answered", 1, "c1", "c2"), ("answered", 2, "c3", "c4"),
    ]  # fmt: skip


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
