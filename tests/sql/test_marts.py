"""The published marts: full_/answered_ threads and qa_pairs, exactly as contracts THREADS and QA_PAIRS."""

import pytest

from tests.sql.rows import T0, at, pseudonym

OP = pseudonym("alice")
DOCTOR = pseudonym("dr_smith")


def assembled(
    post: str, answers: list[bool], answered_turns: int, drop_reason: str | None, split: str = "train"
):
    return {
        "thread_id": post,
        "branch_id": f"{post}_end",
        "created_at": at(T0),
        "op_pseudonym": OP,
        "count_questions": len(answers),
        "count_answered": sum(answers),
        "count_orphans": len(answers) - sum(answers),
        "jaccard": 0.25,
        "split": split,
        "count_answered_turns": answered_turns,
        "answered_drop_reason": drop_reason,
    }


def linearised(post: str, answers: list[bool]):
    return [
        {
            "submission_id": post,
            "branch_id": f"{post}_end",
            "turn": number,
            "question_id": post if number == 0 else f"{post}_q{number}",
            "question": f"question {number}",
            "asked_at": at(T0 + 120 * number),
            "answer_id": f"{post}_a{number}" if answered else None,
            "answer": f"answer {number}" if answered else None,
            "answerer_pseudonym": DOCTOR if answered else None,
            "answerer_flair": "Physician" if answered else None,
            "answered_at": at(T0 + 120 * number + 60) if answered else None,
        }
        for number, answered in enumerate(answers)
    ]


def qa_pair(post: str, number: int, answered: bool):
    return {
        "thread_id": post,
        "turn": number,
        "question_id": post if number == 0 else f"{post}_q{number}",
        "question": f"question {number}",
        "answer_id": f"{post}_a{number}" if answered else None,
        "answer": f"answer {number}" if answered else None,
        "physician": DOCTOR if answered else None,
        "physician_flair": "Physician" if answered else None,
        "asked_utc": at(T0 + 120 * number),
        "answered_utc": at(T0 + 120 * number + 60) if answered else None,
    }


def published_thread(post, questions, answered, stratum, split="train"):
    return {
        "thread_id": post,
        "created_utc": at(T0),
        "op": OP,
        "n_questions": questions,
        "n_answered": answered,
        "n_orphans": questions - answered,
        "stratum": stratum,
        "split": split,
        "jaccard": 0.25,
    }


THREADS = {
    # post: (answers, answered turns, answered drop reason)
    "t3": ([True, True, True], 3, None),
    "t4": ([True, True, True, False], 3, None),
    "t5": ([True, False, True, True, True], 5, "orphan_inside"),
    "t6": ([True] * 6, 6, None),
    "t7": ([True, True, True, True, True, False, False], 5, None),
}


@pytest.fixture
def given(duck, load_rows):
    load_rows(duck, "int_threads__assembled", [
        assembled(post, answers, turns, reason, split="val" if post == "t6" else "train")
        for post, (answers, turns, reason) in THREADS.items()
    ])  # fmt: skip
    load_rows(duck, "int_turns__linearised", [
        row for post, (answers, _, _) in THREADS.items() for row in linearised(post, answers)
    ])  # fmt: skip


@pytest.mark.usefixtures("given")
def test_full_threads_strata_count_every_question(duck, run_model):
    assert run_model(duck, "full_threads") == [
        published_thread("t3", 3, 3, "short"),
        published_thread("t4", 4, 3, "medium"),
        published_thread("t5", 5, 4, "medium"),
        published_thread("t6", 6, 6, "long", split="val"),
        published_thread("t7", 7, 5, "long"),
    ]


@pytest.mark.usefixtures("given")
def test_full_qa_pairs_keep_orphans(duck, run_model):
    assert run_model(duck, "full_qa_pairs") == [
        qa_pair(post, number, answered)
        for post, (answers, _, _) in THREADS.items()
        for number, answered in enumerate(answers)
    ]


@pytest.mark.usefixtures("given")
def test_answered_threads_are_trimmed_and_restratified(duck, run_model):
    assert run_model(duck, "answered_threads") == [
        published_thread("t3", 3, 3, "short"),
        published_thread("t4", 3, 3, "short"),
        published_thread("t6", 6, 6, "long", split="val"),
        published_thread("t7", 5, 5, "medium"),
    ]


@pytest.mark.usefixtures("given")
def test_answered_qa_pairs_stop_at_the_last_answer(duck, run_model):
    assert run_model(duck, "answered_qa_pairs") == [
        *(qa_pair("t3", number, True) for number in range(3)),
        *(qa_pair("t4", number, True) for number in range(3)),
        *(qa_pair("t6", number, True) for number in range(6)),
        *(qa_pair("t7", number, True) for number in range(5)),
    ]


def test_strata_come_from_the_seed(duck, load_rows, run_model):
    load_rows(duck, "length_strata", [
        {"stratum": "few", "min_pairs": 0, "max_pairs": 4},
        {"stratum": "many", "min_pairs": 5, "max_pairs": None},
    ])  # fmt: skip
    load_rows(
        duck,
        "int_threads__assembled",
        [assembled("t4", [True] * 4, 4, None), assembled("t5", [True] * 5, 5, None)],
    )
    assert run_model(duck, "full_threads") == [
        published_thread("t4", 4, 4, "few"),
        published_thread("t5", 5, 5, "many"),
    ]
