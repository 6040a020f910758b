"""Which posts carry designed comment trees, and the outcome each must have: a thread of a given shape,
a near miss or a decoy."""

import itertools
import random
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Generic, TypeVar

from tasks.synth.timeline import WINDOW_END, WINDOW_START, utc

FULL_SCALE_POSTS = 450_000
"""Window posts at full scale: with 3 comments each on average, 1.8M window records as in the paper."""

# Threads per window post and the answered share are the paper's (9,741 and 2,437 threads from ~1.8M
# records). Everything else about a thread's shape is fitted in draw_labels.

_THREADS_PER_POST = 9_741 / FULL_SCALE_POSTS
_ANSWERED_SHARE = 2_437 / 9_741
_NEAR_MISSES_PER_THREAD = 2
_DECOYS_PER_POST = 0.0004  # of each kind


# Designed threads: what hangs below the branch's last comment (weights, depending on whether its last
# question is answered), the tie-break a competing path loses on, and side structures (shares of threads).
_TAILS_AFTER_ANSWER = {"none": 50, "tombstone": 12, "physician_reply": 8, "short_thanks": 15,
                       "lay_reply": 10, "impostor": 5}  # fmt: skip
_TAILS_AFTER_ORPHAN = {"none": 50, "tombstone": 12, "filtered": 8, "short_physician": 8,
                       "non_physician": 7, "lay_reply": 10, "impostor": 5}  # fmt: skip
TIES = {"tie_answered": 0.04, "tie_questions": 0.03, "tie_time": 0.03, "tie_id": 0.01, "tie_jaccard": 0.04}
_EXTRAS = {"distractor": 0.2, "distractor_longer": 0.05, "discarded": 0.06, "automod": 0.35,
           "lay_top": 0.45, "op_flair": 0.03, "repeat_op": 0.05, "single_marker": 0.05,
           "second_physician": 0.15, "side_tombstone": 0.1, "side_lay": 0.2}  # fmt: skip
# Designed posts without a thread: near misses (weights) and decoys (each kind _DECOYS_PER_POST).
_NEAR_MISSES = {"two_questions": 55, "short_follow_up": 8, "impostor": 5, "non_physician_mid": 8,
                "non_physician_top": 6, "mid_tombstone": 8, "physician_reply": 4, "short_answer": 4,
                "moderator_notice": 2}  # fmt: skip
_DECOYS = {"deleted_author": 0, "removed_selftext": 0, "short_post": 0, "image_only": 0,
           "video": utc(2017, 6), "removed_by_category": utc(2019, 9),
           "gallery": utc(2020, 6)}  # fmt: skip
"""Posts that a post-level rule drops, over a tree that would qualify (value: when the kind appears)."""

_T = TypeVar("_T")


class Weighted(Generic[_T]):
    """A categorical distribution, drawn with one random number."""

    def __init__(self, weights: dict[_T, float]) -> None:
        self.items = tuple(weights)
        self.cumulative = tuple(itertools.accumulate(weights.values()))

    def draw(self, rng: random.Random) -> _T:
        return self.items[bisect_right(self.cumulative, rng.random() * self.cumulative[-1])]


# A shape has one letter per question of the branch: A (answered) or O (orphan); turn 0 is always A.
# Answered-eligible shapes (A^m O^j, m >= 3) take _ANSWERED_SHARE of the threads, m distributed as the
# answered dataset's pairs. The others have 3 questions 61.5% of the time, 4 20%, else a long tail up
# to 33, answers at 45% in the middle and an orphan at the end 86% of the time. These numbers were
# fitted by simulation to Table 1: 61% of threads with 3 questions, 18% with 5 or more, 58% of
# questions answered, 74% of threads ending on an orphan; answered threads 75% / 25% / 8%.

_PAIRS = Weighted({3: 745, 4: 179, 5: 52, 6: 14, 7: 5, 8: 3, 9: 1, 10: 1})


@dataclass(frozen=True)
class Plan:
    scenario: str  # "thread", "near_miss:<kind>" or "decoy:<kind>"
    labels: str = ""  # A / O per question of the designed branch
    tail: str = "none"  # what hangs below the branch's last comment
    extras: frozenset[str] = frozenset()


def _answered_eligible(labels: str) -> bool:
    answered = labels.rstrip("O")
    return len(answered) >= 3 and "O" not in answered


def _question_count(rng: random.Random) -> int:
    draw = rng.random()
    if draw < 0.615:
        return 3
    if draw < 0.815:
        return 4
    count, stay = (5, 0.5) if rng.random() < 0.9 else (7, 0.88)
    while rng.random() < stay and count < 33:
        count += 1
    return count


def draw_labels(rng: random.Random, eligible: bool, pairs: int | None = None) -> str:
    if eligible:
        trailing = 0 if rng.random() < 0.7 else 1 if rng.random() < 0.8 else 2
        return "A" * (pairs or _PAIRS.draw(rng)) + "O" * trailing
    while True:
        middle = "".join("A" if rng.random() < 0.45 else "O" for _ in range(_question_count(rng) - 2))
        labels = "A" + middle + ("O" if rng.random() < 0.86 else "A")
        if not _answered_eligible(labels):
            return labels


