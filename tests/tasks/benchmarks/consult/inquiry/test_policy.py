"""The Markov policy's ranking: ties broken by a rule that no file order changes, and its unmined rows."""

import numpy as np

from tasks.benchmarks.consult.inquiry.policy import InquiryPolicy

IDS = ("a", "b", "c", "d")
# Rows START, a, b, c, d; columns a, b, c, d, END. After a, b, c and d tie; nothing was ever asked after d.
COUNTS = np.array(
    [
        [2, 1, 0, 0, 0],
        [0, 1, 1, 1, 0],
        [0, 0, 2, 0, 0],
        [0, 0, 0, 0, 3],
        [0, 0, 0, 0, 0],
    ]
)  # asked in all: a 2, b 2, c 3, d 1


def top_k(policy: InquiryPolicy, k: int) -> dict[str | None, list[str]]:
    return {prev: policy.top_k_next(prev, k) for prev in (None, *IDS)}


def test_ties_rank_by_how_often_the_template_is_asked_then_by_id():
    policy = InquiryPolicy(IDS, COUNTS, smoothing=0.1)
    assert top_k(policy, 3) == {
        None: ["a", "b", "c"],
        "a": ["c", "b", "d"],  # tied at 1: c is asked 3 times, b 2, d once
        "b": ["c", "a", "b"],  # then a and b, both asked twice: by id
        "c": ["c", "a", "b"],
        "d": ["c", "a", "b"],  # never mined: the most asked templates
    }
    assert policy.unmined_rows == ("d",)


def test_the_ranking_does_not_depend_on_the_order_of_the_templates():
    order = [3, 1, 0, 2]  # d, b, a, c
    rows, columns = [0, *(i + 1 for i in order)], [*order, len(IDS)]
    shuffled = InquiryPolicy([IDS[i] for i in order], COUNTS[np.ix_(rows, columns)], smoothing=0.1)
    assert top_k(shuffled, 4) == top_k(InquiryPolicy(IDS, COUNTS, smoothing=0.1), 4)
