"""Base36 ids and fullnames that grow with time like Reddit's."""

from bisect import bisect_right

from tasks.synth.timeline import utc

_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
_DIGIT_PAIRS = [a + b for a in _DIGITS for b in _DIGITS]


def base36(number: int) -> str:
    """Two digits per division: ids and fullnames are formatted millions of times."""
    digits = ""
    while number >= 36:
        number, pair = divmod(number, 1296)
        digits = _DIGIT_PAIRS[pair] + digits
    return _DIGITS[number] + digits if number else digits


class IdClock:
    """Base36 ids that grow with time like Reddit's, strictly increasing, of one parity: the subreddit
    takes even ids and the other subreddits odd ones, so the two streams never share an id."""

    def __init__(self, anchors: tuple[tuple[int, int], ...], parity: int) -> None:
        self._times = [t for t, _ in anchors]
        self._values = [v for _, v in anchors]
        self._parity = parity
        self._last = 0

    def next(self, created: int) -> str:
        i = min(max(bisect_right(self._times, created), 1), len(self._times) - 1)
        t0, t1, v0, v1 = self._times[i - 1], self._times[i], self._values[i - 1], self._values[i]
        self._last = max(self._last + 1, (v0 + (v1 - v0) * (created - t0) // (t1 - t0)) // 2)
        return base36(2 * self._last + self._parity)


def _anchors(*points: tuple[tuple[int, int], str]) -> tuple[tuple[int, int], ...]:
    return tuple((utc(*month), int(value, 36)) for month, value in points)


# Read off real ids (MedRedQA's range: posts 557sfm in October 2016 to r2w897 in December 2021, comments
# dbupbgg to hm76yig). Submission ids have 6 characters until November 2022 and 7 from December 2022.
SUBMISSION_ANCHORS = _anchors(
    ((2014, 1), "1u0000"), ((2015, 1), "2r0000"), ((2016, 10), "557sfm"), ((2018, 1), "7nb000"),
    ((2019, 1), "ac0000"), ((2020, 1), "eiq000"), ((2021, 1), "kn0000"), ((2021, 12), "r2w897"),
    ((2022, 12), "1000000"), ((2024, 2), "1ak0000"),
)  # fmt: skip
COMMENT_ANCHORS = _anchors(
    ((2014, 1), "cee0000"), ((2016, 12), "dbupbgg"), ((2019, 1), "ee00000"), ((2021, 11), "hm76yig"),
    ((2024, 2), "kjz0000"),
)  # fmt: skip
