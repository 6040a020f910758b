"""The validation of a teacher's reply: a pair is kept only when whole, lay and saying what its kind needs.

Reasons a pair is rejected (counted by reason, never written):
- `unparseable`: the reply is not one JSON object with a non-empty `question` and `answer` (a fenced
  ```json block is read; text around one object is not; JSON nested deeper than json_text.MAX_DEPTH is
  not read);
- `leak`: the answer holds a run of 6 or more digits (where a SNOMED CT code could be: every prompt says
  never to write a medical code, whatever the disclosure) or, under `symptoms` disclosure, names any
  condition of the run's vocabulary, whether or not the record holds it (its display, a close variant or
  a lay-lexicon name: the interviews' leak check, leak.py, over the whole vocabulary). Under `history` the
  answer may name diagnoses (the patient was told them), so names are not checked there. A vocabulary code
  written in groups ("5962 1000") is a leak under any disclosure too;
- `unread`: under `symptoms`, the answer names nothing the check read but holds letters it cannot read
  (leak.unread_letters: a script other than Latin), so it is not known to be free of names;
- `positive_not_known`: a positive pair's answer says the patient does not know, or says both (answers.py);
- `negative_not_unsure`: a negative pair's answer does not say the patient does not know (a denial
  included: the paper teaches "I'm not sure", and the record's silence is no evidence of absence).
"""

import hashlib
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel

from tasks.benchmarks.snomed.leak import MIN_CODE_DIGITS, LeakMatcher, digit_run, unread_letters
from tasks.benchmarks.snomed.oracle.answers import answer_stance
from tasks.benchmarks.snomed.oracle.topics import PairKind
from tasks.benchmarks.snomed.patient import Disclosure
from tasks.benchmarks.snomed.vocabulary import VocabularyEntry
from tasks.core.json_text import scan_json, unique_keys

RejectReason = Literal["unparseable", "leak", "unread", "positive_not_known", "negative_not_unsure"]
_FENCE = "```"
_FENCE_OPENERS = frozenset({_FENCE, "```json"})
_JSON_WHITESPACE = " \t\n\r"


class TeacherPair(NamedTuple):
    question: str
    answer: str


class LeakNames(BaseModel, frozen=True):
    """The conditions no answer may name: the run's vocabulary (codes, displays), with the lay lexicon's
    extra names per code. Hashable, so its compiled matcher is built once per process (`leak_matcher`)."""

    codes: tuple[str, ...]
    displays: tuple[str, ...]
    extra_names: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()


def vocabulary_leak_names(
    vocabulary: Mapping[str, VocabularyEntry], extra_names: Mapping[str, Sequence[str]]
) -> LeakNames:
    """Every condition of `vocabulary`, in code order, with the extra names of its codes."""
    return LeakNames(
        codes=tuple(vocabulary),
        displays=tuple(entry.display for entry in vocabulary.values()),
        extra_names=tuple((code, tuple(extra_names[code])) for code in vocabulary if code in extra_names),
    )


@lru_cache(maxsize=4)
def leak_matcher(names: LeakNames) -> LeakMatcher:
    """The names compiled once: every case of a run validates against the same vocabulary."""
    return LeakMatcher(names.codes, names.displays, dict(names.extra_names))


def leak_check_facts(names: LeakNames, disclosure: Disclosure) -> dict[str, Any]:
    """What the leak check read, for the manifest and the dataset card."""
    return {
        "names_checked": disclosure == "symptoms",
        "conditions": len(names.codes),
        "names": leak_matcher(names).name_count,
        "min_digit_run": MIN_CODE_DIGITS,
        "leak_names_sha256": names.sha256,
    }


def parse_teacher_reply(text: str | None) -> TeacherPair | None:
    """The question and answer of a reply, or None when it is not one JSON object holding both as text, each
    key once (`{"answer": "I'm not sure.", "answer": "Yes, daily."}` says two answers). Total and linear in
    the reply's length (json_text.scan_json reads the object)."""
    body = _unfenced((text or "").strip())
    scan = scan_json(body, object_pairs_hook=unique_keys)
    # As json.loads reads a value: JSON whitespace, and only that, may surround it.
    value_span = (len(body) - len(body.lstrip(_JSON_WHITESPACE)), len(body.rstrip(_JSON_WHITESPACE)))
    whole = len(scan.found) == 1 and (scan.found[0].start, scan.found[0].end) == value_span
    if not whole or scan.too_deep or scan.stopped_at is not None or not isinstance(scan.found[0].value, dict):
        return None
    question, answer = scan.found[0].value.get("question"), scan.found[0].value.get("answer")
    if not (isinstance(question, str) and isinstance(answer, str) and question.strip() and answer.strip()):
        return None
    return TeacherPair(question.strip(), answer.strip())


def _unfenced(text: str) -> str:
    """The inside of a ``` or ```json fence that is the whole text, else the text."""
    opener, newline, rest = text.partition("\n")
    inside, _, closer = rest.rpartition("\n")
    return inside if newline and opener.rstrip() in _FENCE_OPENERS and closer == _FENCE else text


def answer_leaks(answer: str, disclosure: Disclosure, names: LeakNames) -> bool:
    """Whether the answer holds a digit run or a vocabulary code in groups (any disclosure: every vocabulary
    code is one) or, under `symptoms`, names a condition of `names` (module docstring)."""
    if digit_run(answer) is not None:
        return True
    hits = leak_matcher(names).hits(answer)
    return any(hit.name == hit.code for hit in hits) or (disclosure == "symptoms" and bool(hits))


def rejection(
    pair: TeacherPair | None, kind: PairKind, disclosure: Disclosure, names: LeakNames
) -> RejectReason | None:
    """Why the pair is rejected, or None when it is kept (module docstring)."""
    if pair is None:
        return "unparseable"
    if answer_leaks(pair.answer, disclosure, names):
        return "leak"
    if disclosure == "symptoms" and unread_letters(pair.answer):
        return "unread"
    stance = answer_stance(pair.answer)
    if kind == "positive" and stance in ("not_known", "mixed"):
        return "positive_not_known"
    if kind == "negative" and stance != "not_known":
        return "negative_not_unsure"
    return None
