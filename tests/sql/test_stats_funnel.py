"""stats_funnel: rows kept and dropped at every stage, with reasons and stage totals."""

from tests.sql.rows import classified_comment, raw_comment, raw_submission, stg_comment, stg_submission


def test_every_stage_accounts_for_its_rows(duck, load_rows, run_model):
    load_rows(duck, "raw_reddit__submissions", [
        raw_submission("p1"),
        raw_submission("p1"),
        raw_submission("p2"),
        raw_submission("x", subreddit="AskReddit"),
    ])  # fmt: skip
    load_rows(
        duck, "stg_reddit__submissions", [stg_submission("p1", count_duplicates=1), stg_submission("p2")]
    )
    load_rows(duck, "int_posts__filtered", [
        {"submission_id": "p1", "is_kept": True},
        {"submission_id": "p2", "drop_reason": "no_comments", "is_kept": False},
    ])  # fmt: skip
    load_rows(
        duck,
        "raw_reddit__comments",
        [raw_comment(f"c{n}") for n in range(1, 6)] + [raw_comment("x", subreddit="x")],
    )
    load_rows(duck, "stg_reddit__comments", [stg_comment(f"c{n}") for n in range(1, 6)])
    load_rows(duck, "int_comments__classified", [
        classified_comment("c1", "answerer"),
        classified_comment("c2", "op", parent="c1"),
        classified_comment("c3", "answerer", parent="c2", answer_defect="garbled"),
        classified_comment("c4", "dropped", drop_reason="bot_author"),
        classified_comment("c5", "tombstone"),
    ])  # fmt: skip
    load_rows(duck, "int_paths__screened", [
        {"submission_id": "p1", "path_id": "c3", "branch_id": "c3", "is_kept": True},
        {"submission_id": "p1", "path_id": "c9", "branch_id": "c9", "is_kept": True},
        {"submission_id": "p1", "path_id": "c8", "discard_reason": "too_few_questions", "is_kept": False},
    ])  # fmt: skip
    load_rows(duck, "int_branches__selected", [
        {"submission_id": "p1", "branch_id": "c3", "is_selected": True},
        {"submission_id": "p1", "branch_id": "c9", "is_selected": False},
    ])  # fmt: skip
    load_rows(duck, "int_threads__assembled", [{"thread_id": "p1", "branch_id": "c3", "split": "val"}])

    funnel = [(row["stage_order"], row["stage"], row["reason"], row["count_rows"]) for row in run_model(
        duck, "stats_funnel"
    )]  # fmt: skip
    assert sorted(funnel, key=lambda row: (row[0], row[2] is not None, row[2] or "")) == [
        (2, "submissions_staged", None, 2),
        (2, "submissions_staged", "duplicate_id", 1),
        (2, "submissions_staged", "kept", 2),
        (2, "submissions_staged", "other_subreddit", 1),
        (3, "comments_staged", None, 5),
        (3, "comments_staged", "duplicate_id", 0),
        (3, "comments_staged", "kept", 5),
        (3, "comments_staged", "other_subreddit", 1),
        (4, "posts", None, 1),
        (4, "posts", "kept", 1),
        (4, "posts", "no_comments", 1),
        (5, "comments", None, 4),
        (5, "comments", "answerer", 2),
        (5, "comments", "bot_author", 1),
        (5, "comments", "op", 1),
        (5, "comments", "tombstone", 1),
        (6, "answers", None, 1),
        (6, "answers", "garbled", 1),
        (6, "answers", "kept", 1),
        (7, "paths", None, 2),
        (7, "paths", "kept", 2),
        (7, "paths", "too_few_questions", 1),
        (8, "branches", None, 1),
        (8, "branches", "not_selected", 1),
        (8, "branches", "selected", 1),
        (9, "threads_full", None, 1),
        (9, "threads_full", "kept", 1),
        (10, "threads_answered", None, 1),
        (10, "threads_answered", "kept", 1),
        (11, "answered_split", "val", 1),
    ]
