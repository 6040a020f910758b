"""Posts and comments in memory, and the forge that creates them: ids in creation order, realistic
reply delays, the people who write them."""

import itertools
import random
from dataclasses import dataclass, field

from tasks.synth import text
from tasks.synth.eras import era_of
from tasks.synth.ids import COMMENT_ANCHORS, SUBMISSION_ANCHORS, IdClock
from tasks.synth.people import AUTOMODERATOR, DELETED, PHYSICIAN_FLAIRS, People, Person
from tasks.synth.timeline import month_of

_MAX_DELAY = 8 * 3600  # a designed branch spans < 28 days, so a reply lands at most one month later
_SLUG = str.maketrans(dict.fromkeys(" -'?!.,:;\"()/&#", "_"))


def _slug(title: str) -> str:
    return title.lower().translate(_SLUG)[:50].strip("_")


@dataclass(eq=False, slots=True)
class Post:
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
class Comment:
    post: Post
    parent: "Comment | None"  # None: a reply to the post
    author: str
    flair: str | None
    body: str
    created: int
    seq: int  # creation order: breaks created_utc ties when ids are handed out
    distinguished: str | None = None
    stickied: bool = False
    inert: bool = False
    id: str = ""


Node = Post | Comment
Turns = list[tuple[Node, Comment | None]]


class CommentQueue:
    """Holds comments until their month is complete, then hands them out in creation order with ids
    (ids grow with created_utc; equal times keep creation order)."""

    def __init__(self, parity: int) -> None:
        self._ids = IdClock(COMMENT_ANCHORS, parity)
        self._months: dict[int, list[Comment]] = {}

    def add(self, comment: Comment) -> None:
        self._months.setdefault(month_of(comment.created), []).append(comment)

    def release(self, month: int) -> list[Comment]:
        comments = sorted(self._months.pop(month, []), key=lambda c: (c.created, c.seq))
        for comment in comments:
            comment.id = self._ids.next(comment.created)
        return comments


class Forge:
    """Creates the posts and comments of one random stream and picks the people who write them."""

    def __init__(self, rng: random.Random, people: People, parity: int) -> None:
        self.rng, self.people = rng, people
        self.queue = CommentQueue(parity)
        self._post_ids = IdClock(SUBMISSION_ANCHORS, parity)
        self._seq = itertools.count()

    def post(self, created: int, author: str, case: text.Case, subreddit: str, sentences: int, *,
             links: bool = True, **fields) -> Post:  # fmt: skip
        rng = self.rng
        title = text.spice(rng, text.title(rng, case), links=False)
        body = text.spice(rng, text.post_body(rng, case, sentences), links=links)
        return Post(self._post_ids.next(created), created, author, title, body, subreddit, **fields)

    def reply(self, parent: Node, person: Person, body: str, *, at: int | None = None, **fields) -> Comment:
        """A comment under `parent`, later than it by a realistic delay unless `at` is given."""
        delay = min(_MAX_DELAY, 60 + int(self.rng.expovariate(1 / 7200)))
        created = parent.created + delay if at is None else at
        post, above = (parent, None) if isinstance(parent, Post) else (parent.post, parent)
        post.num_comments += 1
        flair, seq = person.flair_at(created), next(self._seq)
        comment = Comment(post, above, person.name, flair, body, created, seq, **fields)
        self.queue.add(comment)
        return comment

    def tombstone(self, parent: Node, body: str | None = None) -> Comment:
        """A deleted or removed comment; `body` keeps the text of a deleted account's comment."""
        return self.reply(parent, DELETED, body or self.rng.choice(("[deleted]", "[deleted]", "[removed]")))

    def automod(self, post: Post) -> Comment:
        """AutoModerator's sticky: a reminder of the rules, or the notice of a removal."""
        notice = text.AUTOMOD_REMOVAL if post.selftext == "[removed]" else text.AUTOMOD_STICKY
        body = notice.format(sub=post.subreddit)
        at = post.created + self.rng.randint(2, 50)
        return self.reply(
            post, AUTOMODERATOR, body, at=at, distinguished="moderator", stickied=True, inert=True
        )

    def physician(self, at: int, avoid: Person | None = None) -> Person:
        """An account whose flair maps to physician from `at` on."""
        while True:
            person = self.rng.choice(self.people.physicians)
            if person is not avoid and person.flair_at(at) in PHYSICIAN_FLAIRS:
                return person

    def student(self, at: int) -> Person:
        """A future physician still flaired as a medical student a month after `at`, else a professional."""
        for _ in range(20):
            person = self.rng.choice(self.people.physicians)
            if person.flair_since > at + 31 * 86400:
                return person
        return self.professional()

    def professional(self) -> Person:
        return self.rng.choice(self.people.professionals)

    def lay(self, at: int) -> Person:
        return Person(self.rng.choice(self.people.lay), self.lay_flair(at))

    def lay_flair(self, at: int) -> str | None:
        label = era_of(at).unverified_label
        if label is None or self.rng.random() < 0.5:
            return None
        return label.rstrip(".") if label.startswith("Layperson") and self.rng.random() < 0.3 else label
