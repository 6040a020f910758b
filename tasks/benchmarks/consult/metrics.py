"""Scores of the consultation benchmark's history and diagnosis stages, and the readers of the agent's
ready line and differential. Pure functions of the case, the recorded episode, the KB and the policy
(the treatment and follow-up stages: metrics_plan.py).

Definitions the spec leaves open, fixed here (spec: shared/spec/consult.md, "Metrics"):
- M is the case's `mni_target`; w(u) = 2 when u is in the MNI set of one of the case's core diagnoses (the
  KB's), else 1. A metric measured against M (MNI-Comp, IGE, CPRw) is None when M is empty.
- A template is *core-linked* when it is the KB template of any AIU type in a core diagnosis's evidence
  (supporting or ruling out).
- Hit@1 asks the policy for the top k after the last *matched* template before the turn (START if none);
  a turn matching no template is a miss of weight 1. Hit@1, CPRw and the deflection rate are None when no
  question was asked; IGE is 0 then; POVR is None when no partial-order pair applies. So a history with
  no question, or only questions matching no template, scores 0 as a stage (with M not empty): MNI-Comp
  and IGE 0, and CPRw 1 and Hit@1 0 when it asked.
- Red-flag coverage counts the case's AIUs tagged `red_flag`, present or ruled out.
- A differential listing a condition twice counts it once, at its best rank; unmatched items are told
  apart by their normalised name.
- A differential that did not parse (after the re-ask, or whose reader raised) is unread, not empty: it
  scores the worst value of every metric (`UNREAD_DIFFERENTIAL_SCORES`: recall, F1, SWDS and top-1 0,
  unmatched rate 1), and the diagnosis stage 0. An empty list that parsed finds nothing (recall, F1, SWDS,
  top-1 0) and has no item to be unmatched.
"""

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from tasks.benchmarks.consult.case import ConsultCase
from tasks.benchmarks.consult.episode import DiagnosisItem, Episode, HistoryTurn
from tasks.benchmarks.consult.inquiry.policy import InquiryPolicy, order_violations
from tasks.benchmarks.consult.kb.icd11 import DEFAULT_THRESHOLD, normalise_diagnosis
from tasks.benchmarks.consult.kb.loading import KnowledgeBase
from tasks.benchmarks.consult.kb.names import normalise_text
from tasks.core.json_text import scan_json, unique_keys

GAMMA = 0.95
TOP_K = 3
# The history-stage end marker (the agent prompt asks for it): anywhere in the reply, case-insensitive, any
# spaces inside the angle brackets; without the brackets only as a line of its own, so that "I am not ready
# to diagnose yet" asks on.
READY_MARKER = "<Ready to diagnose>"
# Possessive repeats and no whitespace run before a line's start: a reply of 20,000 line breaks took 1.6 s
# when `^\s*` could start at each of them and scan all the others.
_READY = re.compile(
    r"<\s*+ready\s++to\s++diagnose\s*+>|^[ \t]*+ready\s++to\s++diagnose[ \t\r]*+[.!]?[ \t\r]*+$",
    re.IGNORECASE | re.MULTILINE,
)
_FENCE = "```"
# The keys a diagnosis object may hold (spec: The episode, 2).
_DIAGNOSIS_KEYS = frozenset({"diagnosis", "icd11", "core", "rationale"})


class HistoryScores(NamedTuple):
    mni_comp: float | None
    cprw: float | None
    ige: float | None
    hit_at_1: float | None
    povr: float | None
    questions_asked: int
    deflection_rate: float | None
    red_flag_coverage: float | None


class DiagnosisScores(NamedTuple):
    core_dx_recall: float | None
    core_dx_f1: float | None
    swds: float | None
    top1_accuracy: float
    differential_length: int
    unmatched_rate: float | None


# The diagnosis stage of a differential that did not parse: the worst value of every metric.
UNREAD_DIFFERENTIAL_SCORES = DiagnosisScores(
    core_dx_recall=0.0, core_dx_f1=0.0, swds=0.0, top1_accuracy=0.0, differential_length=0, unmatched_rate=1.0
)


def core_mni_aius(case: ConsultCase, kb: KnowledgeBase) -> frozenset[str]:
    """The AIU ids in the KB MNI set of any core diagnosis of the case: those weigh 2."""
    conditions = (kb.condition(gold.condition_id) for gold in case.core_gold)
    return frozenset(aiu for condition in conditions if condition is not None for aiu in condition.mni)


def core_linked_templates(case: ConsultCase, kb: KnowledgeBase) -> frozenset[str]:
    """The templates of the AIU types in any core diagnosis's evidence."""
    templates = set()
    for gold in case.core_gold:
        condition = kb.condition(gold.condition_id)
        for evidence in condition.evidence if condition is not None else ():
            aiu_type = kb.aiu_type(evidence.aiu)
            if aiu_type is not None:
                templates.add(aiu_type.template)
    return frozenset(templates)


