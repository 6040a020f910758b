"""Other subreddits' records, which share the monthly files with the subreddit's."""

import random

from tasks.synth import text
from tasks.synth.forge import Comment, Forge, Post
from tasks.synth.ids import base36
from tasks.synth.people import People, Person
from tasks.synth.plans import draw_labels
from tasks.synth.render import Encoder, Renderer
from tasks.synth.timeline import MONTH_STARTS, month_of, utc
from tasks.synth.trees import Designer

OTHER_SUBREDDITS = ("AskReddit", "medicine", "Health", "DiagnoseMe", "askdocs_clone", "AskDocs2")
"""Subreddits sharing the monthly files; the last two contain 'askdocs' but must not match it."""


class OtherSubreddits:
    """Records of other subreddits, about as many as the subreddit's own, from a separate random stream.
    Subreddits whose name contains 'askdocs' sometimes hold whole OP-physician branches: a build that
    matched the subreddit by substring would turn them into threads."""

    def __init__(self, seed: int, people: People) -> None:
        self.rng = random.Random(f"{seed}/other-subreddits")
        self._forge = Forge(self.rng, people, parity=1)
        self._designer = Designer(self._forge)
        self._renderer, self._encoder = Renderer(self.rng), Encoder(self.rng)
        self._recent: list[Post] = []
        self._cases = [text.draw_case(self.rng) for _ in range(500)]

    def submissions(self, created: int, count: int | None = None) -> list[bytes]:
        rng, lines = self.rng, []
        for _ in range(rng.choice((0, 1, 1, 2)) if count is None else count):
            case = rng.choice(self._cases)
            author, subreddit = rng.choice(self._forge.people.patients), rng.choice(OTHER_SUBREDDITS)
            post = self._forge.post(created, author, case, subreddit, rng.randint(2, 5))
            if "askdocs" in subreddit.lower() and rng.random() < 0.03:
                self._designer.branch(post, case, Person(author), draw_labels(rng, True))
            record = self._renderer.submission(post)
            if created < utc(2018, 1) and rng.random() < 0.01:
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
            created = max(post.created, MONTH_STARTS[month]) + delay
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


POPULAR_SUBREDDITS = (
    "AskReddit", "funny", "gaming", "worldnews", "pics", "news", "todayilearned", "movies", "nba",
    "politics", "relationship_advice", "AmItheAsshole", "medicine", "Health", "nursing", "Fitness",
)  # fmt: skip
"""The bulk of a month: none of these names contains the subreddit's."""
OTHER_LINES_PER_LINE = 250
"""Lines of popular subreddits per line of the subreddit in a monthly file: AskDocs is then about 0.4%
of a month (RC_2020-06 really holds some 35k AskDocs comments among about 150M, 0.02%)."""
_MENTION_RATE = 1 / 2_000  # popular comments that point someone to r/AskDocs, as real ones do
_TEMPLATES = 24
_SCORES = (1, 1, 1, 1, 2, 2, 3, 4, 5, 8, 13, 40, 0, -1, -3)


class PopularSubreddits:
    """The bulk of the monthly files: records of popular subreddits with the fields and types of their
    month (rendered like every other record, then varied in id, time and score), from their own random
    stream so that the rest of the monthly files does not depend on how many there are."""

    def __init__(self, seed: int, people: People) -> None:
        self.rng = random.Random(f"{seed}/popular-subreddits")
        self._forge = Forge(self.rng, people, parity=1)
        self._renderer, self._encoder = Renderer(self.rng), Encoder(self.rng)
        self._cases = [text.draw_case(self.rng) for _ in range(50)]
        # Fresh words on every line, so that the files compress about as well as real ones (~7x).
        comments = [text.lay_comment(self.rng, case) for case in self._cases]
        self._words = sorted({word for comment in comments for word in comment.split()})
        self._templates: dict[tuple[str, int], list[dict]] = {}
        self._serial = 0

    def submissions(self, created: int, count: int) -> list[bytes]:
        return self._lines("submissions", [created] * count)

    def comments(self, month: int, count: int) -> list[bytes]:
        start, end = MONTH_STARTS[month], MONTH_STARTS[month + 1]
        return self._lines("comments", sorted(self.rng.randrange(start, end) for _ in range(count)))

    def _lines(self, kind: str, times: list[int]) -> list[bytes]:
        rng, lines = self.rng, []
        text_field = "body" if kind == "comments" else "selftext"
        for created in times:
            record = dict(rng.choice(self._month_templates(kind, created)))
            self._serial += 1
            record["id"] = base36(36**6 + self._serial)
            record["score"] = rng.choice(_SCORES)
            record["created_utc"] = str(created) if isinstance(record["created_utc"], str) else created
            words = rng.choices(self._words, k=1 + int(rng.paretovariate(1.5) * 12))
            if rng.random() < _MENTION_RATE:
                words.append("r/AskDocs")
            if kind == "submissions":
                record["title"] = " ".join(words[:12])
            if kind == "comments" or record.get("selftext"):
                record[text_field] = " ".join(words)
            lines += self._encoder.lines(record, created=created, inert=True)
        return lines

    def _month_templates(self, kind: str, created: int) -> list[dict]:
        """Records rendered with the fields and types of the month of `created` (kept for one month)."""
        month = month_of(created)
        if (kind, month) not in self._templates:
            rng, at, records = self.rng, MONTH_STARTS[month] + 1, []
            for index in range(_TEMPLATES):
                case = rng.choice(self._cases)
                post = self._forge.post(at, rng.choice(self._forge.people.lay), case,
                                        rng.choice(POPULAR_SUBREDDITS), 1, links=False)  # fmt: skip
                if kind == "submissions":
                    records.append(self._renderer.submission(post))
                    continue
                lay = self._forge.lay(at)
                comment = Comment(post, None, lay.name, lay.flair, "", at, 0, id=base36(36**6 + index))
                records.append(self._renderer.comment(comment))
            self._templates = {key: value for key, value in self._templates.items() if key[1] == month}
            self._templates[kind, month] = records
        return self._templates[kind, month]
