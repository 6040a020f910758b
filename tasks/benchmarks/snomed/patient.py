"""The offline patient: answers a clinician's question from the case record, in lay words, deterministically.

The question is matched against a versioned lay lexicon (data/lay_lexicon_v<N>.yaml) of condition codes and
observation kinds; the best one or two matches are answered, one short sentence each (with a sentence saying
there is more when more matched), and "I'm not sure." when nothing in the record matches. Medicines and
allergies are all named, or denied only when the record holds the section (None: the source does not say).
Disclosure `symptoms` never names a diagnosis (the lexicon's sentences are checked against the leak check
in the tests); `history` adds what the patient was told it was. The same sentences are the LLM patient's
conditions in its `lay` prompt form (`lay_conditions`).
"""

import re
from collections.abc import Sequence
from datetime import date
from functools import cache
from importlib import resources
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, Field, field_validator, model_validator

from tasks.benchmarks.snomed.case import PatientRecord, RecordCondition, RecordObservation
from tasks.benchmarks.snomed.leak import normalise_display
from tasks.core.files import safe_load_yaml

Disclosure = Literal["symptoms", "history"]
# How the LLM patient's prompt shows its conditions: `lay`, the lexicon's lay sentences (names only where the
# disclosure allows them); `named`, the record's condition names (the form before lay sentences existed).
PatientPromptForm = Literal["lay", "named"]
NOT_SURE = "I'm not sure."
MAX_ANSWERED_ITEMS = 2
# Follows the first MAX_ANSWERED_ITEMS sentences when more matched: a finding left out of a short answer
# must not read as denied, and a question about it alone gets its sentence.
MORE_TO_TELL = "There's more, too; ask me about one thing at a time."
MAX_NAMED_DIAGNOSES = 3
LEXICON_VERSION = 1
_WORD = re.compile(r"[a-z0-9]+")
_NUMBER = re.compile(r"-?\d+(\.\d+)?")
_LAY_UNITS = {"[degF]": "°F", "Cel": "°C"}
_HISTORY_KEYWORDS = ("diagnos", "condition", "medical history", "health problem", "illness")
_MEDICATION_KEYWORDS = ("medic", "pill", "tablet", "prescri", "drug")
_ALLERGY_KEYWORDS = ("allerg",)
_AGE_KEYWORDS = ("how old", "your age")


class ConditionEntry(BaseModel, frozen=True):
    """How a patient with one condition code talks about it; `names` are extra leak names."""

    display: str
    keywords: tuple[str, ...] = Field(min_length=1)
    symptoms: str
    names: tuple[str, ...] = ()

    @field_validator("symptoms")
    @classmethod
    def _one_sentence(cls, sentence: str) -> str:
        if not sentence.endswith(".") or sentence.count(". ") > 0:
            raise ValueError(f"symptoms must be one sentence ending with '.': {sentence!r}")
        return sentence


class ObservationEntry(BaseModel, frozen=True):
    """One observation kind: `slots` are the LOINC codes (alternatives) filling `reply`'s {0}, {1}, ...

    `categories` answer a text value instead: the first key found in the lower-cased value wins.
    """

    keywords: tuple[str, ...] = Field(min_length=1)
    slots: tuple[tuple[str, ...], ...] = Field(min_length=1)
    reply: str
    categories: dict[str, str] = {}


class Lexicon(BaseModel, frozen=True):
    version: int
    conditions: dict[str, ConditionEntry]
    observations: dict[str, ObservationEntry]

    @model_validator(mode="after")
    def _codes_and_sentences(self) -> "Lexicon":
        bad_codes = [code for code in self.conditions if not code.isdigit()]
        if bad_codes:
            raise ValueError(f"condition codes must be SNOMED ids: {bad_codes}")
        sentences = [entry.symptoms for entry in self.conditions.values()]
        repeated = sorted({s for s in sentences if sentences.count(s) > 1})
        if repeated:
            # The checklist clinician reads a sentence back to its code: it must name one code only.
            raise ValueError(f"symptom sentences must be unique: {repeated}")
        return self


class _Match(NamedTuple):
    score: int
    rank: int
    sentence: str


def parse_lexicon(text: str) -> Lexicon:
    """Validate a lexicon's YAML text."""
    return Lexicon.model_validate(safe_load_yaml(text))