def first_reveal_turns(turns: Sequence[HistoryTurn]) -> dict[str, int]:
    """AIU id -> the turn that first revealed it."""
    first: dict[str, int] = {}
    for turn in turns:
        for aiu in turn.revealed:
            first.setdefault(aiu, turn.turn)
    return first


def mni_completeness(
    turns: Sequence[HistoryTurn], weights: Mapping[str, float], gamma: float = GAMMA
) -> float | None:
    """MNI-Comp: sum over u in M of w(u) * [u revealed] * gamma^(t_u - 1) / sum of w(u), w given on M."""
    if not weights:
        return None
    first = first_reveal_turns(turns)
    gained = sum(w * gamma ** (first[u] - 1) for u, w in weights.items() if u in first)
    return gained / sum(weights.values())


def information_gain_efficiency(turns: Sequence[HistoryTurn], weights: Mapping[str, float]) -> float | None:
    """IGE: weighted share of M revealed, divided by T, times min(T, |M|); 0 when nothing was asked."""
    if not weights:
        return None
    if not turns:
        return 0.0
    first = first_reveal_turns(turns)
    coverage = sum(w for u, w in weights.items() if u in first) / sum(weights.values())
    return coverage / len(turns) * min(len(turns), len(weights))


def redundancy_rate(
    turns: Sequence[HistoryTurn], mni_target: frozenset[str], linked: frozenset[str]
) -> float | None:
    """CPRw: weighted share of questions revealing no new MNI AIU; core-linked templates weigh 2."""
    if not mni_target or not turns:
        return None
    seen: set[str] = set()
    redundant = total = 0.0
    for turn in turns:
        weight = 2.0 if turn.template in linked else 1.0
        new_mni = {aiu for aiu in turn.revealed if aiu in mni_target} - seen
        seen |= new_mni
        total += weight
        redundant += weight * (not new_mni)
    return redundant / total


def hit_at_1(
    turns: Sequence[HistoryTurn], policy: InquiryPolicy, linked: frozenset[str], k: int = TOP_K
) -> float | None:
    """Hit@1: weighted share of turns whose template is in the policy's top k after the previous one."""
    if not turns:
        return None
    previous: str | None = None  # START
    hits = total = 0.0
    for turn in turns:
        weight = 2.0 if turn.template in linked else 1.0
        total += weight
        if turn.template is not None:
            hits += weight * (turn.template in policy.top_k_next(previous, k))
            previous = turn.template
    return hits / total


def order_violation_rate(turns: Sequence[HistoryTurn], policy: InquiryPolicy) -> float | None:
    """POVR: share of the applicable partial-order pairs asked in the wrong order; None when none applies."""
    sequence = [turn.template for turn in turns if turn.template is not None]
    violated, applicable = order_violations(sequence, policy.partial_orders)
    return violated / applicable if applicable else None


def score_history(
    case: ConsultCase,
    episode: Episode,
    kb: KnowledgeBase,
    policy: InquiryPolicy,
    *,
    gamma: float = GAMMA,
    k: int = TOP_K,
) -> HistoryScores:
    """The history-stage metrics of one episode (primary and secondary)."""
    turns = episode.turns
    core_mni = core_mni_aius(case, kb)
    weights = {aiu: 2.0 if aiu in core_mni else 1.0 for aiu in case.mni_target}
    linked = core_linked_templates(case, kb)
    red_flags = {aiu.aiu_id for aiu in case.aius if "red_flag" in aiu.safety}
    revealed = set(first_reveal_turns(turns))
    return HistoryScores(
        mni_comp=mni_completeness(turns, weights, gamma),
        cprw=redundancy_rate(turns, frozenset(weights), linked),
        ige=information_gain_efficiency(turns, weights),
        hit_at_1=hit_at_1(turns, policy, linked, k),
        povr=order_violation_rate(turns, policy),
        questions_asked=len(turns),
        deflection_rate=sum(turn.deflected for turn in turns) / len(turns) if turns else None,
        red_flag_coverage=len(red_flags & revealed) / len(red_flags) if red_flags else None,
    )


def best_ranks(items: Sequence[DiagnosisItem]) -> dict[str, int]:
    """Matched condition id -> its best (lowest) rank in the differential."""
    ranks: dict[str, int] = {}
    for item in items:
        if item.condition_id is not None:
            ranks[item.condition_id] = min(item.rank, ranks.get(item.condition_id, item.rank))
    return ranks


