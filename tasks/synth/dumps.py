"""Synthetic r/AskDocs Pushshift dumps whose dataset is known by construction.

`generate_dumps` writes zstd NDJSON dumps shaped like the real ones (shared/spec/pushshift-format.md):
fields and types drift by era, flair comes in every shape AskDocs used, bots, deleted, removed and image
posts abound, and a few lines are malformed or duplicated. A few percent of posts carry *designed*
comment trees: applying shared/spec/dataset.md to them selects a branch known in advance (or none),
and every trap (ties, tombstones, impostors, filtered answers, post-level drops...) occurs at any scale
from 1,000 posts. `truth/` lists the rows the build must produce. All other posts are noise that can
never yield a thread: no top-level subtree of theirs holds more than one OP comment, so no branch
reaches three questions.

Two random streams keep the subreddit's lines identical in both layouts: one draws everything about
the subreddit, the other only the other subreddits' records that share the monthly files.
"""

import calendar
import functools
import html
import itertools
import json
import random
import re
import time
import zlib
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import zstandard
from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.synth import text


def _utc(year: int, month: int, day: int = 1) -> int:
    return calendar.timegm((year, month, day, 0, 0, 0))


FULL_SCALE_POSTS = 450_000
"""Window posts at full scale: with 3 comments each on average, 1.8M window records as in the paper."""

WINDOW_START, WINDOW_END = _utc(2015, 1, 1), _utc(2023, 7, 1)

FLAIRS_BY_ROLE: dict[str, tuple[str, ...]] = {
    "physician": (
        "Physician", "Physician ", "physician", "Physician | Moderator", "Physician | Top Contributor",
        "Physician | Moderator | Top Contributor", "Physician - Cardiology", "Physician - Cardiology ",
        "Physician - Emergency Medicine", "Physician - Internal Medicine", "Physician/Moderator",
        "Physician - ENT/Head &amp; Neck Surgery", "Physician | FM &amp; PHPM", "Verified Physician",
        "M.D.", "Doctor", "Dermatologist | Top Contributor", "Surgeon | Moderator", "Psychiatrist",
        "Radiologist", "Pediatrician",
    ),
    "physician_assistant": ("Physician Assistant", "Physician Associate (PA)", "Physicians Assistant"),
    "registered_nurse": ("Registered Nurse", " Registered Nurse", "Registered nurse", "RN"),
    "nurse_practitioner": ("Nurse Practitioner",),
    "pharmacist": ("Pharmacist", "PharmD"),
    "medical_student": ("Medical Student", "Medical student", "Med student"),
    "unverified": ("This user has not yet been verified.",),
    "layperson": (
        "Layperson/not verified as healthcare professional.",
        "Layperson/not verified as healthcare professional",
    ),
    "other": ("Test Flair - Physician", "Founder", "Web Developer"),
}  # fmt: skip
"""Every flair string the generator writes, raw as in the dumps (spaces and entities included), under
the role the seed table must give it. Designed outcomes depend only on physician versus the rest."""

BOT_AUTHORS = ("AutoModerator", "RemindMeBot", "AmputatorBot", "WikiSummarizerBot")
"""Bot accounts that comment; AutoModerator also posts."""

OTHER_SUBREDDITS = ("AskReddit", "medicine", "Health", "DiagnoseMe", "askdocs_clone", "AskDocs2")
"""Subreddits sharing the monthly files; the last two contain 'askdocs' but must not match it."""

TRUTH_THREADS_SCHEMA = pa.schema([
    pa.field("thread_id", pa.string(), nullable=False),
    pa.field("scenario", pa.string(), nullable=False),
    pa.field("in_full", pa.bool_(), nullable=False),
    pa.field("in_answered", pa.bool_(), nullable=False),
    pa.field("n_questions", pa.int64()),
    pa.field("n_answered", pa.int64()),
    pa.field("n_orphans", pa.int64()),
    pa.field("n_pairs_answered", pa.int64()),
])  # fmt: skip
"""truth/threads.parquet: one row per designed post ('thread', 'near_miss:<kind>', 'decoy:<kind>');
counts are those of the full dataset, null where the post yields no thread."""

TRUTH_QA_PAIRS_SCHEMA = pa.schema([
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("thread_id", pa.string(), nullable=False),
    pa.field("turn", pa.int64(), nullable=False),
    pa.field("question_id", pa.string(), nullable=False),
    pa.field("answer_id", pa.string()),
])  # fmt: skip
"""truth/qa_pairs.parquet: exactly the rows of dataset/{full,answered}/qa_pairs.parquet, ids only."""


@dataclass(frozen=True)
class SynthSummary:
    """What `generate_dumps` wrote: dump files with their line counts, the truth, the expectations."""

    files: tuple[Path, ...]
    records: dict[str, int]  # lines per dump file name, malformed and duplicate lines included
    truth_threads: Path
    truth_qa_pairs: Path
    full_threads: int
    answered_threads: int
    seconds: float

    @property
    def total_records(self) -> int:
        return sum(self.records.values())


# --- volumes and rates ----------------------------------------------------------------------------------
# Threads per window post and the answered share are the paper's (9,741 and 2,437 threads from ~1.8M
# records). Everything else about a thread's shape is fitted in _draw_labels.

_THREADS_PER_POST = 9_741 / FULL_SCALE_POSTS
_ANSWERED_SHARE = 2_437 / 9_741
_NEAR_MISSES_PER_THREAD = 2
_DECOYS_PER_POST = 0.0004  # of each kind
_OUTSIDE_SHARE = 0.03
_COMMENTS_PER_NOISE_POST = 3.1  # mean of those with comments; 30% have none
_MALFORMED_RATE = 1 / 20_000
_DUPLICATE_RATE = 1 / 2_000
_DESIGNED_DUPLICATE_RATE = 1 / 100  # so that small runs duplicate some lines that decide outcomes
_ASCII_ESCAPED_SHARE = 0.03
_JACCARD_MARGIN = 0.02
_MAX_DELAY = 8 * 3600  # a designed branch spans < 28 days, so a reply lands at most one month later
_LINES_PER_PROGRESS = 10_000

