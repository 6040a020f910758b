"""What the scripted reference agents say: pure functions of the conversation so far, the KB and the policy.

The agents see only the messages, as a model under test does. They tell the stages apart by the prompts'
words (prompts/agent_v3.txt): a request for the "ranked differential", for the "treatment plan", for the
"revised plan"; after the treatment request every patient message is a follow-up.

- History: the next question of the agent's template sequence (a template's first paraphrase), then the
  ready marker. Differential: KB conditions ranked by what the patient reported.
- Plan: a first-line option of the top diagnosis, for the age band the patient stated (else adult).
  `silent` and `markov` take the first one without looking at the profile and never revise: the critic
  must catch them. `exhaustive` is careful: it takes the first option the critic passes for what the
  patient said (allergies, medicines, pregnancy, impairments), and when a follow-up adds a constraint it
  revises to the first option that also satisfies it (or no drug), else keeps its plan.
- Answers: the top diagnosis's regimen advice with the plan's dosing; `exhaustive` acknowledges a new
  constraint in the patient's words. Constraints are read from the generated follow-ups' wordings
  (cases/generate.py), as a careful doctor would hear them.
"""

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from rapidfuzz import fuzz

from tasks.benchmarks.consult.case import PatientProfile
from tasks.benchmarks.consult.critic import PatientFacts, constraint_satisfied, critique, with_constraint
from tasks.benchmarks.consult.episode import PlanItem, TreatmentPlan
from tasks.benchmarks.consult.inquiry.policy import InquiryPolicy
from tasks.benchmarks.consult.inquiry.templates import TemplateCatalogue
from tasks.benchmarks.consult.kb.loading import KnowledgeBase
from tasks.benchmarks.consult.kb.models import AgeBand, Condition, DoseOption
from tasks.benchmarks.consult.kb.names import normalise_text
from tasks.benchmarks.consult.metrics import READY_MARKER

AgentKind = Literal["silent", "markov", "exhaustive"]
# Phrases of the prompts (prompts/agent_v3.txt) the agents recognise a stage by.
DIFFERENTIAL_REQUEST = "ranked differential"
TREATMENT_REQUEST = "treatment plan"
REVISION_REQUEST = "revised plan"
REFERENCE_MATCH_THRESHOLD = 85.0
# Profile facts a patient's reply can reveal, as the critic's states (AIU ids) and allergy classes.
_ALLERGY_AIUS = {"penicillin_allergy": "penicillins", "nsaid_allergy": "nsaids"}
_AGE = re.compile(r"\bI'm (\d{1,3})\b")
_SEX = re.compile(r"\bI'm (female|male)\b", re.IGNORECASE)
_MEDICATION = re.compile(r"\bI take ([a-z][a-z -]*?)[.,]", re.IGNORECASE)
_CONSTRAINTS = (
    (re.compile(r"allergic to ([a-z -]+)", re.IGNORECASE), "allergy"),
    (re.compile(r"\bpregnant\b", re.IGNORECASE), "pregnancy"),
    (re.compile(r"swallow tablets", re.IGNORECASE), "no_tablets"),
    (re.compile(r"can't afford ([a-z -]+?)[,.]", re.IGNORECASE), "cost"),
    (re.compile(r"\b(?:already )?take ([a-z][a-z -]*?)[,.]", re.IGNORECASE), "takes"),
)


def agent_reply(
    kind: AgentKind,
    messages: Sequence[Mapping[str, Any]],
    kb: KnowledgeBase,
    policy: InquiryPolicy,
    catalogue: TemplateCatalogue,
    *,
    max_questions: int = 12,
) -> str:
    """A scripted reference agent's next reply (see the module docstring for each stage)."""
    users = [_text(m) for m in messages if m["role"] == "user"]
    last_user = (users or [""])[-1].lower()
    history = _before_requests(messages)
    if DIFFERENTIAL_REQUEST in last_user:
        return reference_differential(history, kb)
    if any(TREATMENT_REQUEST in text.lower() for text in users):
        careful = kind == "exhaustive"
        follow_ups = users[_treatment_position(users) + 1 :]
        if REVISION_REQUEST in last_user:
            follow_ups = follow_ups[:-1]
        first = TREATMENT_REQUEST in last_user or REVISION_REQUEST in last_user
        return plan_reply(history, follow_ups, kb, careful=careful, first=first)
    plan = {
        "silent": [],
        "markov": policy.greedy_sequence(max_questions),
        "exhaustive": list(catalogue.ids),
    }[kind]
    wording = {template.id: template.paraphrases[0] for template in catalogue.templates}
    asked = {_text(m).strip() for m in messages if m["role"] == "assistant"}
    return next((wording[t] for t in plan if wording[t] not in asked), READY_MARKER)