@cache
def load_lexicon(version: int = LEXICON_VERSION) -> Lexicon:
    """The lexicon shipped with the package (read once)."""
    path = resources.files("tasks.benchmarks.snomed") / "data" / f"lay_lexicon_v{version}.yaml"
    return parse_lexicon(path.read_text(encoding="utf-8"))


def leak_names_by_code(lexicon: Lexicon) -> dict[str, tuple[str, ...]]:
    """The lexicon's extra leak names per condition code, for `leak.find_leaks`."""
    return {code: entry.names for code, entry in lexicon.conditions.items() if entry.names}


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _word_matches(keyword_word: str, word: str) -> bool:
    # Short keywords ("ear") match whole words only, or "earlier" would be about ears.
    if len(keyword_word) >= 4:
        return word.startswith(keyword_word)
    return word in (keyword_word, keyword_word + "s")


def keyword_score(keywords: Sequence[str], question: str) -> int:
    """Total length of the keywords found in the question (longer, more specific keywords weigh more)."""
    words = _words(question)
    score = 0
    for keyword in keywords:
        parts = _words(keyword)
        for start in range(len(words) - len(parts) + 1):
            if all(_word_matches(p, w) for p, w in zip(parts, words[start:], strict=False)):
                score += len(keyword)
                break
    return score


def _is_active(episodes: Sequence[RecordCondition], reference_date: date | None) -> bool:
    return any(e.stop is None or (reference_date is not None and e.stop > reference_date) for e in episodes)


def _condition_sentence(entry: ConditionEntry, display: str, active: bool, disclosure: Disclosure) -> str:
    if disclosure == "symptoms":
        return entry.symptoms if active else f"{entry.symptoms[:-1]}, but that has cleared up now."
    cleared = "" if active else ", and it has cleared up now"
    return f"{entry.symptoms[:-1]}; I was told it was {normalise_display(display)}{cleared}."


def _episodes(record: PatientRecord) -> dict[str, list[RecordCondition]]:
    """The record's conditions by code, in record order (Synthea repeats a code once per episode)."""
    episodes: dict[str, list[RecordCondition]] = {}
    for condition in record.conditions:
        episodes.setdefault(condition.code, []).append(condition)
    return episodes


def _condition_matches(
    record: PatientRecord, question: str, lexicon: Lexicon, disclosure: Disclosure
) -> list[_Match]:
    matches = []
    for rank, (code, code_episodes) in enumerate(_episodes(record).items()):
        entry = lexicon.conditions.get(code)
        score = keyword_score(entry.keywords, question) if entry else 0
        if entry and score:
            active = _is_active(code_episodes, record.reference_date)
            sentence = _condition_sentence(entry, code_episodes[-1].display, active, disclosure)
            matches.append(_Match(score, rank, sentence))
    return matches


class LayConditions(NamedTuple):
    """The record's conditions as the patient tells them, and the codes the lexicon has no words for."""

    sentences: tuple[str, ...]
    undescribed_codes: tuple[str, ...]


def lay_conditions(record: PatientRecord, disclosure: Disclosure, lexicon: Lexicon) -> LayConditions:
    """One sentence per condition code, the offline patient's own; a code without a lexicon entry is left out
    under `symptoms` (there are no lay words to give it) and told by name under `history`."""
    sentences, undescribed = [], []
    for code, code_episodes in _episodes(record).items():
        entry, display = lexicon.conditions.get(code), code_episodes[-1].display
        active = _is_active(code_episodes, record.reference_date)
        if entry is not None:
            sentences.append(_condition_sentence(entry, display, active, disclosure))
            continue
        undescribed.append(code)
        if disclosure == "history":
            cleared = "" if active else ", and it has cleared up now"
            sentences.append(f"I was told I have {normalise_display(display)}{cleared}.")
    return LayConditions(tuple(sentences), tuple(undescribed))


def _format_value(value: str) -> str:
    if _NUMBER.fullmatch(value.strip()):
        return f"{round(float(value), 1):g}"
    return normalise_display(value)


