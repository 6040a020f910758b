"""Base36 ids that grow with time, one parity per random stream."""

from tasks.synth.ids import COMMENT_ANCHORS, SUBMISSION_ANCHORS, IdClock, base36
from tasks.synth.timeline import utc


def test_base36_matches_int_parsing():
    for number in (1, 35, 36, 1295, 1296, 46_655, 10**9):
        assert int(base36(number), 36) == number


def test_ids_increase_with_time_and_keep_their_parity():
    clock = IdClock(COMMENT_ANCHORS, parity=1)
    ids = [int(clock.next(utc(2019, 3, 5)), 36) for _ in range(3)] + [int(clock.next(utc(2020, 1)), 36)]
    assert ids == sorted(set(ids)) and all(value % 2 == 1 for value in ids)


def test_submission_ids_reach_seven_characters_in_december_2022():
    assert len(IdClock(SUBMISSION_ANCHORS, 0).next(utc(2022, 11, 1))) == 6
    assert len(IdClock(SUBMISSION_ANCHORS, 0).next(utc(2022, 12, 2))) == 7
