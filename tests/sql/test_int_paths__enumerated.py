"""int_paths__enumerated: root-to-leaf paths of the eligible tree, starting at a top-level answer."""

from tests.sql.rows import classified_comment as comment


def path(path_id: str, *comments: tuple[str, str], post: str = "p1"):
    """The rows of one path: (comment_id, comment_class) pairs from the top-level answer down."""
    return [
        {
            "submission_id": post,
            "path_id": path_id,
            "position": position,
            "comment_id": cid,
            "comment_class": cls,
        }
        for position, (cid, cls) in enumerate(comments, start=1)
    ]


def test_a_lay_comment_cuts_itself_and_its_subtree(duck, load_rows, run_model):
    load_rows(duck, "int_comments__classified", [
        comment("a1", "answerer"),
        comment("q1", "op", parent="a1"),
        comment("a2", "answerer", parent="q1"),
        comment("q2", "op", parent="a2"),
        comment("l1", "non_answerer", parent="a2"),
        comment("q3", "op", parent="l1"),
        comment("a3", "answerer", parent="q3"),
    ])  # fmt: skip
    assert run_model(duck, "int_paths__enumerated") == path(
        "q2", ("a1", "answerer"), ("q1", "op"), ("a2", "answerer"), ("q2", "op")
    )


def test_a_physician_replying_to_a_physician_ends_the_path(duck, load_rows, run_model):
    load_rows(duck, "int_comments__classified", [
        # p1: the reply of a physician to the first answer is not followed, the OP's is
        comment("a1", "answerer"),
        comment("a2", "answerer", parent="a1"),
        comment("q2", "op", parent="a2"),
        comment("q1", "op", parent="a1"),
        # p2: the first answer has nothing else below it, so it is a leaf
        comment("b1", "answerer", post="p2"),
        comment("b2", "answerer", parent="b1", post="p2"),
    ])  # fmt: skip
    assert run_model(duck, "int_paths__enumerated") == [
        *path("b1", ("b1", "answerer"), post="p2"),
        *path("q1", ("a1", "answerer"), ("q1", "op")),
    ]


def test_tombstones_stay_on_the_path(duck, load_rows, run_model):
    load_rows(duck, "int_comments__classified", [
        comment("a1", "answerer"),
        comment("t1", "tombstone", parent="a1"),
        comment("q1", "op", parent="t1"),
        comment("t2", "tombstone", parent="q1"),
    ])  # fmt: skip
    assert run_model(duck, "int_paths__enumerated") == path(
        "t2", ("a1", "answerer"), ("t1", "tombstone"), ("q1", "op"), ("t2", "tombstone")
    )


def test_every_leaf_ends_one_path(duck, load_rows, run_model):
    load_rows(duck, "int_comments__classified", [
        comment("a1", "answerer"),
        comment("q1", "op", parent="a1"),
        comment("a2", "answerer", parent="q1"),
        comment("a3", "answerer", parent="q1"),
        comment("q2", "op", parent="a3"),
    ])  # fmt: skip
    assert run_model(duck, "int_paths__enumerated") == [
        *path("a2", ("a1", "answerer"), ("q1", "op"), ("a2", "answerer")),
        *path("q2", ("a1", "answerer"), ("q1", "op"), ("a3", "answerer"), ("q2", "op")),
    ]


def test_only_top_level_answers_start_paths_and_unreachable_comments_are_ignored(duck, load_rows, run_model):
    load_rows(duck, "int_comments__classified", [
        comment("q0", "op"),
        comment("a0", "answerer", parent="q0"),
        comment("t0", "tombstone"),
        comment("l0", "non_answerer"),
        comment("d0", "dropped", drop_reason="bot_author"),
        comment("a1", "answerer", parent="d0"),
        # the parent of q9 was never collected: it is a mid-thread orphan, out of reach
        comment("a2", "answerer"),
        comment("q9", "op", parent="missing"),
        # a parent id that belongs to another post does not link
        comment("q8", "op", parent="a2", post="p2"),
    ])  # fmt: skip
    assert run_model(duck, "int_paths__enumerated") == path("a2", ("a2", "answerer"))
