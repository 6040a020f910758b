"""int_paths__screened: trailing tombstones trimmed, paths with a tombstone inside, copies or too few
questions discarded."""

CLASSES = {"a": "answerer", "q": "op", "t": "tombstone"}


def path(path_id: str, *comment_ids: str, post: str = "p1"):
    """Enumerated rows of a path; a comment's class is given by the first letter of its id."""
    return [
        {
            "submission_id": post,
            "path_id": path_id,
            "position": position,
            "comment_id": comment_id,
            "comment_class": CLASSES[comment_id[0]],
        }
        for position, comment_id in enumerate(comment_ids, start=1)
    ]


def screened(path_id, branch_id, count_kept_comments, count_questions, discard_reason=None, post="p1"):
    return {
        "submission_id": post,
        "path_id": path_id,
        "branch_id": branch_id,
        "count_kept_comments": count_kept_comments,
        "count_questions": count_questions,
        "discard_reason": discard_reason,
        "is_kept": discard_reason is None,
    }


def test_trailing_tombstones_are_trimmed_inner_ones_discard_the_path(duck, load_rows, run_model):
    load_rows(duck, "int_paths__enumerated", [
        *path("t2", "a1", "q1", "a2", "q2", "t1", "t2"),
        *path("a4", "a3", "q3", "t3", "q4", "a4", post="p2"),
    ])  # fmt: skip
    assert run_model(duck, "int_paths__screened") == [
        screened("a4", "a4", 5, 3, "tombstone_inside", post="p2"),
        screened("t2", "q2", 4, 3),
    ]


def test_paths_trimmed_to_the_same_comment_are_one_branch(duck, load_rows, run_model):
    # both leaves are tombstones under q2; ids compare as base 36, so 'tzz' < 't100'
    load_rows(duck, "int_paths__enumerated", [
        *path("t100", "a1", "q1", "a2", "q2", "t100"),
        *path("tzz", "a1", "q1", "a2", "q2", "tzz"),
    ])  # fmt: skip
    assert run_model(duck, "int_paths__screened") == [
        screened("t100", "q2", 4, 3, "duplicate_after_trim"),
        screened("tzz", "q2", 4, 3),
    ]


def test_a_branch_needs_min_questions_post_included(duck, load_rows, run_model):
    load_rows(duck, "int_paths__enumerated", [
        *path("a2", "a1", "q1", "a2"),
        *path("t1", "a3", "t1", post="p2"),
    ])  # fmt: skip
    assert run_model(duck, "int_paths__screened") == [
        screened("a2", "a2", 3, 2, "too_few_questions"),
        screened("t1", "a3", 1, 1, "too_few_questions", post="p2"),
    ]
    assert run_model(duck, "int_paths__screened", min_questions=2) == [
        screened("a2", "a2", 3, 2),
        screened("t1", "a3", 1, 1, "too_few_questions", post="p2"),
    ]
