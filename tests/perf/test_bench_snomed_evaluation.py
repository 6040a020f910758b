"""The SNOMED evaluation benchmark's split of idle slot time into the run's tail and hand-offs."""

import pytest

from tests.perf.bench_snomed_evaluation import idle_slot_time


def test_idle_slots_are_the_tail_when_fewer_interviews_than_slots_remain_else_hand_offs():
    # Two slots. Interviews a and b each hold a slot for 1 s; b is over, a waits 0.5 s, then calls again.
    calls = [(0.0, 1.0, "a"), (0.0, 1.0, "b"), (1.5, 2.5, "a")]
    # From 1 s on, one interview for two slots: one slot is the tail's, the other idles at a's hand-off.
    assert idle_slot_time(calls, concurrency=2) == {
        "span_s": 2.5,
        "tail_s": pytest.approx(1.5),
        "hand_offs_s": pytest.approx(0.5),
    }
