"""int_threads__assembled: one row per full thread with counts, split and its answered-dataset fate."""

from hashlib import sha256

import pytest

from tests.sql.rows import T0, at, pseudonym


def expected_split(op: str, seed: int = 0, train_share: float = 0.8, val_share: float = 0.1) -> str:
    """The split rule, computed independently: a fraction from sha256(seed:op) against the shares."""
    fraction = int(sha256(f"{seed}:{op}".encode()).hexdigest()[:13], 16) / 2**52
    return "train" if fraction < train_share else "val" if fraction < train_share + val_share else "test"


def turns(post: str, answers: list[bool]):
    """Turn rows of branch `<post>_end`: answered or orphan, turn by turn."""
    return [
        {
            "submission_id": post,
            "branch_id": f"{post}_end",
            "turn": number,
            "question_id": post if number == 0 else f"{post}_q{number}",
            "question": "question",
            "asked_at": at(T0),
            "answer_id": f"{post}_a{number}" if answered else None,
            "answer": "answer" if answered else None,
        }
        for number, answered in enumerate(answers)
    ]


@pytest.fixture
def given(duck, load_rows):
    """Load one selected branch per post {post: (op username, answers)} and a rejected rival for p1."""

    def load(threads):
        load_rows(duck, "int_posts__filtered", [
            {"submission_id": post, "author_pseudonym": pseudonym(op), "created_at": at(T0), "is_kept": True}
            for post, (op, _) in threads.items()
        ])  # fmt: skip
        branches = [
            {
                "submission_id": post,
                "branch_id": f"{post}_end",
                "jaccard": 0.5,
                "selection_rank": 1,
                "is_selected": True,
            }
            for post in threads
        ]
        rival = {
            "submission_id": "p1",
            "branch_id": "rival",
            "jaccard": 0.1,
            "selection_rank": 2,
            "is_selected": False,
        }
        load_rows(duck, "int_branches__selected", [*branches, rival])
        rival_turns = [{**row, "branch_id": "rival"} for row in turns("p1", [True, True, True, True])]
        load_rows(duck, "int_turns__linearised", [
            *rival_turns, *(row for post, (_, answers) in threads.items() for row in turns(post, answers))
        ])  # fmt: skip

    return load


def thread(post, op, questions, answered, answered_turns, drop_reason=None, **settings):
    return {
        "thread_id": post,
        "branch_id": f"{post}_end",
        "created_at": at(T0),
        "op_pseudonym": pseudonym(op),
        "count_questions": questions,
        "count_answered": answered,
        "count_orphans": questions - answered,
        "jaccard": 0.5,
        "split": expected_split(pseudonym(op), **settings),
        "count_answered_turns": answered_turns,
        "answered_drop_reason": drop_reason,
    }


def test_counts_and_the_answered_dataset_trims_trailing_orphans(duck, given, run_model):
    given({
        "p1": ("ann", [True, True, True, False, False]),
        "p2": ("ben", [True, False, True, False]),
        "p3": ("cat", [True, True, False]),
        "p4": ("dan", [False, False, False]),
        "p5": ("eve", [True, True, True, True, True, True]),
    })  # fmt: skip
    assert run_model(duck, "int_threads__assembled") == [
        thread("p1", "ann", 5, 3, 3),
        thread("p2", "ben", 4, 2, 3, "orphan_inside"),
        thread("p3", "cat", 3, 2, 2, "too_few_pairs"),
        thread("p4", "dan", 3, 0, 0, "too_few_pairs"),
        thread("p5", "eve", 6, 6, 6),
    ]


def test_min_answered_pairs_is_a_parameter(duck, given, run_model):
    given({"p3": ("cat", [True, True, False])})
    assert run_model(duck, "int_threads__assembled", min_answered_pairs=2) == [thread("p3", "cat", 3, 2, 2)]


OPS = [f"user_{n}" for n in range(40)]


def test_splits_are_drawn_per_op_from_the_seed(duck, given, run_model):
    # every OP has two threads; their splits match the rule above, so an OP never straddles splits
    given({f"{op}_{k}": (op, [True, True, True]) for op in OPS for k in (1, 2)})
    for settings in ({}, {"seed": 7}, {"train_share": 0.5, "val_share": 0.25}):
        splits = {
            row["thread_id"]: row["split"] for row in run_model(duck, "int_threads__assembled", **settings)
        }
        assert splits == {
            f"{op}_{k}": expected_split(pseudonym(op), **settings) for op in OPS for k in (1, 2)
        }
    assert {expected_split(pseudonym(op)) for op in OPS} == {"train", "val", "test"}
    assert [expected_split(pseudonym(op)) for op in OPS] != [
        expected_split(pseudonym(op), seed=7) for op in OPS
    ]
