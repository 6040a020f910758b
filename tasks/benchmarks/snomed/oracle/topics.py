"""What each training pair of a case is about: positive topics the record holds, negative ones it lacks.

Positive topics are the facts the served patient prompt shows (oracle_patient_v1 with the record in its lay
form, interview.record_text): the conditions with a lay sentence in the lay lexicon (every condition under
`history`), then the lexicon's observation kinds the record has a value for; seeded order, conditions first,
as the paper's pairs are "related to the patient's known conditions". A pair about a fact missing from the
prompt would teach the oracle to invent it.

Negative topics are conditions of the vocabulary (every condition code Synthea can emit) that the record
does not hold, drawn with a seed among disorders and findings. A lexicon condition that shares a keyword
with a fact of the record is left out: asking about it is asking about what the record holds ("nose" for a
patient with another sinus condition), so "I'm not sure" would be the wrong answer to teach.
"""

import random
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel

from tasks.benchmarks.snomed.case import PatientRecord
from tasks.benchmarks.snomed.patient import Disclosure, Lexicon, keyword_score, lay_conditions
from tasks.benchmarks.snomed.vocabulary import VocabularyEntry

PairKind = Literal["positive", "negative"]
Subject = Literal["condition", "observation"]
NEGATIVE_TAGS = frozenset({"disorder", "finding"})


class PairTopic(BaseModel, frozen=True):
    """One pair's topic: a condition code or an observation kind of the lexicon, and its display."""

    kind: PairKind
    subject: Subject
    topic: str
    display: str


def observation_kinds(record: PatientRecord, lexicon: Lexicon) -> list[str]:
    """The lexicon's observation kinds the record has every value of, in lexicon order."""
    codes = {observation.code for observation in record.observations}
    return [
        kind
        for kind, entry in lexicon.observations.items()
        if all(any(code in codes for code in slot) for slot in entry.slots)
    ]


def described_conditions(record: PatientRecord, disclosure: Disclosure, lexicon: Lexicon) -> dict[str, str]:
    """The record's condition codes the patient prompt describes, with their displays, in record order."""
    undescribed = set(lay_conditions(record, disclosure, lexicon).undescribed_codes)
    described = {c.code: c.display for c in record.conditions if c.code not in undescribed}
    return described if disclosure == "symptoms" else {c.code: c.display for c in record.conditions}


def positive_topics(
    record: PatientRecord, disclosure: Disclosure, lexicon: Lexicon, count: int, rng: random.Random | None
) -> list[PairTopic]:
    """Up to `count` topics the record holds: its described conditions, then its observation kinds, each
    shuffled by `rng` (None: record and lexicon order)."""
    conditions = [
        PairTopic(kind="positive", subject="condition", topic=code, display=display)
        for code, display in described_conditions(record, disclosure, lexicon).items()
    ]
    observations = [
        PairTopic(kind="positive", subject="observation", topic=kind, display=kind.replace("_", " "))
        for kind in observation_kinds(record, lexicon)
    ]
    if rng is not None:
        rng.shuffle(conditions)
        rng.shuffle(observations)
    return (conditions + observations)[:count]


def record_keywords(record: PatientRecord, lexicon: Lexicon) -> list[str]:
    """Every lexicon keyword that brings up a fact of the record (its conditions and observation kinds)."""
    keywords = [
        kw
        for c in record.conditions
        if c.code in lexicon.conditions
        for kw in lexicon.conditions[c.code].keywords
    ]
    return keywords + [
        kw for kind in observation_kinds(record, lexicon) for kw in lexicon.observations[kind].keywords
    ]


def negative_candidates(
    record: PatientRecord, vocabulary: Mapping[str, VocabularyEntry], lexicon: Lexicon
) -> list[VocabularyEntry]:
    """The vocabulary's disorders and findings the record lacks and does not touch (module docstring)."""
    held = {condition.code for condition in record.conditions}
    keywords = record_keywords(record, lexicon)

    def touches_record(code: str) -> bool:
        entry = lexicon.conditions.get(code)
        return entry is not None and any(keyword_score(keywords, kw) for kw in entry.keywords)

    return [
        entry
        for code, entry in sorted(vocabulary.items())
        if code not in held and entry.semantic_tag in NEGATIVE_TAGS and not touches_record(code)
    ]


def negative_topics(candidates: Sequence[VocabularyEntry], count: int, rng: random.Random) -> list[PairTopic]:
    """`count` conditions drawn from the candidates (fewer when there are fewer)."""
    drawn = rng.sample(list(candidates), min(count, len(candidates)))
    return [PairTopic(kind="negative", subject="condition", topic=e.code, display=e.display) for e in drawn]


def case_rng(seed: int, case_id: str) -> random.Random:
    """The random draws of one case: the same for a case whatever the other cases of the set."""
    return random.Random(f"{seed}:{case_id}")
