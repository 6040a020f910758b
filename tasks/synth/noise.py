"""Noise: posts of every kind and comments that can never make a branch of three questions."""

import random
import time

from tasks.synth import text
from tasks.synth.eras import era_of
from tasks.synth.forge import Comment, Forge, Post
from tasks.synth.people import BOT_AUTHORS, DELETED, Person
from tasks.synth.plans import Weighted

NOISE_POST_KINDS = Weighted({"self": 840, "image": 45, "gallery": 10, "video": 10, "link": 10, "deleted": 30,
                "removed": 45, "escaped_removed": 3, "short": 12, "automod": 1})  # fmt: skip
"""Kinds of noise posts (see make_noise_kind)."""
_NOISE_ROLES = Weighted({"lay": 50, "physician": 14, "professional": 7, "op": 17, "deleted": 8, "bot": 2,
                "moderator_notice": 1})  # fmt: skip
"""Who writes a noise comment (see _noise_voice)."""
REMOVAL_CATEGORIES = ("moderator", "deleted", "reddit", "automod_filtered", "author", "anti_evil_ops")


def add_noise(forge: Forge, post: Post, case: text.Case, count: int, *, physician_top: bool = True) -> None:
    """`count` comments of every kind, none of which can extend a branch past two questions: a top-level
    subtree holds at most one OP comment. `physician_top=False` keeps physicians off the top level, as
    designed posts need (their top-level physicians must lose branch selection by design)."""
    rng = forge.rng
    nodes: list[tuple[Comment, int]] = []
    with_op: set[int] = set()
    for _ in range(count):
        parent, root = rng.choice(nodes) if nodes and rng.random() < 0.45 else (None, len(nodes))
        role = _NOISE_ROLES.draw(rng)
        if (role == "op" and root in with_op) or (
            role == "physician" and parent is None and not physician_top
        ):
            role = "lay"
        person, body, distinguished = _noise_voice(forge, post, case, role)
        comment = forge.reply(parent or post, person, body, distinguished=distinguished, inert=True)
        nodes.append((comment, root))
        if role == "op":
            with_op.add(root)


def _noise_voice(forge: Forge, post: Post, case: text.Case, role: str) -> tuple[Person, str, str | None]:
    """Who writes a noise comment, its body and its `distinguished` value."""
    rng = forge.rng
    if role == "physician":
        return forge.physician(post.created), text.answer(rng, case, rng.randint(2, 4)), None
    if role == "professional":
        return forge.professional(), text.follow_up_answer(rng, case, 2), None
    if role == "op":
        return Person(post.author, post.flair), text.op_reply(rng, case), None
    if role == "deleted":
        return DELETED, rng.choice(("[deleted]", "[removed]", text.lay_comment(rng, case))), None
    if role == "bot":
        bot = rng.choice(BOT_AUTHORS[1:])
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(post.created + 2 * 86400))
        return Person(bot), text.BOT_TEXTS[bot].format(when=when, sub=post.subreddit, post=post.id), None
    if role == "moderator_notice":
        return forge.physician(post.created), text.MODERATOR_NOTICE, "moderator"
    return forge.lay(post.created), text.spice(rng, text.lay_comment(rng, case), links=True), None


def make_noise_kind(rng: random.Random, post: Post, kind: str) -> None:
    """Turn a self post into one of NOISE_POST_KINDS, in the shape its month allows."""
    era = era_of(post.created)
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
        post.removed_by_category = rng.choice(REMOVAL_CATEGORIES) if era.removed_by_category else None
    elif kind == "escaped_removed":
        post.selftext = "\\[removed\\]"
    elif kind == "short":
        post.retitle(rng.choice(text.SHORT_TITLES), "")
    elif kind == "automod":
        post.author, post.flair, post.distinguished = "AutoModerator", None, "moderator"
        post.retitle(*text.AUTOMOD_THREAD)
