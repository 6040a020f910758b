"""Designed comment trees: dataset.md selects a known branch among them, or provably none."""

import html
import re
from dataclasses import dataclass

from tasks.synth import text
from tasks.synth.forge import Comment, Forge, Node, Post, Turns
from tasks.synth.noise import add_noise
from tasks.synth.people import Person
from tasks.synth.plans import TIES, Plan

_JACCARD_MARGIN = 0.02
_MARKDOWN_LINK = re.compile(r"\[([^\[\]]*)\]\([^()\s]*\)")
_URL = re.compile(r"(?:https?://|www\.)\S+")
_TOKEN = re.compile(r"[a-z0-9]+")


def _token_set(raw: str) -> set[str]:
    """Lower-cased alphanumeric tokens of the cleaned text, as branch selection compares them."""
    cleaned = _URL.sub(" ", _MARKDOWN_LINK.sub(r"\1", html.unescape(raw)))
    return set(_TOKEN.findall(cleaned.lower()))


def _jaccard(left: set[str], right: set[str]) -> float:
    return len(left & right) / len(left | right)


_GENERIC_TOKENS = [(answer, _token_set(answer)) for answer in text.GENERIC_ANSWERS]


@dataclass(slots=True)
class _Branch:
    turns: Turns
    first: Comment
    first_sentences: list[str]
    last: Comment
    doctor: Person


class Designer:
    """Designed comment trees: dataset.md selects a known branch among them, or provably none."""

    def __init__(self, forge: Forge) -> None:
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

    def chain(self, node: Node, case: text.Case, op: Person, doctor: Person, steps: str) -> Comment:
        """Replies below `node`, one per letter: Q an OP follow-up, A the doctor's answer."""
        for step in steps:
            node = self.forge.reply(
                node, *((op, self.follow_up(case)) if step == "Q" else (doctor, self.answer(case)))
            )
        assert isinstance(node, Comment)
        return node

    def branch(self, post: Post, case: text.Case, op: Person, labels: str,
               extras: frozenset[str] = frozenset()) -> _Branch:  # fmt: skip
        """The designed path: a top-level physician answer, then one OP question per later label. An
        orphan inside the path is an OP reply to its own question or to a filtered answer."""
        rng, forge = self.rng, self.forge
        doctor = forge.physician(post.created)
        sentences = text.answer_sentences(rng, case, rng.randint(3, 6))
        first = node = forge.reply(post, doctor, " ".join(sentences))
        turns: Turns = [(post, first)]
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

    def thread(self, post: Post, case: text.Case, op: Person, plan: Plan) -> Turns:
        branch = self.branch(post, case, op, plan.labels, plan.extras)
        self.tail(post, case, op, branch, plan.tail)
        for name in sorted(plan.extras):
            if name in TIES:
                self.tie(name, post, case, op, branch)
            else:
                self.extra(name, post, case, op, branch)
        return branch.turns

    def tail(self, post: Post, case: text.Case, op: Person, branch: _Branch, kind: str) -> None:
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
            impostor = Person(op.name.swapcase(), forge.lay_flair(node.created))
            self.chain(forge.reply(node, impostor, text.follow_up(rng, case)), case, op, doctor, "A")
        elif kind == "filtered":
            forge.reply(node, doctor, self.filtered(case))
        elif kind == "short_physician":
            forge.reply(node, doctor, rng.choice(text.SHORT_PHYSICIAN))
        elif kind == "non_physician":
            self.chain(forge.reply(node, forge.professional(), self.answer(case)), case, op, doctor, "Q")

    def tie(self, name: str, post: Post, case: text.Case, op: Person, branch: _Branch) -> None:
        """A second path equal to the branch up to one tie-break of branch selection, which it loses."""
        rng, forge = self.rng, self.forge
        last_question = branch.turns[-1][0]
        if name == "tie_answered":  # OP double-posts under the first answer within a minute: as many
            node: Node = branch.first  # questions, fewer answers, an earlier last comment
            for step in range(1, len(branch.turns)):
                node = forge.reply(node, op, text.follow_up(rng, case), at=branch.first.created + 10 * step)
        elif name == "tie_questions":  # a prefix of the branch that ends on its last answer
            forge.tombstone([answer for _, answer in branch.turns if answer is not None][-1])
        elif name == "tie_jaccard":  # another physician, same words in another order, fewer answers
            echo = " ".join(rng.sample(branch.first_sentences, len(branch.first_sentences)))
            forge.reply(post, forge.physician(post.created, avoid=branch.doctor), echo)
        elif isinstance(last_question, Comment):  # OP asks the last question twice: later, or in the
            parent = last_question.parent or post  # same second (a double post, whose id is larger)
            if name == "tie_time":
                forge.reply(
                    parent, op, text.follow_up(rng, case), at=last_question.created + rng.randint(60, 7200)
                )
            else:
                forge.reply(parent, op, last_question.body, at=last_question.created)

    def extra(self, name: str, post: Post, case: text.Case, op: Person, branch: _Branch) -> None:
        """Side structures that compete with the branch and lose, or that the rules ignore."""
        rng, forge = self.rng, self.forge
        if name in ("distractor", "distractor_longer"):
            self.distractor(post, case, op, branch, longer=name == "distractor_longer")
        elif name == "discarded":
            self.discarded(post, case, op, branch)
        elif name == "automod":
            forge.automod(post)
        elif name == "lay_top":
            add_noise(forge, post, case, rng.randint(1, 4), physician_top=False)
        elif name == "side_tombstone":  # a deleted reply to an inner answer: its prefix path loses
            inner = [answer for _, answer in branch.turns if answer is not None and answer is not branch.last]
            forge.tombstone(rng.choice(inner))
        elif name == "side_lay":
            node = rng.choice([question for question, _ in branch.turns[1:]])
            forge.reply(node, forge.lay(node.created), text.lay_comment(rng, case), inert=True)

    def distractor(self, post: Post, case: text.Case, op: Person, branch: _Branch, longer: bool) -> None:
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

    def discarded(self, post: Post, case: text.Case, op: Person, branch: _Branch) -> None:
        """An on-topic branch in which OP deleted a follow-up: a tombstone inside, so it is dropped."""
        colleague = self.forge.physician(post.created, avoid=branch.doctor)
        first = self.forge.reply(post, colleague, text.answer(self.rng, case, 5))
        body = text.follow_up(self.rng, case) if self.rng.random() < 0.4 else "[deleted]"
        deleted = self.forge.tombstone(self.chain(first, case, op, colleague, "QA"), body)
        self.chain(deleted, case, op, colleague, "AQ")

    def near_miss(self, post: Post, case: text.Case, op: Person, kind: str) -> None:
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
            impostor = forge.reply(self.chain(question, case, op, doctor, "A"), Person(op.name.swapcase()),
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

    def mid_tombstone(self, case: text.Case, op: Person, doctor: Person, question: Comment) -> None:
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
