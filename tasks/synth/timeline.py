"""The months the dumps cover, the default window, and when the subreddit's posts are created."""

import calendar
import random
from bisect import bisect_left, bisect_right


def utc(year: int, month: int, day: int = 1) -> int:
    return calendar.timegm((year, month, day, 0, 0, 0))


WINDOW_START, WINDOW_END = utc(2015, 1, 1), utc(2023, 7, 1)
FIRST_YEAR, MONTHS = 2014, 121  # 2014-01 ... 2024-01: replies to December 2023 posts spill over
MONTH_STARTS = [utc(FIRST_YEAR + i // 12, i % 12 + 1) for i in range(MONTHS + 1)]
_WINDOW_MONTHS = range(12, 114)  # 2015-01 ... 2023-06
_OUTSIDE_MONTHS = (*range(12), *range(114, 120))
_YEAR_WEIGHTS = {2015: 3, 2016: 5, 2017: 8, 2018: 12, 2019: 17, 2020: 20, 2021: 16, 2022: 13, 2023: 12}
_OUTSIDE_SHARE = 0.03


def month_of(created: int) -> int:
    return bisect_right(MONTH_STARTS, created) - 1


def month_label(month: int) -> str:
    return f"{FIRST_YEAR + month // 12}-{month % 12 + 1:02d}"


def post_times(rng: random.Random, posts: int) -> list[int]:
    """Sorted creation times: `posts` inside the window, growing like AskDocs, ~3% outside (at least one
    a month). The window's first post is created at its first second and its last post 30 s before
    its end, so every reply lands after it; the posts just outside sit one second before and exactly
    at the window's bounds."""
    inside = _apportion(posts, [_YEAR_WEIGHTS[FIRST_YEAR + month // 12] for month in _WINDOW_MONTHS])
    extra = max(0, round(posts * _OUTSIDE_SHARE) - len(_OUTSIDE_MONTHS))
    outside = _apportion(extra, [1 if month < 12 else 4 for month in _OUTSIDE_MONTHS])
    counts = dict(zip(_WINDOW_MONTHS, inside, strict=True))
    counts |= {month: n + 1 for month, n in zip(_OUTSIDE_MONTHS, outside, strict=True)}
    times = []
    for month in sorted(counts):
        start, end = MONTH_STARTS[month], MONTH_STARTS[month + 1]
        times += sorted(rng.randrange(start, end) for _ in range(counts[month]))
    lo, hi = bisect_left(times, WINDOW_START), bisect_left(times, WINDOW_END)
    times[lo - 1], times[hi] = WINDOW_START - 1, WINDOW_END
    if lo < hi:
        times[lo], times[hi - 1] = WINDOW_START, WINDOW_END - 30
    return times


def _apportion(total: int, weights: list[int]) -> list[int]:
    """Split `total` in proportion to `weights` by largest remainders (the parts sum to `total`)."""
    shares = [total * weight / sum(weights) for weight in weights]
    counts = [int(share) for share in shares]
    by_remainder = sorted(range(len(weights)), key=lambda i: counts[i] - shares[i])
    for i in by_remainder[: total - sum(counts)]:
        counts[i] += 1
    return counts