def _observation_sentence(entry: ObservationEntry, observations: dict[str, RecordObservation]) -> str | None:
    found = [next((observations[c] for c in slot if c in observations), None) for slot in entry.slots]
    if any(observation is None for observation in found):
        return None
    first = found[0]
    assert first is not None
    text_value = first.value.lower()
    for category, reply in entry.categories.items():
        if category in text_value:
            return reply
    unit = _LAY_UNITS.get(first.unit or "", first.unit or "")
    return entry.reply.format(*(_format_value(o.value) for o in found if o is not None), unit=unit)


def _observation_matches(
    record: PatientRecord, question: str, lexicon: Lexicon, first_rank: int
) -> list[_Match]:
    observations = {observation.code: observation for observation in record.observations}
    matches = []
    for rank, entry in enumerate(lexicon.observations.values(), start=first_rank):
        score = keyword_score(entry.keywords, question)
        sentence = _observation_sentence(entry, observations) if score else None
        if sentence:
            matches.append(_Match(score, rank, sentence))
    return matches


def _listed(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _first_diagnoses(names: Sequence[str]) -> list[str]:
    """The first MAX_NAMED_DIAGNOSES names and a count of the rest, so a long list never reads as whole."""
    others = len(names) - MAX_NAMED_DIAGNOSES
    if others <= 0:
        return list(names)
    return [*names[:MAX_NAMED_DIAGNOSES], f"{others} other condition{'s' if others > 1 else ''}"]


def _record_matches(
    record: PatientRecord, question: str, disclosure: Disclosure, first_rank: int
) -> list[_Match]:
    """Answers about the record as a whole: diagnoses (history only), medicines and allergies (each only
    when the record holds the section, every item named: safety facts), age."""
    answers = []
    names = list(dict.fromkeys(normalise_display(c.display) for c in record.conditions))
    if disclosure == "history" and names:
        answers.append((_HISTORY_KEYWORDS, f"I was told I have {_listed(_first_diagnoses(names))}."))
    if record.medications is not None:
        medicines = [normalise_display(m.display) for m in record.medications]
        answers.append(
            (
                _MEDICATION_KEYWORDS,
                f"I take {_listed(medicines)}." if medicines else "I don't take any regular medicines.",
            )
        )
    if record.allergies is not None:
        allergies = [normalise_display(a.display) for a in record.allergies]
        answers.append(
            (
                _ALLERGY_KEYWORDS,
                f"I'm allergic to {_listed(allergies)}."
                if allergies
                else "I have no allergies that I know of.",
            )
        )
    if record.age_years is not None:
        answers.append((_AGE_KEYWORDS, f"I'm {record.age_years}."))
    matches = []
    for rank, (keywords, sentence) in enumerate(answers, start=first_rank):
        score = keyword_score(keywords, question)
        if score:
            matches.append(_Match(score, rank, sentence))
    return matches


def answer_question(
    record: PatientRecord,
    question: str,
    *,
    disclosure: Disclosure = "symptoms",
    lexicon: Lexicon | None = None,
) -> str:
    """The patient's reply: the best matching one or two sentences from the record (and MORE_TO_TELL when
    more matched), else "I'm not sure."

    Best = highest keyword score, then conditions in record order, then observations, then the record.
    """
    lexicon = lexicon or load_lexicon()
    conditions = _condition_matches(record, question, lexicon, disclosure)
    observations = _observation_matches(record, question, lexicon, first_rank=len(record.conditions))
    whole_record = _record_matches(
        record, question, disclosure, first_rank=len(record.conditions) + len(lexicon.observations)
    )
    ranked = sorted(conditions + observations + whole_record, key=lambda match: (-match.score, match.rank))
    sentences = list(dict.fromkeys(match.sentence for match in ranked))
    if len(sentences) > MAX_ANSWERED_ITEMS:
        sentences = [*sentences[:MAX_ANSWERED_ITEMS], MORE_TO_TELL]
    return " ".join(sentences) if sentences else NOT_SURE


def offline_patient_reply(messages: Sequence[dict[str, Any]], params: dict[str, Any]) -> str:
    """The offline patient as an offline model: its record comes in the request params, the question last."""
    question = next(str(m["content"]) for m in reversed(messages) if m["role"] == "user")
    record = PatientRecord.model_validate_json(params["record"])
    return answer_question(record, question, disclosure=params.get("disclosure", "symptoms"))
