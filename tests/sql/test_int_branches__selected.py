"""int_branches__selected: one branch per post, by Jaccard overlap and then every tie-break."""

import pytest

from tests.sql.rows import T0, at
from tests.sql.rows import classified_comment as comment

QUESTION = "Chest pain in my left arm, twice a day"


def turns(post: str, branch: str, answers: list[str | None]):
    """Turn rows of a branch: one question per answer slot, None for an orphan."""
    return [
        {
            "submission_id": post,
            "branch_id": branch,
            "turn": number,
            "question_id": post if number == 0 else f"{branch}_q{number}",
            "question": QUESTION if number == 0 else "And now?",
            "asked_at": at(T0),
            "answer_id": f"{branch}_a{number}" if answer else None,
            "answer": answer,
        }
        for number, answer in enumerate(answers)
    ]


def ranked(post, branch, jaccard, answered, questions, minute, rank):
    return {
        "submission_id": post,
        "branch_id": branch,
        "jaccard": jaccard,
        "count_answered": answered,
        "count_questions": questions,
        "last_comment_at": at(T0 + 60 * minute),
        "selection_rank": rank,
        "is_selected": rank == 1,
    }


@pytest.fixture
def given(duck, load_rows):
    """Load branches {(post, branch): answers}; the last comment of a branch is `minutes[branch]` old."""

    def load(branches, minutes):
        load_rows(duck, "int_turns__linearised", [
            row for (post, branch), answers in branches.items() for row in turns(post, branch, answers)
        ])  # fmt: skip
        load_rows(duck, "int_comments__classified", [
            comment(branch, "op", post=post, created_at=at(T0 + 60 * minutes[branch]))
            for post, branch in branches
        ])  # fmt: skip

    return load


def test_highest_jaccard_of_the_first_answer_wins(duck, given, run_model):
    # question tokens: chest pain in my left arm twice a day (9)
    given(
        {
            ("p1", "b1"): ["Chest pain?", "unrelated", "unrelated"],
            ("p1", "b2"): [None, "LEFT-arm chest pain: in my view, twice a day.", None],
            ("p2", "b3"): [None, None, None],
        },
        minutes={"b1": 1, "b2": 1, "b3": 1},
    )
    assert run_model(duck, "int_branches__selected") == [
        ranked("p1", "b1", 2 / 9, 3, 3, 1, 2),
        ranked("p1", "b2", 9 / 10, 1, 3, 1, 1),
        ranked("p2", "b3", 0.0, 0, 3, 1, 1),
    ]


def test_ties_go_to_more_answers_then_more_questions(duck, given, run_model):
    given(
        {
            ("p1", "b1"): ["pain", None, None],
            ("p1", "b2"): ["pain", "yes", None],
            ("p2", "b3"): ["pain", "yes", None],
            ("p2", "b4"): ["pain", "yes", None, None],
        },
        minutes={"b1": 1, "b2": 9, "b3": 1, "b4": 9},
    )
    assert run_model(duck, "int_branches__selected") == [
        ranked("p1", "b1", 1 / 9, 1, 3, 1, 2),
        ranked("p1", "b2", 1 / 9, 2, 3, 9, 1),
        ranked("p2", "b3", 1 / 9, 2, 3, 1, 2),
        ranked("p2", "b4", 1 / 9, 2, 4, 9, 1),
    ]


def test_then_the_earliest_last_comment_then_the_smallest_id_in_base_36(duck, given, run_model):
    given(
        {
            ("p1", "b1"): ["pain", "yes", None],
            ("p1", "b2"): ["pain", "yes", None],
            # 'zz' is 1295 and '100' is 1296: as strings, '100' would come first
            ("p2", "100"): ["pain", "yes", None],
            ("p2", "zz"): ["pain", "yes", None],
        },
        minutes={"b1": 5, "b2": 4, "100": 4, "zz": 4},
    )
    assert run_model(duck, "int_branches__selected") == [
        ranked("p2", "100", 1 / 9, 2, 3, 4, 2),
        ranked("p1", "b1", 1 / 9, 2, 3, 5, 2),
        ranked("p1", "b2", 1 / 9, 2, 3, 4, 1),
        ranked("p2", "zz", 1 / 9, 2, 3, 4, 1),
    ]
