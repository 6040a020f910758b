"""Other subreddits' records, which share the monthly files with the subreddit's."""

import random

from tasks.synth import text
from tasks.synth.forge import Forge, Post
from tasks.synth.people import People, Person
from tasks.synth.plans import draw_labels
from tasks.synth.render import Encoder, Renderer
from tasks.synth.timeline import MONTH_STARTS, utc
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