def _fits(feature: str, labels: str, tail: str) -> bool:
    """Whether `feature` can be built on a branch of this shape and tail without changing its outcome."""
    if feature in _TAILS_AFTER_ANSWER or feature in _TAILS_AFTER_ORPHAN:
        return feature == tail
    if feature == "tie_answered":
        return "A" in labels[1:] and len(labels) <= 6
    if feature in ("tie_questions", "tie_time", "tie_id") and labels[-1] != "O":
        return False
    if feature in ("tie_time", "tie_id"):
        return tail != "filtered"  # the path's last comment must be the last question itself
    if feature in ("single_marker", "second_physician"):
        return "A" in labels[1:]
    return True


def _thread_plan(rng: random.Random, require: str | None = None, pairs: int | None = None) -> Plan:
    """A designed thread with random tail and features; `require` forces one tail or feature (the
    shape is redrawn until it fits), `pairs` an answered-eligible length."""
    while True:
        labels = draw_labels(rng, pairs is not None or rng.random() < _ANSWERED_SHARE, pairs)
        tails = _TAILS_AFTER_ANSWER if labels[-1] == "A" else _TAILS_AFTER_ORPHAN
        tail = require if require in tails else Weighted(tails).draw(rng)
        tie = require if require in TIES else next((t for t, p in TIES.items() if rng.random() < p), None)
        wanted = {name for name, share in _EXTRAS.items() if rng.random() < share or name == require}
        extras = frozenset(name for name in (*wanted, tie) if name and _fits(name, labels, tail))
        if require in (None, tail) or require in extras:
            return Plan("thread", labels, tail, extras)


def _thread_plans(rng: random.Random, count: int, minimum: int, long_minimum: int) -> list[Plan]:
    """`count` thread plans (more if needed) in which every tail and feature occurs `minimum` times and
    answered threads of 6+ and of 4-5 pairs `long_minimum` times each, so small runs cover every case."""
    plans = [_thread_plan(rng, pairs=rng.randint(6, 10)) for _ in range(long_minimum)]
    plans += [_thread_plan(rng, pairs=rng.choice((4, 5))) for _ in range(long_minimum)]
    features = sorted({*_TAILS_AFTER_ANSWER, *_TAILS_AFTER_ORPHAN, *TIES, *_EXTRAS} - {"none"})
    plans += [_thread_plan(rng, require=name) for name in features for _ in range(minimum)]
    plans += [_thread_plan(rng) for _ in range(count - len(plans))]
    rng.shuffle(plans)
    return plans


class _Placer:
    """Assigns plans to distinct posts, drawn at random within an index range."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.plans: dict[int, Plan] = {}

    def pin(self, index: int, plan: Plan) -> None:
        self.plans[index] = plan

    def place(self, plan: Plan, first: int, last: int) -> None:
        for _ in range(100 if last > first else 0):
            index = self.rng.randrange(first, last)
            if index not in self.plans:
                self.plans[index] = plan
                return


def plan_posts(rng: random.Random, times: list[int], posts: int) -> dict[int, Plan]:
    """Which posts carry designed trees (post index -> plan). The window's first and last posts carry
    threads and the posts just outside it decoys (see post_times)."""
    minimum, long_minimum = min(2, posts // 500), min(5, posts // 200)
    lo, hi = bisect_left(times, WINDOW_START), bisect_left(times, WINDOW_END)
    placer = _Placer(rng)
    threads = _thread_plans(rng, round(posts * _THREADS_PER_POST), minimum, long_minimum)
    for index in (lo, hi - 1) if lo < hi else ():
        if threads:  # a tiny run may have a single thread plan for the two edges
            placer.pin(index, threads.pop())
    for index in (lo - 1, hi):
        placer.pin(index, Plan("decoy:out_of_window", draw_labels(rng, True)))
    for plan in threads:
        placer.place(plan, lo, hi)
    near_misses = Weighted(_NEAR_MISSES)
    kinds = [*_NEAR_MISSES] * minimum + [
        near_misses.draw(rng) for _ in range(len(threads) * _NEAR_MISSES_PER_THREAD)
    ]
    for kind in kinds:
        placer.place(Plan(f"near_miss:{kind}"), lo, hi)
    decoys = max(minimum, round(posts * _DECOYS_PER_POST))
    for kind, since in _DECOYS.items():
        for _ in range(decoys):
            placer.place(
                Plan(f"decoy:{kind}", draw_labels(rng, rng.random() < 0.5)), bisect_left(times, since), hi
            )
    for _ in range(decoys):
        outside = rng.randrange(len(times) - (hi - lo))
        index = outside if outside < lo else outside + hi - lo
        placer.place(Plan("decoy:out_of_window", draw_labels(rng, True)), index, index + 1)
    return placer.plans
