"""The process-aware patient: answers a consultation agent's questions from one case, deterministically.

Each question is mapped to its nearest question template (`TemplateSpace.match`); the case AIUs of that
template not yet revealed are revealed (all of them, or the first `per_turn` in case order) and answered
with their KB response patterns: `positive` filled with the value when the AIU is present, `negative` when
it is ruled out. A question matching no template gets "I'm not sure."; a matched template with nothing
left to reveal gets "No, nothing like that." when the case has nothing present under it (no AIU, or only
ruled-out ones) and the whole question was read, and "I'm not sure." otherwise: asked again after a
present finding was revealed, a "No" would deny it (spec: The episode, 1); with a word outside the template
space's vocabulary ("Any cuogh how long?"), the "No" would deny what the patient never read. The revealed
set is kept across turns.
"""

import functools
from collections.abc import Sequence
from typing import NamedTuple

from tasks.benchmarks.consult.case import CaseAiu, ConsultCase
from tasks.benchmarks.consult.inquiry.templates import TemplateSpace, load_catalogue
from tasks.benchmarks.consult.kb.loading import KnowledgeBase, load_kb
from tasks.benchmarks.consult.kb.models import AiuType, Condition
from tasks.benchmarks.consult.kb.names import normalise_text

NOT_SURE = "I'm not sure."
NOTHING_LIKE_THAT = "No, nothing like that."
DEFAULT_THRESHOLD = 0.3


class SimulatorReply(NamedTuple):
    text: str
    template: str | None  # None: the question matched no template
    revealed: tuple[str, ...]  # AIU ids revealed for the first time by this question
    deflected: bool


def aiu_sentence(aiu_type: AiuType, aiu: CaseAiu) -> str:
    """The patient's sentence for one case AIU: the lay positive reply with its value, or the negative."""
    if not aiu.present:
        return aiu_type.negative
    return aiu_type.positive.replace("{value}", aiu.value or "")


def diagnosis_names(condition: Condition) -> tuple[str, ...]:
    """Every name a reply must not say for this condition: its title and synonyms."""
    return (condition.title, *condition.synonyms)


def names_a_diagnosis(text: str, names: Sequence[str]) -> bool:
    """Whether `text` contains one of `names` as whole words (case and punctuation ignored)."""
    padded = f" {normalise_text(text)} "
    return any(f" {normalise_text(name)} " in padded for name in names if normalise_text(name))


class Simulator:
    """One case's patient. `answer` changes the revealed set; everything else is fixed at construction.

    `threshold` (default: the space's own) is the least cosine at which a question matches its nearest
    template; the space never returns a template under its own threshold, so it cannot be lower.
    """

    def __init__(
        self,
        case: ConsultCase,
        kb: KnowledgeBase,
        space: TemplateSpace,
        threshold: float | None = None,
        per_turn: int | None = None,
    ):
        if threshold is not None and threshold < space.threshold:
            raise ValueError(f"threshold {threshold} is under the template space's own ({space.threshold})")
        if per_turn is not None and per_turn < 1:
            raise ValueError(f"per_turn must be at least 1, got {per_turn}")
        self.case = case
        self.space = space
        self.threshold = space.threshold if threshold is None else threshold
        self.per_turn = per_turn
        self.revealed: set[str] = set()
        # Sentences are rendered once: a turn is then a template match and a few set operations.
        self._by_template: dict[str, list[tuple[str, str]]] = {}
        for aiu in case.aius:
            aiu_type = kb.aiu_type(aiu.aiu_id)
            if aiu_type is None:
                raise ValueError(f"case {case.case_id}: unknown AIU type '{aiu.aiu_id}'")
            self._by_template.setdefault(aiu.template, []).append((aiu.aiu_id, aiu_sentence(aiu_type, aiu)))
        self._templates_with_findings = {aiu.template for aiu in case.aius if aiu.present}

    def opening(self) -> str:
        return self.case.opening

    def answer(self, question: str) -> SimulatorReply:
        template, cosine = self.space.match(question)
        if template is None or cosine < self.threshold:
            return SimulatorReply(NOT_SURE, None, (), True)
        pending = [item for item in self._by_template.get(template, ()) if item[0] not in self.revealed]
        if not pending:
            told_or_unread = template in self._templates_with_findings or self.space.unread_terms(question)
            deflection = NOT_SURE if told_or_unread else NOTHING_LIKE_THAT
            return SimulatorReply(deflection, template, (), True)
        released = pending[: self.per_turn] if self.per_turn else pending
        self.revealed.update(aiu_id for aiu_id, _ in released)
        text = " ".join(sentence for _, sentence in released)
        return SimulatorReply(text, template, tuple(aiu_id for aiu_id, _ in released), False)


@functools.cache
def default_space(catalogue_version: str = "v1", threshold: float = DEFAULT_THRESHOLD) -> TemplateSpace:
    """The shipped catalogue's TF-IDF space, built once per process (its match cache is shared too)."""
    return TemplateSpace(load_catalogue(catalogue_version), threshold=threshold)


def replay(
    case: ConsultCase,
    questions: Sequence[str],
    kb: KnowledgeBase | None = None,
    space: TemplateSpace | None = None,
    threshold: float | None = None,
    per_turn: int | None = None,
) -> list[SimulatorReply]:
    """A fresh simulator's replies to `questions` in order (default: the shipped KB and template space)."""
    simulator = Simulator(case, kb or load_kb(), space or default_space(), threshold, per_turn)
    return [simulator.answer(question) for question in questions]
