"""int_turns__linearised: question/answer turns of each kept branch, orphans included.

The inputs are built by the upstream models from a small comment tree, so each case reads as a thread.
"""

import pytest

from tests.sql.rows import QUESTION_BODY, QUESTION_TITLE, T0, at, pseudonym, stg_comment, stg_submission
from tests.sql.rows import classified_comment as comment

QUESTION = f"{QUESTION_TITLE}\n\n{QUESTION_BODY}"
OP = pseudonym("alice")
DOCTOR = pseudonym("dr_smith")


@pytest.fixture
def given_thread(duck, load_rows, run_model):
    """Load post p1 and a comment tree [(id, parent, class, answer_defect)], then build the paths.

    Comment n is created n minutes after the post and says "text of <id>".
    """

    def load(tree):
        load_rows(duck, "stg_reddit__submissions", [stg_submission("p1")])
        load_rows(duck, "stg_reddit__comments", [
            stg_comment(cid, parent, body=f"text of {cid}", created_at=at(T0 + 60 * n))
            for n, (cid, parent, _, _) in enumerate(tree, start=1)
        ])  # fmt: skip
        load_rows(duck, "int_comments__classified", [
            comment(cid, cls, parent, created_at=at(T0 + 60 * n), answer_defect=defect)
            for n, (cid, parent, cls, defect) in enumerate(tree, start=1)
        ])  # fmt: skip
        run_model(duck, "int_paths__enumerated")
        run_model(duck, "int_paths__screened")

    return load


def turn(number: int, question_id: str, minute: int, answer_id: str | None = None, answer_minute: int = 0):
    """A turn of branch q_end of post p1; the post asks turn 0 at minute 0."""
    return {
        "submission_id": "p1",
        "branch_id": "end",
        "turn": number,
        "question_id": question_id,
        "question": QUESTION if number == 0 else f"text of {question_id}",
        "asked_at": at(T0 + 60 * minute),
        "answer_id": answer_id,
        "answer": f"text of {answer_id}" if answer_id else None,
        "answerer_pseudonym": DOCTOR if answer_id else None,
        "answerer_flair": "Physician" if answer_id else None,
        "answered_at": at(T0 + 60 * answer_minute) if answer_id else None,
    }


def test_questions_without_a_following_answer_are_orphans(duck, given_thread, run_model):
    given_thread([
        ("a1", None, "answerer", None),
        ("q1", "a1", "op", None),
        ("q2", "q1", "op", None),
        ("a2", "q2", "answerer", None),
        ("end", "a2", "op", None),
    ])  # fmt: skip
    assert run_model(duck, "int_turns__linearised") == [
        turn(0, "p1", 0, "a1", 1),
        turn(1, "q1", 2),
        turn(2, "q2", 3, "a2", 4),
        turn(3, "end", 5),
    ]


def test_a_filtered_answer_leaves_an_orphan_and_the_branch_goes_on(duck, given_thread, run_model):
    given_thread([
        ("a1", None, "answerer", "garbled"),
        ("q1", "a1", "op", None),
        ("a2", "q1", "answerer", "too_many_removed_markers"),
        ("q2", "a2", "op", None),
        ("end", "q2", "answerer", None),
    ])  # fmt: skip
    assert run_model(duck, "int_turns__linearised") == [
        turn(0, "p1", 0),
        turn(1, "q1", 2),
        turn(2, "q2", 4, "end", 5),
    ]


def test_discarded_paths_make_no_turns(duck, given_thread, run_model):
    given_thread([
        ("a1", None, "answerer", None),
        ("q1", "a1", "op", None),
        ("t1", "q1", "tombstone", None),
        ("q2", "t1", "op", None),
    ])  # fmt: skip
    assert run_model(duck, "int_turns__linearised") == []


def test_trailing_tombstones_are_not_turns(duck, given_thread, run_model):
    given_thread([
        ("a1", None, "answerer", None),
        ("q1", "a1", "op", None),
        ("a2", "q1", "answerer", None),
        ("end", "a2", "op", None),
        ("t1", "end", "tombstone", None),
    ])  # fmt: skip
    assert run_model(duck, "int_turns__linearised") == [
        turn(0, "p1", 0, "a1", 1),
        turn(1, "q1", 2, "a2", 3),
        turn(2, "end", 4),
    ]
