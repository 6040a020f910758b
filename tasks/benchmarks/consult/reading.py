"""What the agent wrote, read fail-closed: the solver (whether to re-ask) and the scorer (what to score)
read every reply through these, so that both see the same thing.

A reader that raises on a reply (a parser bug: 3,000 `[` once hit the recursion limit) does not fail the
episode: the reply is unparseable, like any reply no value can be read from, and the error is kept, named
(`ReadReply.error`), so the scores say which parser broke on what. Only a failed call fails an episode.
"""

from collections.abc import Callable
from typing import Generic, NamedTuple, TypeVar

from tasks.benchmarks.consult.episode import DiagnosisItem, TreatmentPlan
from tasks.benchmarks.consult.kb.loading import KnowledgeBase
from tasks.benchmarks.consult.metrics import parse_differential
from tasks.benchmarks.consult.treatment import is_plan_attempt, parse_plan

Value = TypeVar("Value")
ERROR_CHARS = 200  # an exception's message can quote the whole reply; its start names it well enough


class ReadReply(NamedTuple, Generic[Value]):
    value: Value | None  # None: unparseable
    error: str | None = None  # what the reader raised ("RecursionError: maximum recursion ..."), if it did


def read_reply(reader: Callable[[str], Value | None], text: str) -> ReadReply[Value]:
    """`reader(text)`, with any exception it raises turned into an unparseable reply naming the error."""
    try:
        return ReadReply(reader(text))
    except Exception as error:  # any parser bug, whatever it raises, leaves the reply unread
        return ReadReply(None, f"{type(error).__name__}: {error}"[:ERROR_CHARS])


def read_differential(
    text: str, kb: KnowledgeBase, threshold: float, finish_reason: str | None = None
) -> ReadReply[tuple[DiagnosisItem, ...]]:
    """The differential of a reply; one cut at max_tokens (finish_reason 'length') is unparseable whatever
    it reads as: the list read may have gone on, or a second one been cut off."""
    if finish_reason == "length":
        return ReadReply(None)
    return read_reply(lambda reply: parse_differential(reply, kb, threshold), text)


def read_plan(text: str, kb: KnowledgeBase, finish_reason: str | None = None) -> ReadReply[TreatmentPlan]:
    """The plan of a reply; one cut at max_tokens (finish_reason 'length') is unparseable whatever it reads
    as: the plan read may be the first of two, the second cut off."""
    if finish_reason == "length":
        return ReadReply(None)
    return read_reply(lambda reply: parse_plan(reply, kb), text)


def reads_as_plan_attempt(text: str, kb: KnowledgeBase, plan: TreatmentPlan | None) -> bool:
    """Whether a follow-up answer tries to give a revised plan (`is_plan_attempt`, `plan` the plan in force);
    a reply the check raises on is taken as an attempt, so that its plan is read (and found unparseable),
    not skipped."""
    attempt = read_reply(lambda reply: is_plan_attempt(reply, kb, plan), text)
    return attempt.value is not False  # True, or None when the check raised
