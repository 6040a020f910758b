"""The subreddit's stream: its posts, designed or noise, and the designed outcomes."""

import random

from tasks.synth import text
from tasks.synth.eras import era_of
from tasks.synth.forge import Forge, Post
from tasks.synth.noise import NOISE_POST_KINDS, REMOVAL_CATEGORIES, add_noise, make_noise_kind
from tasks.synth.people import People, Person
from tasks.synth.plans import Plan
from tasks.synth.timeline import utc
from tasks.synth.trees import Designer
from tasks.synth.truth import Truth

_COMMENTS_PER_NOISE_POST = 3.1  # mean of those with comments; 30% have none


class SubredditStream:
    """The subreddit's stream: its posts, designed or noise, and the designed outcomes."""

    def __init__(self, rng: random.Random, people: People, subreddit: str) -> None:
        self.rng, self.people, self.subreddit = rng, people, subreddit
        self.forge = Forge(rng, people, parity=0)
        self.designer = Designer(self.forge)
        self.truths: list[Truth] = []
        self._designed_ops: list[str] = []
        # Noise posts share a pool of stories (each post reorders its sentences); designed posts draw anew.
        self._cases = [text.draw_case(rng) for _ in range(max(200, min(10_000, len(people.patients) // 30)))]

    def post(self, created: int, plan: Plan | None) -> Post:
        return self.noise_post(created) if plan is None else self.designed_post(created, plan)

    def designed_post(self, created: int, plan: Plan) -> Post:
        rng, forge = self.rng, self.forge
        case = text.draw_case(rng)
        reuse = "repeat_op" in plan.extras and self._designed_ops
        author = rng.choice(self._designed_ops) if reuse else rng.choice(self.people.patients)
        flair = "Physician" if "op_flair" in plan.extras else forge.lay_flair(created)
        sentences = max(4, int(rng.lognormvariate(3.0, 0.45)))
        post = forge.post(created, author, case, self.subreddit, sentences, links=False, flair=flair,
                          inert=False, link_flair=_link_flair(created))  # fmt: skip
        op, (family, _, kind) = Person(author, flair), plan.scenario.partition(":")
        turns = None
        if family == "thread":
            turns = self.designer.thread(post, case, op, plan)
        elif family == "near_miss":
            self.designer.near_miss(post, case, op, kind)
        else:
            _make_decoy(rng, post, kind)
            self.designer.branch(post, case, op, plan.labels)
        self.truths.append(Truth(post, plan.scenario, turns))
        self._designed_ops.append(author)
        return post

    def noise_post(self, created: int) -> Post:
        rng, forge = self.rng, self.forge
        case = rng.choice(self._cases)
        author, flair = rng.choice(self.people.patients), forge.lay_flair(created)
        post = forge.post(created, author, case, self.subreddit, rng.randint(3, 9), flair=flair,
                          link_flair=_link_flair(created))  # fmt: skip
        make_noise_kind(rng, post, NOISE_POST_KINDS.draw(rng))
        if rng.random() < 0.3:
            return post
        if rng.random() < era_of(created).automod_share:
            forge.automod(post)
        add_noise(forge, post, case, 1 + int(rng.expovariate(1 / _COMMENTS_PER_NOISE_POST)))
        return post


def _link_flair(created: int) -> str | None:
    return "Physician Responded" if created >= utc(2016, 1) else None


def _make_decoy(rng: random.Random, post: Post, kind: str) -> None:
    """Make a post that a post-level rule drops (dataset.md, "Posts are dropped when")."""
    if kind == "deleted_author":  # OP's comments were retrieved before: name and is_submitter intact
        post.author = "[deleted]"
        post.selftext = "[deleted]" if rng.random() < 0.5 else post.selftext
    elif kind == "removed_selftext":
        post.selftext = "[removed]"
        if era_of(post.created).removed_by_category and rng.random() < 0.5:
            post.removed_by_category = rng.choice(("moderator", "automod_filtered"))
    elif kind == "removed_by_category":  # retrieved before the removal: text intact, category set
        post.removed_by_category = rng.choice(REMOVAL_CATEGORIES)
    elif kind in ("image_only", "gallery", "video"):
        post.kind, post.selftext = kind.removesuffix("_only"), ""
    elif kind == "short_post":
        post.retitle(rng.choice(text.SHORT_TITLES), "")