def plan_reply(
    history: Sequence[Mapping[str, Any]],
    follow_ups: Sequence[str],
    kb: KnowledgeBase,
    *,
    careful: bool,
    first: bool,
) -> str:
    """The plan (`first`: the treatment request or its re-ask; also a revision's re-ask), or the answer to
    the last of `follow_ups`: a careful agent revises when the constraint it adds changes its choice."""
    condition = top_condition(history, kb)
    facts = facts_from_conversation(history, kb)
    constraints = [c for c in (constraint_from_text(text, kb) for text in follow_ups) if c is not None]
    plan = choose_plan(condition, facts, constraints, kb, careful=careful)
    advice = (
        condition.regimen.advice
        if condition is not None
        else "Rest and fluids; see a doctor if it gets worse."
    )
    if first or not follow_ups:
        return f"{plan_json(plan)}\n{advice}"
    said = follow_ups[-1].strip().rstrip(".?!")
    if careful and constraints and constraint_from_text(follow_ups[-1], kb) is not None:
        before = choose_plan(condition, facts, constraints[:-1], kb, careful=careful)
        if before != plan:
            return (
                f"Thank you for telling me ({said}): here is the revised plan.\n{plan_json(plan)}\n{advice}"
            )
        return f"Thank you for telling me ({said}): your plan is still safe, carry on with it. {advice}"
    return f"{dosing(plan)} {advice}".strip()


def choose_plan(
    condition: Condition | None,
    facts: PatientFacts,
    constraints: Sequence[str],
    kb: KnowledgeBase,
    *,
    careful: bool,
) -> TreatmentPlan:
    """A careless agent: the first first-line option for the patient's band. A careful one: the first
    option the critic passes (no violation, else no hard one) that meets every constraint, trying the
    first-line options, then the other KB drugs of the regimen's classes at their usual dose, as a liquid
    when the patient cannot swallow tablets; else no drug."""
    options = _band_options(condition, facts.profile.age_band) if condition is not None else []
    if not careful:
        return TreatmentPlan(items=(_item(options[0]),)) if options else TreatmentPlan()
    for constraint in constraints:
        facts = with_constraint(facts, constraint, kb)
    if condition is not None:
        options += _class_alternatives(condition, facts.profile.age_band, kb)
    plans = [TreatmentPlan(items=(_item(option, liquid=facts.no_tablets),)) for option in options]
    allowed = [p for p in plans if all(constraint_satisfied(p, c, facts, kb) for c in constraints)]
    critiques = [critique(p, facts, kb) for p in allowed]
    clean = [p for p, found in zip(allowed, critiques, strict=True) if not found.violations]
    safe = [p for p, found in zip(allowed, critiques, strict=True) if not found.hard]
    return (clean or safe or [TreatmentPlan()])[0]


def constraint_from_text(text: str, kb: KnowledgeBase) -> str | None:
    """The constraint a follow-up states (`allergy:<class or drug>`, `pregnancy`, ...), or None."""
    for pattern, kind in _CONSTRAINTS:
        found = pattern.search(text)
        if found is None:
            continue
        if not found.groups():
            return kind
        named = normalise_text(found.group(1))
        if kind == "allergy":
            classes = {normalise_text(c.title): c.id for c in kb.drug_classes}
            value = classes.get(named) or _drug_name(named, kb)
        else:
            value = _drug_name(named, kb)
        return f"{kind}:{value}" if value else None
    return None


def facts_from_conversation(history: Sequence[Mapping[str, Any]], kb: KnowledgeBase) -> PatientFacts:
    """What the patient said about themselves, as the critic's facts (an adult female of 30 unless said)."""
    reported = reported_aius(history, kb)
    replies = " ".join(_text(m) for m in history if m["role"] == "user")
    age, sex = _AGE.search(replies), _SEX.search(replies)
    medications = [_drug_name(normalise_text(m), kb) for m in _MEDICATION.findall(replies)]
    profile = PatientProfile(
        age=min(int(age.group(1)), 120) if age else 30,
        sex="male" if sex and sex.group(1).lower() == "male" else "female",
        pregnant="pregnancy" in reported,
        breastfeeding="breastfeeding" in reported,
        renal_impairment="renal_impairment" in reported,
        hepatic_impairment="hepatic_impairment" in reported,
        allergies=tuple(allergy for aiu, allergy in _ALLERGY_AIUS.items() if aiu in reported),
        medications=tuple(name for name in medications if name),
    )
    return PatientFacts(profile=profile, conditions=frozenset(), states=reported)


def top_condition(history: Sequence[Mapping[str, Any]], kb: KnowledgeBase) -> Condition | None:
    ranking = ranked_conditions(history, kb)
    return ranking[0] if ranking else None


def plan_json(plan: TreatmentPlan) -> str:
    fields = ("drug", "dose", "unit", "frequency_per_day", "days", "route")
    return json.dumps([item.model_dump(include=set(fields)) for item in plan.items])


def dosing(plan: TreatmentPlan) -> str:
    """The plan's dosing in words ("Take paracetamol 1000 mg 4 times a day for 5 days.")."""
    sentences = []
    for item in plan.items:
        days = f" for {item.days:g} days" if item.days else ""
        times = f"{item.frequency_per_day:g} times a day"
        sentences.append(f"Take {item.drug} {item.dose:g} {item.unit} ({item.route}) {times}{days}.")
    return " ".join(sentences)