_YEAR_WEIGHTS = {2015: 3, 2016: 5, 2017: 8, 2018: 12, 2019: 17, 2020: 20, 2021: 16, 2022: 13, 2023: 12}
_FIRST_YEAR, _MONTHS = 2014, 121  # 2014-01 ... 2024-01: replies to December 2023 posts spill over
_MONTH_STARTS = [_utc(_FIRST_YEAR + i // 12, i % 12 + 1) for i in range(_MONTHS + 1)]
_WINDOW_MONTHS = range(12, 114)  # 2015-01 ... 2023-06
_OUTSIDE_MONTHS = (*range(12), *range(114, 120))

# Designed threads: what hangs below the branch's last comment (weights, depending on whether its last
# question is answered), the tie-break a competing path loses on, and side structures (shares of threads).
_TAILS_AFTER_ANSWER = {"none": 50, "tombstone": 12, "physician_reply": 8, "short_thanks": 15,
                       "lay_reply": 10, "impostor": 5}  # fmt: skip
_TAILS_AFTER_ORPHAN = {"none": 50, "tombstone": 12, "filtered": 8, "short_physician": 8,
                       "non_physician": 7, "lay_reply": 10, "impostor": 5}  # fmt: skip
_TIES = {"tie_answered": 0.04, "tie_questions": 0.03, "tie_time": 0.03, "tie_id": 0.01, "tie_jaccard": 0.04}
_EXTRAS = {"distractor": 0.2, "distractor_longer": 0.05, "discarded": 0.06, "automod": 0.35,
           "lay_top": 0.45, "op_flair": 0.03, "repeat_op": 0.05, "single_marker": 0.05,
           "second_physician": 0.15, "side_tombstone": 0.1, "side_lay": 0.2}  # fmt: skip
# Designed posts without a thread: near misses (weights) and decoys (each kind _DECOYS_PER_POST).
_NEAR_MISSES = {"two_questions": 55, "short_follow_up": 8, "impostor": 5, "non_physician_mid": 8,
                "non_physician_top": 6, "mid_tombstone": 8, "physician_reply": 4, "short_answer": 4,
                "moderator_notice": 2}  # fmt: skip
_DECOYS = {"deleted_author": 0, "removed_selftext": 0, "short_post": 0, "image_only": 0,
           "video": _utc(2017, 6), "removed_by_category": _utc(2019, 9),
           "gallery": _utc(2020, 6)}  # fmt: skip
"""Posts that a post-level rule drops, over a tree that would qualify (value: when the kind appears)."""

# Noise: kinds of posts and authors of comments (weights).
_NOISE_POSTS = {"self": 840, "image": 45, "gallery": 10, "video": 10, "link": 10, "deleted": 30,
                "removed": 45, "escaped_removed": 3, "short": 12, "automod": 1}  # fmt: skip
_NOISE_ROLES = {"lay": 50, "physician": 14, "professional": 7, "op": 17, "deleted": 8, "bot": 2,
                "moderator_notice": 1}  # fmt: skip
_REMOVAL_CATEGORIES = ("moderator", "deleted", "reddit", "automod_filtered", "author", "anti_evil_ops")
_SCORES = (*[1] * 30, *[2] * 15, *[3] * 10, 4, 4, 5, 5, 6, 7, 8, 10, 12, 15, 21, 34, 55, 0, 0, -1, -2, -5)
_IMAGE_HOSTS = ("i.redd.it", "i.imgur.com", "imgur.com")
_LINK_HOSTS = ("nytimes.com", "cdc.gov", "bbc.co.uk", "statnews.com")
_EMOJI_PIECE = {
    "a": ":stethoscope:",
    "e": "emoji",
    "u": "https://emoji.redditmedia.com/46kel8lf1guz/stethoscope",
}

_T = TypeVar("_T")


class _Weighted(Generic[_T]):
    """A categorical distribution, drawn with one random number."""

    def __init__(self, weights: dict[_T, float]) -> None:
        self.items = tuple(weights)
        self.cumulative = tuple(itertools.accumulate(weights.values()))

    def draw(self, rng: random.Random) -> _T:
        return self.items[bisect_right(self.cumulative, rng.random() * self.cumulative[-1])]


# --- time, ids and eras ---------------------------------------------------------------------------------


def _month_of(created: int) -> int:
    return bisect_right(_MONTH_STARTS, created) - 1


def _month_label(month: int) -> str:
    return f"{_FIRST_YEAR + month // 12}-{month % 12 + 1:02d}"


_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
_DIGIT_PAIRS = [a + b for a in _DIGITS for b in _DIGITS]


def _base36(number: int) -> str:
    """Two digits per division: ids and fullnames are formatted millions of times."""
    digits = ""
    while number >= 36:
        number, pair = divmod(number, 1296)
        digits = _DIGIT_PAIRS[pair] + digits
    return _DIGITS[number] + digits if number else digits


class _IdClock:
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
        return _base36(2 * self._last + self._parity)


def _anchors(*points: tuple[tuple[int, int], str]) -> tuple[tuple[int, int], ...]:
    return tuple((_utc(*month), int(value, 36)) for month, value in points)


# Read off real ids (MedRedQA's range: posts 557sfm in October 2016 to r2w897 in December 2021, comments
# dbupbgg to hm76yig). Submission ids have 6 characters until November 2022 and 7 from December 2022.
_SUBMISSION_ANCHORS = _anchors(
    ((2014, 1), "1u0000"), ((2015, 1), "2r0000"), ((2016, 10), "557sfm"), ((2018, 1), "7nb000"),
    ((2019, 1), "ac0000"), ((2020, 1), "eiq000"), ((2021, 1), "kn0000"), ((2021, 12), "r2w897"),
    ((2022, 12), "1000000"), ((2024, 2), "1ak0000"),
)  # fmt: skip
_COMMENT_ANCHORS = _anchors(
    ((2014, 1), "cee0000"), ((2016, 12), "dbupbgg"), ((2019, 1), "ee00000"), ((2021, 11), "hm76yig"),
    ((2024, 2), "kjz0000"),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Era:
    """Which fields and types the records of one month carry (pushshift-format.md, section 2)."""

    string_created: float  # share of records whose created_utc is a numeric string
    comment_stickied: bool
    is_submitter: bool
    comment_permalink: bool
    comment_richtext: bool
    submission_richtext: bool
    author_fullname: bool
    removed_by_category: bool
    upvote_ratio: bool
    galleries: bool
    is_video: bool
    submission_created: bool  # the non-UTC `created` field
    comment_name: bool
    comment_float_edited: bool
    submission_float_edited: bool
    comment_retrieved: tuple[str, ...]
    submission_retrieved: tuple[str, ...]
    retrieval_lag_days: int
    sorted_keys: bool  # Arctic Shift, from 2023-04
    meta: bool
    unverified_label: str | None  # what AskDocs showed on unverified users that month
    automod_share: float  # posts that get an AutoModerator sticky


def _era(month: int) -> _Era:
    ym = (_FIRST_YEAR + month // 12, month % 12 + 1)

    def within(first: tuple[int, int], last: tuple[int, int] = (9999, 12)) -> bool:
        return first <= ym <= last

    both_retrieved = within((2021, 7), (2022, 6))
    return _Era(
        string_created=0.99 if ym == (2015, 2) else float(ym <= (2015, 11)),
        comment_stickied=within((2015, 12)),
        is_submitter=within((2017, 8)),
        comment_permalink=within((2017, 11)),
        comment_richtext=ym == (2018, 4) or within((2018, 6)),
        submission_richtext=within((2018, 4)),
        author_fullname=within((2018, 7)),
        removed_by_category=within((2019, 9)),
        upvote_ratio=within((2020, 5)),
        galleries=within((2020, 6)),
        is_video=within((2017, 6)),
        submission_created=ym <= (2015, 11),
        comment_name=not within((2015, 8), (2021, 1)),
        comment_float_edited=within((2016, 6), (2016, 9)) or ym == (2018, 3) or within((2021, 2), (2023, 3)),
        submission_float_edited=within((2017, 5), (2018, 8)) or within((2020, 5), (2023, 3)),
        comment_retrieved=("retrieved_utc",) if within((2021, 2), (2021, 6)) else ("retrieved_on",),
        submission_retrieved=("retrieved_on", "retrieved_utc") if both_retrieved
        else ("retrieved_utc",) if within((2020, 5), (2021, 6)) else ("retrieved_on",),
        retrieval_lag_days=365 if ym < (2018, 1) else 100 if ym < (2021, 1) else 14,
        sorted_keys=within((2023, 4)),
        meta=within((2023, 11)),
        unverified_label=FLAIRS_BY_ROLE["unverified"][0] if within((2016, 6), (2021, 6))
        else FLAIRS_BY_ROLE["layperson"][0] if within((2021, 7)) else None,
        automod_share=0.35 if within((2016, 1)) else 0.0,
    )  # fmt: skip


_ERAS = [_era(month) for month in range(_MONTHS)]


def _era_of(created: int) -> _Era:
    return _ERAS[_month_of(created)]


# --- people, posts and comments -------------------------------------------------------------------------

_SLUG = str.maketrans(dict.fromkeys(" -'?!.,:;\"()/&#", "_"))


def _slug(title: str) -> str:
    return title.lower().translate(_SLUG)[:50].strip("_")


@dataclass(frozen=True, slots=True)
class _Person:
    """An account as shown on one comment; a physician who was a student shows `earlier_flair` before
    `flair_since`."""

    name: str
    flair: str | None = None
    earlier_flair: str | None = None
    flair_since: int = 0

    def flair_at(self, created: int) -> str | None:
        return self.earlier_flair if created < self.flair_since else self.flair


_DELETED = _Person("[deleted]")
_AUTOMODERATOR = _Person("AutoModerator")


@dataclass(eq=False, slots=True)
class _Post:
    id: str
    created: int
    author: str
    title: str
    selftext: str | None  # None: the key is missing (link posts)
    subreddit: str
    flair: str | None = None
    kind: str = "self"  # self | image | gallery | video | link
    removed_by_category: str | None = None
    distinguished: str | None = None
    link_flair: str | None = None
    inert: bool = True  # losing the line to corruption changes no designed outcome
    num_comments: int = 0
    slug: str = field(init=False)
    op: str = field(init=False)  # OP's name on comments (is_submitter), kept if the post loses it

    def __post_init__(self) -> None:
        self.slug, self.op = _slug(self.title), self.author

    def retitle(self, title: str, selftext: str) -> None:
        self.title, self.selftext, self.slug = title, selftext, _slug(title)


@dataclass(eq=False, slots=True)
class _Comment:
    post: _Post
    parent: "_Comment | None"  # None: a reply to the post
    author: str
    flair: str | None
    body: str
    created: int
    seq: int  # creation order: breaks created_utc ties when ids are handed out
    distinguished: str | None = None
    stickied: bool = False
    inert: bool = False
    id: str = ""


_Node = _Post | _Comment
_Turns = list[tuple[_Node, _Comment | None]]


@dataclass(slots=True)
class _Truth:
    """A designed post and, when it must yield a thread, its (question, answer or None) turns."""

    post: _Post
    scenario: str
    turns: _Turns | None


class _People:
    """Disjoint pools of accounts, so that a commenter is OP only where the generator means it."""

    def __init__(self, rng: random.Random, posts: int) -> None:
        sizes = (
            max(60, posts * 7 // 10),
            max(60, posts * 35 // 100),
            max(24, posts // 1500),
            max(24, posts // 1000),
        )
        names = text.usernames(rng, sum(sizes))
        ends = list(itertools.accumulate(sizes))
        self.patients = names[: ends[0]]
        self.lay = names[ends[0] : ends[1]]
        self.physicians = [_physician(rng, name) for name in names[ends[1] : ends[2]]]
        self.professionals = [_professional(rng, name) for name in names[ends[2] :]]


def _physician(rng: random.Random, name: str) -> _Person:
    """Half use one of the four plain flairs; one in five was a medical student until some date."""
    flairs = FLAIRS_BY_ROLE["physician"]
    flair = rng.choice(flairs[:4] if rng.random() < 0.5 else flairs)
    if rng.random() < 0.2:
        since = rng.randrange(_utc(2015, 6), _utc(2022, 6))
        return _Person(name, flair, rng.choice(FLAIRS_BY_ROLE["medical_student"]), since)
    return _Person(name, flair)


def _professional(rng: random.Random, name: str) -> _Person:
    roles = ("physician_assistant", "registered_nurse", "nurse_practitioner", "pharmacist",
             "medical_student", "other")  # fmt: skip
    return _Person(name, rng.choice(FLAIRS_BY_ROLE[rng.choice(roles)]))


# --- thread shapes and plans ----------------------------------------------------------------------------
# A shape has one letter per question of the branch: A (answered) or O (orphan); turn 0 is always A.
# Answered-eligible shapes (A^m O^j, m >= 3) take _ANSWERED_SHARE of the threads, m distributed as the
# answered dataset's pairs. The others have 3 questions 61.5% of the time, 4 20%, else a long tail up
# to 33, answers at 45% in the middle and an orphan at the end 86% of the time. These numbers were
# fitted by simulation to Table 1: 61% of threads with 3 questions, 18% with 5 or more, 58% of
# questions answered, 74% of threads ending on an orphan; answered threads 75% / 25% / 8%.

_PAIRS = _Weighted({3: 745, 4: 179, 5: 52, 6: 14, 7: 5, 8: 3, 9: 1, 10: 1})


@dataclass(frozen=True)
class _Plan:
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


def _draw_labels(rng: random.Random, eligible: bool, pairs: int | None = None) -> str:
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


def _thread_plan(rng: random.Random, require: str | None = None, pairs: int | None = None) -> _Plan:
    """A designed thread with random tail and features; `require` forces one tail or feature (the
    shape is redrawn until it fits), `pairs` an answered-eligible length."""
    while True:
        labels = _draw_labels(rng, pairs is not None or rng.random() < _ANSWERED_SHARE, pairs)
        tails = _TAILS_AFTER_ANSWER if labels[-1] == "A" else _TAILS_AFTER_ORPHAN
        tail = require if require in tails else _Weighted(tails).draw(rng)
        tie = require if require in _TIES else next((t for t, p in _TIES.items() if rng.random() < p), None)
        wanted = {name for name, share in _EXTRAS.items() if rng.random() < share or name == require}
        extras = frozenset(name for name in (*wanted, tie) if name and _fits(name, labels, tail))
        if require in (None, tail) or require in extras:
            return _Plan("thread", labels, tail, extras)


def _thread_plans(rng: random.Random, count: int, minimum: int, long_minimum: int) -> list[_Plan]:
    """`count` thread plans (more if needed) in which every tail and feature occurs `minimum` times and
    answered threads of 6+ and of 4-5 pairs `long_minimum` times each, so small runs cover every case."""
    plans = [_thread_plan(rng, pairs=rng.randint(6, 10)) for _ in range(long_minimum)]
    plans += [_thread_plan(rng, pairs=rng.choice((4, 5))) for _ in range(long_minimum)]
    features = sorted({*_TAILS_AFTER_ANSWER, *_TAILS_AFTER_ORPHAN, *_TIES, *_EXTRAS} - {"none"})
    plans += [_thread_plan(rng, require=name) for name in features for _ in range(minimum)]
    plans += [_thread_plan(rng) for _ in range(count - len(plans))]
    rng.shuffle(plans)
    return plans


class _Placer:
    """Assigns plans to distinct posts, drawn at random within an index range."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.plans: dict[int, _Plan] = {}

    def pin(self, index: int, plan: _Plan) -> None:
        self.plans[index] = plan

    def place(self, plan: _Plan, first: int, last: int) -> None:
        for _ in range(100 if last > first else 0):
            index = self.rng.randrange(first, last)
            if index not in self.plans:
                self.plans[index] = plan
                return


def _plan_posts(rng: random.Random, times: list[int], posts: int) -> dict[int, _Plan]:
    """Which posts carry designed trees (post index -> plan). The window's first and last posts carry
    threads and the posts just outside it decoys (see _post_times)."""
    minimum, long_minimum = min(2, posts // 500), min(5, posts // 200)
    lo, hi = bisect_left(times, WINDOW_START), bisect_left(times, WINDOW_END)
    placer = _Placer(rng)
    threads = _thread_plans(rng, round(posts * _THREADS_PER_POST), minimum, long_minimum)
    for index in (lo, hi - 1) if lo < hi else ():
        if threads:  # a tiny run may have a single thread plan for the two edges
            placer.pin(index, threads.pop())
    for index in (lo - 1, hi):
        placer.pin(index, _Plan("decoy:out_of_window", _draw_labels(rng, True)))
    for plan in threads:
        placer.place(plan, lo, hi)
    near_misses = _Weighted(_NEAR_MISSES)
    kinds = [*_NEAR_MISSES] * minimum + [
        near_misses.draw(rng) for _ in range(len(threads) * _NEAR_MISSES_PER_THREAD)
    ]
    for kind in kinds:
        placer.place(_Plan(f"near_miss:{kind}"), lo, hi)
    decoys = max(minimum, round(posts * _DECOYS_PER_POST))
    for kind, since in _DECOYS.items():
        for _ in range(decoys):
            placer.place(
                _Plan(f"decoy:{kind}", _draw_labels(rng, rng.random() < 0.5)), bisect_left(times, since), hi
            )
    for _ in range(decoys):
        outside = rng.randrange(len(times) - (hi - lo))
        index = outside if outside < lo else outside + hi - lo
        placer.place(_Plan("decoy:out_of_window", _draw_labels(rng, True)), index, index + 1)
    return placer.plans


def _post_times(rng: random.Random, posts: int) -> list[int]:
    """Sorted creation times: `posts` inside the window, growing like AskDocs, ~3% outside (at least one
    a month). The window's first post is created at its first second and its last post 30 s before
    its end, so every reply lands after it; the posts just outside sit one second before and exactly
    at the window's bounds."""
    inside = _apportion(posts, [_YEAR_WEIGHTS[_FIRST_YEAR + month // 12] for month in _WINDOW_MONTHS])
    extra = max(0, round(posts * _OUTSIDE_SHARE) - len(_OUTSIDE_MONTHS))
    outside = _apportion(extra, [1 if month < 12 else 4 for month in _OUTSIDE_MONTHS])
    counts = dict(zip(_WINDOW_MONTHS, inside, strict=True))
    counts |= {month: n + 1 for month, n in zip(_OUTSIDE_MONTHS, outside, strict=True)}
    times = []
    for month in sorted(counts):
        start, end = _MONTH_STARTS[month], _MONTH_STARTS[month + 1]
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


# --- comment trees --------------------------------------------------------------------------------------

_MARKDOWN_LINK = re.compile(r"\[([^\[\]]*)\]\([^()\s]*\)")
_URL = re.compile(r"(?:https?://|www\.)\S+")
_TOKEN = re.compile(r"[a-z0-9]+")
_PHYSICIAN_FLAIRS = frozenset(FLAIRS_BY_ROLE["physician"])


def _token_set(raw: str) -> set[str]:
    """Lower-cased alphanumeric tokens of the cleaned text, as branch selection compares them."""
    cleaned = _URL.sub(" ", _MARKDOWN_LINK.sub(r"\1", html.unescape(raw)))
    return set(_TOKEN.findall(cleaned.lower()))


def _jaccard(left: set[str], right: set[str]) -> float:
    return len(left & right) / len(left | right)


_GENERIC_TOKENS = [(answer, _token_set(answer)) for answer in text.GENERIC_ANSWERS]


class _CommentQueue:
    """Holds comments until their month is complete, then hands them out in creation order with ids
    (ids grow with created_utc; equal times keep creation order)."""

    def __init__(self, parity: int) -> None:
        self._ids = _IdClock(_COMMENT_ANCHORS, parity)
        self._months: dict[int, list[_Comment]] = {}

    def add(self, comment: _Comment) -> None:
        self._months.setdefault(_month_of(comment.created), []).append(comment)

    def release(self, month: int) -> list[_Comment]:
        comments = sorted(self._months.pop(month, []), key=lambda c: (c.created, c.seq))
        for comment in comments:
            comment.id = self._ids.next(comment.created)
        return comments


class _Forge:
    """Creates the posts and comments of one random stream and picks the people who write them."""

    def __init__(self, rng: random.Random, people: _People, parity: int) -> None:
        self.rng, self.people = rng, people
        self.queue = _CommentQueue(parity)
        self._post_ids = _IdClock(_SUBMISSION_ANCHORS, parity)
        self._seq = itertools.count()

    def post(self, created: int, author: str, case: text.Case, subreddit: str, sentences: int, *,
             links: bool = True, **fields) -> _Post:  # fmt: skip
        rng = self.rng
        title = text.spice(rng, text.title(rng, case), links=False)
        body = text.spice(rng, text.post_body(rng, case, sentences), links=links)
        return _Post(self._post_ids.next(created), created, author, title, body, subreddit, **fields)

    def reply(
        self, parent: _Node, person: _Person, body: str, *, at: int | None = None, **fields
    ) -> _Comment:
        """A comment under `parent`, later than it by a realistic delay unless `at` is given."""
        delay = min(_MAX_DELAY, 60 + int(self.rng.expovariate(1 / 7200)))
        created = parent.created + delay if at is None else at
        post, above = (parent, None) if isinstance(parent, _Post) else (parent.post, parent)
        post.num_comments += 1
        flair, seq = person.flair_at(created), next(self._seq)
        comment = _Comment(post, above, person.name, flair, body, created, seq, **fields)
        self.queue.add(comment)
        return comment

    def tombstone(self, parent: _Node, body: str | None = None) -> _Comment:
        """A deleted or removed comment; `body` keeps the text of a deleted account's comment."""
        return self.reply(parent, _DELETED, body or self.rng.choice(("[deleted]", "[deleted]", "[removed]")))

    def automod(self, post: _Post) -> _Comment:
        """AutoModerator's sticky: a reminder of the rules, or the notice of a removal."""
        notice = text.AUTOMOD_REMOVAL if post.selftext == "[removed]" else text.AUTOMOD_STICKY
        body = notice.format(sub=post.subreddit)
        at = post.created + self.rng.randint(2, 50)
        return self.reply(
            post, _AUTOMODERATOR, body, at=at, distinguished="moderator", stickied=True, inert=True
        )

    def physician(self, at: int, avoid: _Person | None = None) -> _Person:
        """An account whose flair maps to physician from `at` on."""
        while True:
            person = self.rng.choice(self.people.physicians)
            if person is not avoid and person.flair_at(at) in _PHYSICIAN_FLAIRS:
                return person

    def student(self, at: int) -> _Person:
        """A future physician still flaired as a medical student a month after `at`, else a professional."""
        for _ in range(20):
            person = self.rng.choice(self.people.physicians)
            if person.flair_since > at + 31 * 86400:
                return person
        return self.professional()

    def professional(self) -> _Person:
        return self.rng.choice(self.people.professionals)

    def lay(self, at: int) -> _Person:
        return _Person(self.rng.choice(self.people.lay), self.lay_flair(at))

    def lay_flair(self, at: int) -> str | None:
        label = _era_of(at).unverified_label
        if label is None or self.rng.random() < 0.5:
            return None
        return label.rstrip(".") if label.startswith("Layperson") and self.rng.random() < 0.3 else label


@dataclass(slots=True)
class _Branch:
    turns: _Turns
    first: _Comment
    first_sentences: list[str]
    last: _Comment
    doctor: _Person


class _Designer:
    """Designed comment trees: dataset.md selects a known branch among them, or provably none."""

    def __init__(self, forge: _Forge) -> None:
        self.forge, self.rng = forge, forge.rng

    def answer(self, case: text.Case) -> str:
        return text.spice(
            self.rng, text.follow_up_answer(self.rng, case, self.rng.randint(3, 6)), links=False
        )

    def follow_up(self, case: text.Case) -> str:
        return text.spice(self.rng, text.follow_up(self.rng, case), links=True)

    def filtered(self, case: text.Case) -> str:
        """An answer the quality filter rejects: garbled, or with more than one removal marker."""
        if self.rng.random() < 0.5:
            return text.garbled(self.rng)
        return text.with_markers(self.rng, case, self.rng.randint(2, 3))

    def chain(self, node: _Node, case: text.Case, op: _Person, doctor: _Person, steps: str) -> _Comment:
        """Replies below `node`, one per letter: Q an OP follow-up, A the doctor's answer."""
        for step in steps:
            node = self.forge.reply(
                node, *((op, self.follow_up(case)) if step == "Q" else (doctor, self.answer(case)))
            )
        assert isinstance(node, _Comment)
        return node

    def branch(self, post: _Post, case: text.Case, op: _Person, labels: str,
               extras: frozenset[str] = frozenset()) -> _Branch:  # fmt: skip
        """The designed path: a top-level physician answer, then one OP question per later label. An
        orphan inside the path is an OP reply to its own question or to a filtered answer."""
        rng, forge = self.rng, self.forge
        doctor = forge.physician(post.created)
        sentences = text.answer_sentences(rng, case, rng.randint(3, 6))
        first = node = forge.reply(post, doctor, " ".join(sentences))
        turns: _Turns = [(post, first)]
        answered = [i for i, label in enumerate(labels) if label == "A" and i > 0]
        marked = rng.choice(answered) if "single_marker" in extras and answered else -1
        switch = rng.choice(answered) if "second_physician" in extras and answered else -1
        for index in range(1, len(labels)):
            question = node = forge.reply(node, op, self.follow_up(case))
            if index == switch:
                doctor = forge.physician(post.created, avoid=doctor)
            if labels[index] == "A":
                body = text.with_markers(rng, case, 1) if index == marked else self.answer(case)
                node = forge.reply(question, doctor, body)
            elif index < len(labels) - 1 and rng.random() < 0.3:
                node = forge.reply(question, doctor, self.filtered(case))
            turns.append((question, node if labels[index] == "A" else None))
        return _Branch(turns, first, sentences, node, doctor)

    def thread(self, post: _Post, case: text.Case, op: _Person, plan: _Plan) -> _Turns:
        branch = self.branch(post, case, op, plan.labels, plan.extras)
        self.tail(post, case, op, branch, plan.tail)
        for name in sorted(plan.extras):
            if name in _TIES:
                self.tie(name, post, case, op, branch)
            else:
                self.extra(name, post, case, op, branch)
        return branch.turns

    def tail(self, post: _Post, case: text.Case, op: _Person, branch: _Branch, kind: str) -> None:
        """What hangs below the branch's last comment and stays out of it: trimmed tombstones, comments
        that cut (lay, impostor, non-physician), are dropped (short) or stop the path (physician reply)."""
        rng, forge, node, doctor = self.rng, self.forge, branch.last, branch.doctor
        if kind == "tombstone":
            tombstone = forge.tombstone(node)
            if rng.random() < 0.3:
                forge.tombstone(tombstone)
        elif kind == "physician_reply":
            colleague = forge.physician(post.created, avoid=doctor)
            self.chain(forge.reply(node, colleague, self.answer(case)), case, op, doctor, "Q")
        elif kind == "short_thanks":
            self.chain(forge.reply(node, op, rng.choice(text.SHORT_THANKS)), case, op, doctor, "A")
        elif kind == "lay_reply":
            lay = forge.reply(node, forge.lay(node.created), text.lay_comment(rng, case), inert=True)
            forge.reply(lay, op, text.op_reply(rng, case))
        elif kind == "impostor":
            impostor = _Person(op.name.swapcase(), forge.lay_flair(node.created))
            self.chain(forge.reply(node, impostor, text.follow_up(rng, case)), case, op, doctor, "A")
        elif kind == "filtered":
            forge.reply(node, doctor, self.filtered(case))
        elif kind == "short_physician":
            forge.reply(node, doctor, rng.choice(text.SHORT_PHYSICIAN))
        elif kind == "non_physician":
            self.chain(forge.reply(node, forge.professional(), self.answer(case)), case, op, doctor, "Q")

    def tie(self, name: str, post: _Post, case: text.Case, op: _Person, branch: _Branch) -> None:
        """A second path equal to the branch up to one tie-break of branch selection, which it loses."""
        rng, forge = self.rng, self.forge
        last_question = branch.turns[-1][0]
        if name == "tie_answered":  # OP double-posts under the first answer within a minute: as many
            node: _Node = branch.first  # questions, fewer answers, an earlier last comment
            for step in range(1, len(branch.turns)):
                node = forge.reply(node, op, text.follow_up(rng, case), at=branch.first.created + 10 * step)
        elif name == "tie_questions":  # a prefix of the branch that ends on its last answer
            forge.tombstone([answer for _, answer in branch.turns if answer is not None][-1])
        elif name == "tie_jaccard":  # another physician, same words in another order, fewer answers
            echo = " ".join(rng.sample(branch.first_sentences, len(branch.first_sentences)))
            forge.reply(post, forge.physician(post.created, avoid=branch.doctor), echo)
        elif isinstance(last_question, _Comment):  # OP asks the last question twice: later, or in the
            parent = last_question.parent or post  # same second (a double post, whose id is larger)
            if name == "tie_time":
                forge.reply(
                    parent, op, text.follow_up(rng, case), at=last_question.created + rng.randint(60, 7200)
                )
            else:
                forge.reply(parent, op, last_question.body, at=last_question.created)

    def extra(self, name: str, post: _Post, case: text.Case, op: _Person, branch: _Branch) -> None:
        """Side structures that compete with the branch and lose, or that the rules ignore."""
        rng, forge = self.rng, self.forge
        if name in ("distractor", "distractor_longer"):
            self.distractor(post, case, op, branch, longer=name == "distractor_longer")
        elif name == "discarded":
            self.discarded(post, case, op, branch)
        elif name == "automod":
            forge.automod(post)
        elif name == "lay_top":
            _add_noise(forge, post, case, rng.randint(1, 4), physician_top=False)
        elif name == "side_tombstone":  # a deleted reply to an inner answer: its prefix path loses
            inner = [answer for _, answer in branch.turns if answer is not None and answer is not branch.last]
            forge.tombstone(rng.choice(inner))
        elif name == "side_lay":
            node = rng.choice([question for question, _ in branch.turns[1:]])
            forge.reply(node, forge.lay(node.created), text.lay_comment(rng, case), inert=True)

    def distractor(self, post: _Post, case: text.Case, op: _Person, branch: _Branch, longer: bool) -> None:
        """An off-topic physician branch whose Jaccard is clearly lower; `longer` gives it more turns."""
        question = _token_set(f"{post.title}\n\n{post.selftext}")
        bar = _jaccard(question, _token_set(branch.first.body)) - _JACCARD_MARGIN
        answers = [answer for answer, tokens in _GENERIC_TOKENS if _jaccard(question, tokens) <= bar]
        if answers:
            colleague = self.forge.physician(post.created, avoid=branch.doctor)
            node = self.forge.reply(post, colleague, self.rng.choice(answers))
            if longer:
                self.chain(node, case, op, colleague, "QA" * (len(branch.turns) + self.rng.randint(0, 2)))
            elif self.rng.random() < 0.4:
                self.chain(node, case, op, colleague, "Q")

    def discarded(self, post: _Post, case: text.Case, op: _Person, branch: _Branch) -> None:
        """An on-topic branch in which OP deleted a follow-up: a tombstone inside, so it is dropped."""
        colleague = self.forge.physician(post.created, avoid=branch.doctor)
        first = self.forge.reply(post, colleague, text.answer(self.rng, case, 5))
        body = text.follow_up(self.rng, case) if self.rng.random() < 0.4 else "[deleted]"
        deleted = self.forge.tombstone(self.chain(first, case, op, colleague, "QA"), body)
        self.chain(deleted, case, op, colleague, "AQ")

    def near_miss(self, post: _Post, case: text.Case, op: _Person, kind: str) -> None:
        """A tree that looks like a thread, but in which every path has fewer than 3 questions."""
        rng, forge = self.rng, self.forge
        doctor = forge.physician(post.created)
        first = forge.reply(post, doctor, text.answer(rng, case, rng.randint(3, 5)))
        question = forge.reply(first, op, self.follow_up(case))
        if kind == "two_questions":
            end = rng.random()
            if end < 0.5:
                forge.reply(question, doctor, self.answer(case))
            elif end < 0.7:
                forge.reply(question, doctor, self.filtered(case))
        elif kind == "short_follow_up":  # OP's "Thanks!" has under 5 words: dropped, it cuts the rest
            thanks = forge.reply(
                self.chain(question, case, op, doctor, "A"), op, rng.choice(text.SHORT_THANKS)
            )
            self.chain(thanks, case, op, doctor, "AQA")
        elif kind == "impostor":  # OP's name in another case is someone else
            impostor = forge.reply(self.chain(question, case, op, doctor, "A"), _Person(op.name.swapcase()),
                                   text.follow_up(rng, case))  # fmt: skip
            self.chain(impostor, case, op, doctor, "AQA")
        elif kind == "non_physician_mid":  # a PA, nurse... or a physician while still a student
            helper = forge.student(post.created) if rng.random() < 0.4 else forge.professional()
            self.chain(forge.reply(question, helper, self.answer(case)), case, op, doctor, "QAQA")
        elif kind == "non_physician_top":
            helper = forge.reply(post, forge.professional(), text.answer(rng, case, 3))
            self.chain(helper, case, op, doctor, "QAQAQ")
        elif kind == "mid_tombstone":
            self.mid_tombstone(case, op, doctor, question)
        elif kind == "physician_reply":  # a path stops where a physician replies to a physician
            colleague = forge.reply(first, forge.physician(post.created, avoid=doctor), self.answer(case))
            self.chain(colleague, case, op, doctor, "QAQA")
        elif kind == "short_answer":  # a physician's "Yes." is dropped and cuts the path
            short = forge.reply(question, doctor, rng.choice(text.SHORT_PHYSICIAN))
            self.chain(short, case, op, doctor, "QAQA")
        elif kind == "moderator_notice":  # distinguished moderator comments are dropped, physician or not
            notice = forge.reply(question, doctor, text.MODERATOR_NOTICE, distinguished="moderator")
            self.chain(notice, case, op, doctor, "QAQA")

    def mid_tombstone(self, case: text.Case, op: _Person, doctor: _Person, question: _Comment) -> None:
        """Three questions, then deleted content inside the path: the whole path is discarded."""
        rng, forge = self.rng, self.forge
        second = self.chain(question, case, op, doctor, "AQ")
        if rng.random() < 0.5:  # the physician's answer was removed and OP went on below it
            removed = (
                forge.reply(second, doctor, "[removed]") if rng.random() < 0.3 else forge.tombstone(second)
            )
            self.chain(removed, case, op, doctor, "QA")
        else:  # OP deleted a follow-up (or the account) and the physician answered it
            body = text.follow_up(rng, case) if rng.random() < 0.4 else "[deleted]"
            deleted = forge.tombstone(self.chain(second, case, op, doctor, "A"), body)
            self.chain(deleted, case, op, doctor, "AQ")


def _add_noise(
    forge: _Forge, post: _Post, case: text.Case, count: int, *, physician_top: bool = True
) -> None:
    """`count` comments of every kind, none of which can extend a branch past two questions: a top-level
    subtree holds at most one OP comment. `physician_top=False` keeps physicians off the top level, as
    designed posts need (their top-level physicians must lose branch selection by design)."""
    rng = forge.rng
    nodes: list[tuple[_Comment, int]] = []
    with_op: set[int] = set()
    for _ in range(count):
        parent, root = rng.choice(nodes) if nodes and rng.random() < 0.45 else (None, len(nodes))
        role = _NOISE_ROLE.draw(rng)
        if (role == "op" and root in with_op) or (
            role == "physician" and parent is None and not physician_top
        ):
            role = "lay"
        person, body, distinguished = _noise_voice(forge, post, case, role)
        comment = forge.reply(parent or post, person, body, distinguished=distinguished, inert=True)
        nodes.append((comment, root))
        if role == "op":
            with_op.add(root)


def _noise_voice(forge: _Forge, post: _Post, case: text.Case, role: str) -> tuple[_Person, str, str | None]:
    """Who writes a noise comment, its body and its `distinguished` value."""
    rng = forge.rng
    if role == "physician":
        return forge.physician(post.created), text.answer(rng, case, rng.randint(2, 4)), None
    if role == "professional":
        return forge.professional(), text.follow_up_answer(rng, case, 2), None
    if role == "op":
        return _Person(post.author, post.flair), text.op_reply(rng, case), None
    if role == "deleted":
        return _DELETED, rng.choice(("[deleted]", "[removed]", text.lay_comment(rng, case))), None
    if role == "bot":
        bot = rng.choice(BOT_AUTHORS[1:])
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(post.created + 2 * 86400))
        return _Person(bot), text.BOT_TEXTS[bot].format(when=when, sub=post.subreddit, post=post.id), None
    if role == "moderator_notice":
        return forge.physician(post.created), text.MODERATOR_NOTICE, "moderator"
    return forge.lay(post.created), text.spice(rng, text.lay_comment(rng, case), links=True), None


_NOISE_ROLE = _Weighted(_NOISE_ROLES)
_NOISE_POST = _Weighted(_NOISE_POSTS)


class _Subreddit:
    """The subreddit's stream: its posts, designed or noise, and the designed outcomes."""

    def __init__(self, rng: random.Random, people: _People, subreddit: str) -> None:
        self.rng, self.people, self.subreddit = rng, people, subreddit
        self.forge = _Forge(rng, people, parity=0)
        self.designer = _Designer(self.forge)
        self.truths: list[_Truth] = []
        self._designed_ops: list[str] = []
        # Noise posts share a pool of stories (each post reorders its sentences); designed posts draw anew.
        self._cases = [text.draw_case(rng) for _ in range(max(200, min(10_000, len(people.patients) // 30)))]

    def post(self, created: int, plan: _Plan | None) -> _Post:
        return self.noise_post(created) if plan is None else self.designed_post(created, plan)

    def designed_post(self, created: int, plan: _Plan) -> _Post:
        rng, forge = self.rng, self.forge
        case = text.draw_case(rng)
        reuse = "repeat_op" in plan.extras and self._designed_ops
        author = rng.choice(self._designed_ops) if reuse else rng.choice(self.people.patients)
        flair = "Physician" if "op_flair" in plan.extras else forge.lay_flair(created)
        sentences = max(4, int(rng.lognormvariate(3.0, 0.45)))
        post = forge.post(created, author, case, self.subreddit, sentences, links=False, flair=flair,
                          inert=False, link_flair=_link_flair(created))  # fmt: skip
        op, (family, _, kind) = _Person(author, flair), plan.scenario.partition(":")
        turns = None
        if family == "thread":
            turns = self.designer.thread(post, case, op, plan)
        elif family == "near_miss":
            self.designer.near_miss(post, case, op, kind)
        else:
            _make_decoy(rng, post, kind)
            self.designer.branch(post, case, op, plan.labels)
        self.truths.append(_Truth(post, plan.scenario, turns))
        self._designed_ops.append(author)
        return post

    def noise_post(self, created: int) -> _Post:
        rng, forge = self.rng, self.forge
        case = rng.choice(self._cases)
        author, flair = rng.choice(self.people.patients), forge.lay_flair(created)
        post = forge.post(created, author, case, self.subreddit, rng.randint(3, 9), flair=flair,
                          link_flair=_link_flair(created))  # fmt: skip
        _make_noise_kind(rng, post, _NOISE_POST.draw(rng))
        if rng.random() < 0.3:
            return post
        if rng.random() < _era_of(created).automod_share:
            forge.automod(post)
        _add_noise(forge, post, case, 1 + int(rng.expovariate(1 / _COMMENTS_PER_NOISE_POST)))
        return post


def _link_flair(created: int) -> str | None:
    return "Physician Responded" if created >= _utc(2016, 1) else None


def _make_decoy(rng: random.Random, post: _Post, kind: str) -> None:
    """Make a post that a post-level rule drops (dataset.md, "Posts are dropped when")."""
    if kind == "deleted_author":  # OP's comments were retrieved before: name and is_submitter intact
        post.author = "[deleted]"
        post.selftext = "[deleted]" if rng.random() < 0.5 else post.selftext
    elif kind == "removed_selftext":
        post.selftext = "[removed]"
        if _era_of(post.created).removed_by_category and rng.random() < 0.5:
            post.removed_by_category = rng.choice(("moderator", "automod_filtered"))
    elif kind == "removed_by_category":  # retrieved before the removal: text intact, category set
        post.removed_by_category = rng.choice(_REMOVAL_CATEGORIES)
    elif kind in ("image_only", "gallery", "video"):
        post.kind, post.selftext = kind.removesuffix("_only"), ""
    elif kind == "short_post":
        post.retitle(rng.choice(text.SHORT_TITLES), "")


def _make_noise_kind(rng: random.Random, post: _Post, kind: str) -> None:
    era = _era_of(post.created)
    if kind in ("image", "video", "gallery"):
        post.kind = "image" if kind == "gallery" and not era.galleries else kind
        post.selftext = ""
    elif kind == "link":
        post.kind, post.selftext = "link", None if rng.random() < 0.5 else ""
    elif kind == "deleted":
        post.author, post.selftext = "[deleted]", "[deleted]"
        post.removed_by_category = "deleted" if era.removed_by_category else None
    elif kind == "removed":
        post.selftext = "[removed]"
        post.removed_by_category = rng.choice(_REMOVAL_CATEGORIES) if era.removed_by_category else None
    elif kind == "escaped_removed":
        post.selftext = "\\[removed\\]"
    elif kind == "short":
        post.retitle(rng.choice(text.SHORT_TITLES), "")
    elif kind == "automod":
        post.author, post.flair, post.distinguished = "AutoModerator", None, "moderator"
        post.retitle(*text.AUTOMOD_THREAD)


# --- records and lines ----------------------------------------------------------------------------------

_FLAIR_CSS = {flair: role for role, flairs in FLAIRS_BY_ROLE.items() for flair in flairs}


def _fullname(prefix: str, name: str) -> str:
    return prefix + _base36(zlib.crc32(name.encode()) + 36**5)


@functools.cache
def _subreddit_id(name: str) -> str:
    return "t5_2xtuc" if name.lower() == "askdocs" else _fullname("t5_", name.lower())


class _Renderer:
    """Dump records of posts and comments with the fields and types of their month (pushshift-format.md,
    section 2). Drift within a month is drawn per record from the stream's own random numbers."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def submission(self, post: _Post) -> dict:
        rng, era = self.rng, _era_of(post.created)
        record = self._author(post.author, post.flair, era, era.submission_richtext)
        permalink = f"/r/{post.subreddit}/comments/{post.id}/{post.slug}/"
        record |= {
            "created_utc": self._created(post.created, era), "distinguished": post.distinguished,
            "domain": f"self.{post.subreddit}",
            "edited": self._edited(post.created, era.submission_float_edited), "gilded": 0, "id": post.id,
            "is_self": post.kind == "self", "link_flair_css_class": None,
            "link_flair_text": post.link_flair if post.num_comments else None, "media": None,
            "media_embed": {}, "num_comments": post.num_comments, "over_18": False, "permalink": permalink,
            "quarantine": False, "score": rng.choice(_SCORES), "secure_media": None, "secure_media_embed": {},
            "selftext": post.selftext, "stickied": post.distinguished is not None,
            "subreddit": self._subreddit(post.subreddit), "subreddit_id": _subreddit_id(post.subreddit),
            "thumbnail": "self" if post.kind == "self" else "default", "title": post.title,
            "url": f"https://www.reddit.com{permalink}",
        }  # fmt: skip
        if post.selftext is None:
            del record["selftext"]
        self._media(record, post, era)
        if era.removed_by_category:
            record["removed_by_category"] = post.removed_by_category
        if era.upvote_ratio:
            record["upvote_ratio"] = round(rng.uniform(0.5, 1.0), 2)
        if era.submission_created:
            record["created"] = post.created + 28800  # not UTC: pushshift-format.md 2.3
        self._retrieved(record, post.created, era.submission_retrieved, era)
        return record

    def comment(self, comment: _Comment) -> dict:
        era, post = _era_of(comment.created), comment.post
        record = self._author(comment.author, comment.flair, era, era.comment_richtext)
        record |= {
            "body": comment.body, "controversiality": 0, "created_utc": self._created(comment.created, era),
            "distinguished": comment.distinguished,
            "edited": self._edited(comment.created, era.comment_float_edited), "gilded": 0, "id": comment.id,
            "link_id": f"t3_{post.id}",
            "parent_id": f"t1_{comment.parent.id}" if comment.parent else f"t3_{post.id}",
            "score": self.rng.choice(_SCORES), "subreddit": self._subreddit(post.subreddit),
            "subreddit_id": _subreddit_id(post.subreddit),
        }  # fmt: skip
        if era.comment_stickied:
            record["stickied"] = comment.stickied
        if era.is_submitter:
            record["is_submitter"] = comment.author == post.op
        if era.comment_permalink:
            record["permalink"] = f"/r/{post.subreddit}/comments/{post.id}/{post.slug}/{comment.id}/"
        if era.comment_name:
            record["name"] = f"t1_{comment.id}"
        self._retrieved(record, comment.created, era.comment_retrieved, era)
        return record

    def _subreddit(self, name: str) -> str:
        return name.lower() if self.rng.random() < 0.005 else name  # matching is case-insensitive

    def _author(self, author: str, flair: str | None, era: _Era, richtext: bool) -> dict:
        record: dict = {"author": author}
        self._flair(record, flair, richtext and author != "[deleted]" and self.rng.random() < 0.9)
        if era.author_fullname and author != "[deleted]":
            record["author_fullname"] = _fullname("t2_", author)
        return record

    def _flair(self, record: dict, flair: str | None, richtext: bool) -> None:
        """Flair as text only, or also as richtext pieces: sometimes after an emoji piece, sometimes
        with `author_flair_text` left null."""
        css = _FLAIR_CSS.get(flair) if flair else None
        if not richtext:
            record |= {"author_flair_css_class": css, "author_flair_text": flair}
        elif flair is None or self.rng.random() < 0.3:
            record |= {"author_flair_css_class": css, "author_flair_richtext": [], "author_flair_text": flair,
                       "author_flair_type": "text"}  # fmt: skip
        else:
            pieces = [{"e": "text", "t": flair}]
            if self.rng.random() < 0.15:
                pieces.insert(0, _EMOJI_PIECE)
            shown = None if self.rng.random() < 0.1 else flair
            record |= {"author_flair_css_class": css, "author_flair_richtext": pieces,
                       "author_flair_text": shown, "author_flair_type": "richtext"}  # fmt: skip

    def _created(self, created: int, era: _Era) -> int | str | float:
        draw = self.rng.random()
        if draw < era.string_created:
            return str(created)
        return float(created) if draw > 0.998 else created  # API-style floats, now and then

    def _edited(self, created: int, floats: bool) -> bool | int | float:
        if self.rng.random() < 0.92:
            return False
        edited = created + self.rng.randint(60, 3 * 86400)
        return float(edited) if floats and self.rng.random() < 0.5 else edited

    def _retrieved(self, record: dict, created: int, names: tuple[str, ...], era: _Era) -> None:
        retrieved = created + era.retrieval_lag_days * 86400 + self.rng.randrange(7 * 86400)
        for name in names:
            record[name] = retrieved
        if era.meta:
            record["_meta"] = {"retrieved_2nd_on": created + 129600}

    def _media(self, record: dict, post: _Post, era: _Era) -> None:
        rng, token = self.rng, _base36(self.rng.randrange(36**12, 36**13))
        if era.is_video:
            record["is_video"] = post.kind == "video"
        if post.kind == "self" and rng.random() < 0.4:
            record["post_hint"] = "self"
        elif post.kind == "image":
            host = rng.choice(_IMAGE_HOSTS)
            record |= {"domain": host, "url": f"https://{host}/{token}.jpg"}
            if rng.random() < 0.7:
                source = {"url": f"https://preview.redd.it/{token}.jpg?auto=webp&amp;s={token[:8]}",
                          "width": 1080, "height": 1350}  # fmt: skip
                record |= {"post_hint": "image", "preview": {"enabled": True, "images": [{"source": source}]}}
        elif post.kind == "gallery":
            items = [token[i : i + 6] for i in range(0, 12, 4)]
            record |= {
                "domain": "reddit.com", "url": f"https://www.reddit.com/gallery/{post.id}",
                "is_gallery": True,
                "gallery_data": {"items": [{"media_id": item, "id": i} for i, item in enumerate(items)]},
                "media_metadata": {item: {"status": "valid", "e": "Image", "m": "image/jpg"}
                                   for item in items},
            }  # fmt: skip
        elif post.kind == "video":
            record |= {
                "domain": "v.redd.it",
                "url": f"https://v.redd.it/{token}",
                "post_hint": "hosted:video",
            }
        elif post.kind == "link":
            host = rng.choice(_LINK_HOSTS)
            record |= {
                "domain": host,
                "url": f"https://www.{host}/health/{post.slug}.html",
                "post_hint": "link",
            }


class _Encoder:
    """Dump lines: mostly raw UTF-8 JSON, some ASCII-escaped with sorted keys (re-ingested records),
    keys sorted from 2023-04 (Arctic Shift); now and then a duplicate re-ingest or a broken line. Only
    inert records are broken, so that no designed outcome depends on how a reader copes."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def lines(self, record: dict, *, created: int, inert: bool) -> list[bytes]:
        rng, sort = self.rng, _era_of(created).sorted_keys
        if inert and rng.random() < _MALFORMED_RATE:
            return self._malformed(record)
        lines = [self._dump(record, sort)]
        if rng.random() < (_DUPLICATE_RATE if inert else _DESIGNED_DUPLICATE_RATE):
            again = dict(record, score=record["score"] + rng.randint(1, 40))
            for name in ("retrieved_on", "retrieved_utc"):
                if name in again:
                    again[name] += rng.randint(86400, 90 * 86400)
            lines.append(self._dump(again, sort))
        return lines

    def _dump(self, record: dict, sort: bool) -> bytes:
        if self.rng.random() < _ASCII_ESCAPED_SHARE:
            return json.dumps(record, sort_keys=True).encode("ascii")
        return orjson.dumps(record, option=orjson.OPT_SORT_KEYS if sort else 0)

    def _malformed(self, record: dict) -> list[bytes]:
        line = orjson.dumps(record)
        kind = self.rng.randrange(4)
        if kind == 0:  # cut short, as by an interrupted write
            return [line[: self.rng.randrange(1, len(line) - 1)]]
        if kind == 1:  # bytes that are not UTF-8, inside a string (compact JSON has spaces only there)
            return [line.replace(b" ", b" \xff\xfe ", 1) if b" " in line else line[:-2]]
        if kind == 2:
            return [orjson.dumps({key: value for key, value in record.items() if key != "id"})]
        return [b"", line]


# --- files ----------------------------------------------------------------------------------------------

_PARAMETERS = zstandard.ZstdCompressionParameters.from_level(
    3, window_log=31, threads=1, job_size=8 << 20, overlap_log=1, write_checksum=True
)
"""Like `zstd --long=31` on a stream: one frame that declares a 2 GiB window and no content size, so a
reader needs max_window_size=2**31. Multithreaded mode with 8 MiB jobs keeps the compressor near 30 MB
whatever the file size; long-distance matching (the rest of `--long`) would make zstd hold the whole
history in memory, up to 2 GiB, and only changes the compression ratio. zstd's multithreaded output does
not depend on the number of workers, so files stay byte-identical."""


class _ZstdLines:
    """One dump file: NDJSON lines streamed through zstd in a single frame."""

    def __init__(self, path: Path) -> None:
        self.path, self.lines = path, 0
        self._file = path.open("wb")
        self._writer = zstandard.ZstdCompressor(compression_params=_PARAMETERS).stream_writer(self._file)
        self._buffer: list[bytes] = []
        self._size = 0

    def write(self, lines: list[bytes]) -> int:
        self.lines += len(lines)
        self._buffer += lines
        self._size += sum(map(len, lines))
        if self._size > 1 << 20:
            self._flush()
        return len(lines)

    def _flush(self) -> None:
        if self._buffer:
            self._writer.write(b"\n".join(self._buffer) + b"\n")
        self._buffer, self._size = [], 0

    def close(self) -> None:
        self._flush()
        self._writer.close()


class _SubredditSink:
    """`<subreddit>_submissions.zst` and `<subreddit>_comments.zst`, written side by side."""

    def __init__(self, out_dir: Path, subreddit: str) -> None:
        self._submissions = _ZstdLines(out_dir / f"{subreddit}_submissions.zst")
        self._comments = _ZstdLines(out_dir / f"{subreddit}_comments.zst")

    def start_month(self, month: int) -> None:
        pass

    def submission(self, lines: list[bytes], created: int) -> int:
        return self._submissions.write(lines)

    def comments(self, month: int, lines: list[bytes]) -> int:
        return self._comments.write(lines)

    def close(self) -> dict[Path, int]:
        for file in (self._submissions, self._comments):
            file.close()
        return {file.path: file.lines for file in (self._submissions, self._comments)}


class _MonthlySink:
    """`RS_YYYY-MM.zst` and `RC_YYYY-MM.zst`, each mixing the subreddit's lines with other subreddits'."""

    def __init__(self, out_dir: Path, others: "_OtherSubreddits") -> None:
        self._out_dir, self._others = out_dir, others
        self._submissions: _ZstdLines | None = None
        self._counts: dict[Path, int] = {}

    def start_month(self, month: int) -> None:
        self._close_submissions()
        self._submissions = _ZstdLines(self._out_dir / f"RS_{_month_label(month)}.zst")
        self._submissions.write(self._others.submissions(_MONTH_STARTS[month] + 1, count=3))

    def submission(self, lines: list[bytes], created: int) -> int:
        assert self._submissions is not None
        return self._submissions.write(lines + self._others.submissions(created))

    def comments(self, month: int, lines: list[bytes]) -> int:
        file = _ZstdLines(self._out_dir / f"RC_{_month_label(month)}.zst")
        file.write(_interleave(self._others.rng, lines, self._others.comments(month, count=len(lines) + 3)))
        file.close()
        self._counts[file.path] = file.lines
        return file.lines

    def _close_submissions(self) -> None:
        if self._submissions is not None:
            self._submissions.close()
            self._counts[self._submissions.path] = self._submissions.lines

    def close(self) -> dict[Path, int]:
        self._close_submissions()
        return dict(sorted(self._counts.items()))


_Sink = _SubredditSink | _MonthlySink


def _interleave(rng: random.Random, ours: list[bytes], theirs: list[bytes]) -> list[bytes]:
    """Merge two lists of lines at random, keeping the order within each."""
    merged, i, j = [], 0, 0
    while i < len(ours) or j < len(theirs):
        if j == len(theirs) or (i < len(ours) and rng.random() < len(ours) / (len(ours) + len(theirs))):
            merged.append(ours[i])
            i += 1
        else:
            merged.append(theirs[j])
            j += 1
    return merged


class _OtherSubreddits:
    """Records of other subreddits, about as many as the subreddit's own, from a separate random stream.
    Subreddits whose name contains 'askdocs' sometimes hold whole OP-physician branches: a build that
    matched the subreddit by substring would turn them into threads."""

    def __init__(self, seed: int, people: _People) -> None:
        self.rng = random.Random(f"{seed}/other-subreddits")
        self._forge = _Forge(self.rng, people, parity=1)
        self._designer = _Designer(self._forge)
        self._renderer, self._encoder = _Renderer(self.rng), _Encoder(self.rng)
        self._recent: list[_Post] = []
        self._cases = [text.draw_case(self.rng) for _ in range(500)]

    def submissions(self, created: int, count: int | None = None) -> list[bytes]:
        rng, lines = self.rng, []
        for _ in range(rng.choice((0, 1, 1, 2)) if count is None else count):
            case = rng.choice(self._cases)
            author, subreddit = rng.choice(self._forge.people.patients), rng.choice(OTHER_SUBREDDITS)
            post = self._forge.post(created, author, case, subreddit, rng.randint(2, 5))
            if "askdocs" in subreddit.lower() and rng.random() < 0.03:
                self._designer.branch(post, case, _Person(author), _draw_labels(rng, True))
            record = self._renderer.submission(post)
            if created < _utc(2018, 1) and rng.random() < 0.01:
                del record["subreddit"]  # promoted posts of 2015-2017 carry none
            lines += self._encoder.lines(record, created=created, inert=True)
            self._recent = [*self._recent[-49:], post]
        return lines

    def comments(self, month: int, count: int) -> list[bytes]:
        """About `count` lay comments on recent posts, and the month's comments of earlier branches."""
        rng = self.rng
        for _ in range(count if self._recent else 0):
            post = rng.choice(self._recent)
            delay = rng.randint(60, 86400)
            # Dated inside this month (no month of a real all-of-Reddit dump is empty): a reply to an
            # older post comes `delay` after the month starts.
            created = max(post.created, _MONTH_STARTS[month]) + delay
            lay, body = self._forge.lay(created), text.lay_comment(rng, rng.choice(self._cases))
            self._forge.reply(post, lay, body, at=created)
        comments = self._forge.queue.release(month)
        return [
            line
            for comment in comments
            for line in self._encoder.lines(
                self._renderer.comment(comment), created=comment.created, inert=True
            )
        ]


# --- truth ----------------------------------------------------------------------------------------------


def _truth_tables(truths: list[_Truth]) -> tuple[pa.Table, pa.Table]:
    """The designed outcomes: whether each designed post is in full / answered, and the exact QA rows."""
    threads, pairs = [], []
    for truth in truths:
        row = {"thread_id": truth.post.id, "scenario": truth.scenario, "in_full": truth.turns is not None,
               "in_answered": False}  # fmt: skip
        if truth.turns is not None:
            ids = [(question.id, answer.id if answer else None) for question, answer in truth.turns]
            answered = sum(answer is not None for _, answer in ids)
            kept = len(ids)
            while kept and ids[kept - 1][1] is None:  # answered: trailing orphans trimmed
                kept -= 1
            in_answered = kept >= 3 and all(answer is not None for _, answer in ids[:kept])
            row |= {"in_answered": in_answered, "n_questions": len(ids), "n_answered": answered,
                    "n_orphans": len(ids) - answered,
                    "n_pairs_answered": kept if in_answered else None}  # fmt: skip
            for dataset, rows in (("full", ids), ("answered", ids[:kept] if in_answered else [])):
                pairs += [{"dataset": dataset, "thread_id": truth.post.id, "turn": turn,
                           "question_id": question, "answer_id": answer}
                          for turn, (question, answer) in enumerate(rows)]  # fmt: skip
        threads.append(row)
    pairs.sort(key=lambda row: row["dataset"] != "full")
    return (pa.Table.from_pylist(threads, schema=TRUTH_THREADS_SCHEMA),
            pa.Table.from_pylist(pairs, schema=TRUTH_QA_PAIRS_SCHEMA))  # fmt: skip


# --- entry point ----------------------------------------------------------------------------------------


class _Progress:
    """Reports the lines written so far to the caller, every _LINES_PER_PROGRESS lines and at the end."""

    def __init__(self, callback: Callable[[int], None] | None) -> None:
        self._callback, self.lines, self._next = callback, 0, _LINES_PER_PROGRESS

    def add(self, lines: int) -> None:
        self.lines += lines
        if self._callback is not None and self.lines >= self._next:
            self._callback(self.lines)
            self._next = self.lines + _LINES_PER_PROGRESS

    def done(self) -> None:
        if self._callback is not None:
            self._callback(self.lines)


def _months(times: list[int]) -> Iterator[tuple[int, range]]:
    """Each month with posts, with the indices of the posts created in it."""
    for month in range(_MONTHS - 1):
        yield (
            month,
            range(bisect_left(times, _MONTH_STARTS[month]), bisect_left(times, _MONTH_STARTS[month + 1])),
        )


def _write_dumps(
    stream: _Subreddit, times: list[int], plans: dict[int, _Plan], sink: "_Sink", progress: _Progress
) -> None:
    """Posts month by month; a month's comments once no later post can reply into it."""
    renderer, encoder = _Renderer(stream.rng), _Encoder(stream.rng)

    def release(month: int) -> None:
        lines = []
        for comment in stream.forge.queue.release(month):
            lines += encoder.lines(renderer.comment(comment), created=comment.created, inert=comment.inert)
        progress.add(sink.comments(month, lines))

    for month, indices in _months(times):
        if month:
            release(month - 1)
        sink.start_month(month)
        for index in indices:
            post = stream.post(times[index], plans.get(index))
            lines = encoder.lines(renderer.submission(post), created=post.created, inert=post.inert)
            progress.add(sink.submission(lines, post.created))
    release(_MONTHS - 2)
    release(_MONTHS - 1)


def generate_dumps(
    out_dir: Path,
    posts: int,
    seed: int,
    layout: Literal["subreddit", "monthly"] = "subreddit",
    subreddit: str = "AskDocs",
    progress: Callable[[int], None] | None = None,
) -> SynthSummary:
    """Write dumps holding `posts` subreddit posts inside the default window (and ~3% outside it) with
    their comments, plus `truth/` with the designed outcomes. The same arguments give the same bytes."""
    if layout not in ("subreddit", "monthly"):
        raise ValueError(f"layout must be 'subreddit' or 'monthly', not {layout!r}")
    started = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    people = _People(rng, posts)
    times = _post_times(rng, posts)
    plans = _plan_posts(rng, times, posts)
    stream = _Subreddit(rng, people, subreddit)
    if layout == "subreddit":
        sink: _Sink = _SubredditSink(out_dir, subreddit)
    else:
        sink = _MonthlySink(out_dir, _OtherSubreddits(seed, people))
    counter = _Progress(progress)
    _write_dumps(stream, times, plans, sink, counter)
    counts = sink.close()
    counter.done()
    threads, pairs = _truth_tables(stream.truths)
    truth_dir = out_dir / "truth"
    truth_dir.mkdir(exist_ok=True)
    pq.write_table(threads, truth_dir / "threads.parquet")
    pq.write_table(pairs, truth_dir / "qa_pairs.parquet")
    return SynthSummary(
        files=tuple(counts),
        records={path.name: lines for path, lines in counts.items()},
        truth_threads=truth_dir / "threads.parquet",
        truth_qa_pairs=truth_dir / "qa_pairs.parquet",
        full_threads=sum(threads["in_full"].to_pylist()),
        answered_threads=sum(threads["in_answered"].to_pylist()),
        seconds=time.perf_counter() - started,
    )


@task(name="write-synthetic-dumps", cache_policy=NO_CACHE)
def write_synthetic_dumps(
    out_dir: str, posts: int, seed: int, layout: Literal["subreddit", "monthly"] = "subreddit"
) -> dict[str, Any]:
    """Dumps and truth tables -> out_dir (see generate_dumps); return the files, line total, expectations."""
    summary = generate_dumps(Path(out_dir), posts, seed, layout)
    return {
        "files": [str(path) for path in summary.files],
        "records": summary.total_records,
        "truth_dir": str(summary.truth_threads.parent),
        "full_threads": summary.full_threads,
        "answered_threads": summary.answered_threads,
        "seconds": summary.seconds,
    }
