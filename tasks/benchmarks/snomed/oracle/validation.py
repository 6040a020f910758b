"""The validation of a teacher's reply: a pair is kept only when whole, lay and saying what its kind needs.

Reasons a pair is rejected (counted by reason, never written):
- `unparseable`: the reply is not one JSON object with a non-empty `question` and `answer` (a fenced
  ```json block is read; text around one object is not);
- `leak`: under `symptoms` disclosure the answer names a condition of the record or, for a negative pair,
  the asked condition (its display, a close variant or its code: the same check as interviews, leak.py);
- `positive_not_known`: a positive pair's answer says the patient does not know (answers.py);
- `negative_not_unsure`: a negative pair's answer does not say the patient does not know (a denial
  included: the paper teaches "I'm not sure", and the record's silence is no evidence of absence).
"""

import json
import re
from collections.abc import Mapping, Sequence
from typing import Literal, NamedTuple

from tasks.benchmarks.snomed.leak import find_leaks
from tasks.benchmarks.snomed.oracle.answers import answer_stance
from tasks.benchmarks.snomed.oracle.topics import PairKind
from tasks.benchmarks.snomed.patient import Disclosure

RejectReason = Literal["unparseable", "leak", "positive_not_known", "negative_not_unsure"]
_FENCE = re.compile(r"^```(?:json)?\s*\n(.*)\n```$", flags=re.DOTALL)


class TeacherPair(NamedTuple):
    question: str
    answer: str


class LeakNames(NamedTuple):
    """The conditions an answer must not name: codes, displays and the lexicon's extra names."""

    codes: Sequence[str]
    displays: Sequence[str]
    extra_names: Mapping[str, Sequence[str]]


def parse_teacher_reply(text: str | None) -> TeacherPair | None:
    """The question and answer of a reply, or None when it is not one JSON object holding both as text."""
    stripped = (text or "").strip()
    fenced = _FENCE.match(stripped)
    try:
        value = json.loads(fenced.group(1) if fenced else stripped)
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    question, answer = value.get("question"), value.get("answer")
    if not (isinstance(question, str) and isinstance(answer, str) and question.strip() and answer.strip()):
        return None
    return TeacherPair(question.strip(), answer.strip())


def rejection(
    pair: TeacherPair | None, kind: PairKind, disclosure: Disclosure, names: LeakNames
) -> RejectReason | None:
    """Why the pair is rejected, or None when it is kept (module docstring)."""
    if pair is None:
        return "unparseable"
    if disclosure == "symptoms" and find_leaks(pair.answer, names.codes, names.displays, names.extra_names):
        return "leak"
    stance = answer_stance(pair.answer)
    if kind == "positive" and stance == "not_known":
        return "positive_not_known"
    if kind == "negative" and stance != "not_known":
        return "negative_not_unsure"
    return None