def _band_options(condition: Condition, band: str) -> list[DoseOption]:
    """The first-line options for the band, else the adult ones, else all (a child-only regimen for an
    agent that never heard the patient's age)."""
    options = condition.regimen.first_line
    return (
        [o for o in options if o.age_band == band]
        or [o for o in options if o.age_band == "adult"]
        or list(options)
    )


def _class_alternatives(condition: Condition, band: AgeBand, kb: KnowledgeBase) -> list[DoseOption]:
    """The regimen classes' other KB drugs for the band, at their usual dose for the first option's days."""
    first_line = condition.regimen.first_line
    days = first_line[0].days if first_line else None
    named = {option.drug for option in first_line}
    return [
        DoseOption(
            drug=drug.name,
            dose=drug.usual_dose.dose,
            unit=drug.usual_dose.unit,
            frequency_per_day=drug.usual_dose.frequency_per_day,
            days=days,
            route=drug.route,
            age_band=band,
        )
        for drug_class in condition.regimen.drug_classes
        for drug in kb.drugs
        if drug.drug_class == drug_class and drug.name not in named and getattr(drug.max_daily, band)
    ]


def _item(option: DoseOption, liquid: bool = False) -> PlanItem:
    """The option as a plan item; `liquid`: an oral drug as its oral suspension."""
    drug = f"{option.drug} oral suspension" if liquid and option.route == "oral" else option.drug
    return PlanItem(
        drug=drug, generic=option.drug, dose=option.dose, unit=option.unit,
        frequency_per_day=option.frequency_per_day, days=option.days, route=option.route,
    )  # fmt: skip


def _drug_name(name: str, kb: KnowledgeBase) -> str | None:
    drug = kb.drug(name)
    return drug.name if drug is not None else None


def _treatment_position(users: Sequence[str]) -> int:
    """The last request for the plan (a re-ask repeats it): the follow-ups come after it."""
    return max(i for i, text in enumerate(users) if TREATMENT_REQUEST in text.lower())


def _before_requests(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The history stage: the messages before the first request for the differential."""
    for position, message in enumerate(messages):
        if message["role"] == "user" and DIFFERENTIAL_REQUEST in _text(message).lower():
            return list(messages[:position])
    return list(messages)


def _text(message: Mapping[str, Any]) -> str:
    """A chat message's text; a message without content (a tool call) has none."""
    return str(message.get("content") or "")


def reported_aius(messages: Sequence[Mapping[str, Any]], kb: KnowledgeBase) -> frozenset[str]:
    """AIU types whose positive reply, value slot removed, some patient message contains (fuzzily).

    A pattern found inside another type's pattern ("I've had {value}." in "I've had a fever for {value}.")
    cannot tell the two apart and would match nearly any reply, so it is not used.
    """
    replies = [
        normalise_text(_text(m))
        for m in messages
        if m["role"] == "user" and DIFFERENTIAL_REQUEST not in _text(m).lower()
    ]
    patterns = {
        aiu_type.id: normalise_text(aiu_type.positive.replace("{value}", " ")) for aiu_type in kb.aiu_types
    }
    found = set()
    for aiu_id, pattern in patterns.items():
        if not pattern or any(pattern in other and other != pattern for other in patterns.values()):
            continue
        # The pattern must fit inside the reply: partial_ratio would otherwise search the reply in it.
        if any(
            len(reply) >= len(pattern) and fuzz.partial_ratio(pattern, reply) >= REFERENCE_MATCH_THRESHOLD
            for reply in replies
        ):
            found.add(aiu_id)
    return frozenset(found)


def ranked_conditions(messages: Sequence[Mapping[str, Any]], kb: KnowledgeBase) -> list[Condition]:
    """KB conditions by supporting AIUs reported minus ruling-out ones reported, KB order breaking ties."""
    reported = reported_aius(messages, kb)
    scores = [
        sum((1 if e.direction == "supports" else -1) for e in condition.evidence if e.aiu in reported)
        for condition in kb.conditions
    ]
    return [kb.conditions[index] for index in sorted(range(len(scores)), key=lambda index: -scores[index])]


def reference_differential(messages: Sequence[Mapping[str, Any]], kb: KnowledgeBase, top: int = 3) -> str:
    """The reference agents' differential as JSON: the top `top` of `ranked_conditions`, the first marked
    core."""
    reported = reported_aius(messages, kb)
    differential = []
    for rank, condition in enumerate(ranked_conditions(messages, kb)[:top]):
        found = [e.aiu for e in condition.evidence if e.direction == "supports" and e.aiu in reported]
        differential.append(
            {
                "diagnosis": condition.title,
                "icd11": condition.icd11,
                "core": rank == 0,
                "rationale": "reported: " + (", ".join(found) or "nothing specific"),
            }
        )
    return json.dumps(differential)