def score_diagnosis(case: ConsultCase, episode: Episode) -> DiagnosisScores:
    """The diagnosis-stage metrics of one episode; the worst when the differential did not parse."""
    if episode.diagnosis_parse != "ok":
        return UNREAD_DIFFERENTIAL_SCORES
    items = sorted(episode.differential, key=lambda item: item.rank)
    gold_core = {gold.condition_id for gold in case.core_gold}
    # An unmatched item is told apart by its name; ':' never occurs in a KB condition id.
    agent_core = {
        item.condition_id or "unmatched:" + normalise_text(item.diagnosis) for item in items if item.core
    }
    true_positives = len(gold_core & agent_core)
    false_negatives = len(gold_core - agent_core)
    false_positives = len(agent_core - gold_core)
    f1_denominator = 2 * true_positives + false_positives + false_negatives
    ranks = best_ranks(items)
    gained = sum(
        g.severity / math.log2(1 + ranks[g.condition_id]) for g in case.gold if g.condition_id in ranks
    )
    severities = sorted((gold.severity for gold in case.gold), reverse=True)
    ideal = sum(severity / math.log2(1 + rank) for rank, severity in enumerate(severities, start=1))
    return DiagnosisScores(
        core_dx_recall=true_positives / len(gold_core) if gold_core else None,
        core_dx_f1=2 * true_positives / f1_denominator if f1_denominator else None,
        swds=gained / ideal,
        top1_accuracy=float(bool(items) and items[0].condition_id in gold_core),
        differential_length=len(items),
        unmatched_rate=sum(item.condition_id is None for item in items) / len(items) if items else None,
    )


def is_ready(text: str) -> bool:
    """Whether a history-stage reply ends the stage: `<Ready to diagnose>` anywhere in it (any case, spaces
    inside the brackets allowed: "Thank you, I have what I need. < ready to diagnose >"), or a line reading
    `Ready to diagnose` without the brackets (a final full stop allowed)."""
    return _READY.search(text) is not None


def parse_differential(
    text: str, kb: KnowledgeBase, threshold: float = DEFAULT_THRESHOLD
) -> tuple[DiagnosisItem, ...] | None:
    """The agent's ranked differential: the one JSON list of diagnosis objects in the reply (in a code fence
    or not, prose around it allowed, a list inside an object too), each normalised to the KB, ranked in list
    order. None when no list of objects `{diagnosis, icd11?, core?, rationale?}` (those keys only, each
    once) can be read; when two different such lists are written ("Ruled out: [...]" before the
    differential, or `{"excluded": [...], "differential": [...]}`: which one is the differential is not
    read); or when part of the reply could not be (JSON nested past `MAX_DEPTH`, or past the scan's
    budget): what was not read might hold a list. `[]` alone is an empty differential. Linear in the reply
    (`scan_json`)."""
    candidates = _json_lists(text)
    if candidates is None:
        return None
    differentials = {
        json.dumps(candidate): candidate for candidate in candidates if _is_diagnosis_list(candidate)
    }
    if len(differentials) > 1:
        return None
    if differentials:
        return _diagnosis_items(next(iter(differentials.values())), kb, threshold)
    return () if any(candidate == [] for candidate in candidates) else None


def _json_lists(text: str) -> list[list[Any]] | None:
    """Every JSON list of the reply, those in its closed code fences first, each in text order with the
    lists inside it after it; None when a scan could not read all of its text."""
    parts = text.split(_FENCE)
    scans = [scan_json(block, object_pairs_hook=unique_keys) for block in [*parts[1:-1:2], text]]
    if any(scan.too_deep or scan.stopped_at is not None for scan in scans):
        return None
    return [found_list for scan in scans for found in scan.found for found_list in _lists_in(found.value)]


def _lists_in(value: Any) -> Iterator[list[Any]]:
    """`value` if a list, then the lists inside it, depth first (no deeper than scan_json decodes)."""
    if isinstance(value, list):
        yield value
        children: Iterable[Any] = value
    elif isinstance(value, dict):
        children = value.values()
    else:
        return
    for child in children:
        yield from _lists_in(child)


def _is_diagnosis_list(value: list[Any]) -> bool:
    """A non-empty list of diagnosis objects only."""
    return bool(value) and all(map(_is_diagnosis_object, value))


def _diagnosis_items(raw: list[Any], kb: KnowledgeBase, threshold: float) -> tuple[DiagnosisItem, ...]:
    """A diagnosis list (`_is_diagnosis_list`) as ranked diagnosis items."""
    items = []
    for rank, entry in enumerate(raw, start=1):
        name, code = entry["diagnosis"].strip(), (entry.get("icd11") or "").strip() or None
        match = normalise_diagnosis(kb, name, code, threshold)
        items.append(
            DiagnosisItem(
                rank=rank,
                diagnosis=name,
                icd11=code,
                core=entry.get("core", False),
                rationale=entry.get("rationale") or "",
                condition_id=match.condition_id,
                match=match.method,
            )
        )
    return tuple(items)


def _is_diagnosis_object(entry: Any) -> bool:
    """`{diagnosis: non-empty text, icd11?: text or null, core?: boolean, rationale?: text}`, and no other
    key: one not read (`"status": "ruled out"`, `"probability": 0`) may say the item is no diagnosis."""
    if not isinstance(entry, dict) or not entry.keys() <= _DIAGNOSIS_KEYS:
        return False
    name, code, core = entry.get("diagnosis"), entry.get("icd11"), entry.get("core", False)
    return (
        isinstance(name, str)
        and bool(name.strip())
        and isinstance(code, str | None)
        and isinstance(core, bool)
        and isinstance(entry.get("rationale"), str | None)
    )
