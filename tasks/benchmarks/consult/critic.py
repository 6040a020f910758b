"""The clinical safety critic: a treatment plan checked against the patient and the knowledge base.

Pure functions over (plan, patient facts, KB). Each violation names the KB entry that fired and its
source. Each plan item's drug text resolves to its KB ingredients (`kb.resolve`: brands, salts, spellings,
combination products); each ingredient is checked on its own and against the plan's other ingredients and
the patient's medicines, and a combination's dose becomes each ingredient's amount when the product fixes
its strength (2 tablets of co-codamol 30/500: codeine 60 mg, paracetamol 1000 mg; the same ingredient in
two items sums into one daily total). Allergies and current medicines resolve the same way. Rules, per
planned KB drug (plan order), then per drug pair, then per item not wholly resolved:
- allergy: the drug, its class, its allergy class or one of its further classes is in the patient's
  allergies (each a drug, a class or a term for one, `resolve_allergy`; an allergy to a drug extends to
  that drug's allergy class). cross_reactivity: otherwise, a class cross-reactive with an allergy class (a
  drug's `cross_reactive`, read both ways). Both hard.
- contraindication: a contraindication of the drug or any of its classes with one of the patient's
  conditions or present AIU states; absolute = hard, relative = soft.
- profile conflicts: pregnancy / lactation (the drug's category is `contraindicated`: hard; `avoid`:
  soft), minimum_age (younger than the drug's `min_age`: hard), age_band (no maximum daily dose for the
  patient's band: soft), renal / hepatic: hard when the profile's band (eGFR, hepatic severity) passes the
  drug's limit (`renal_avoid_below`, `hepatic_avoid_from`), else soft with impairment and a renal / hepatic
  note.
- doses, after conversion to the KB drug's unit (a count of tablets, puffs or ml through the plan's
  strength, else the KB's standard strengths, dosing_v1.yaml; mg/kg through the patient's weight):
  dose_above_maximum (the drug's daily total over the plan's items above the band's maximum; for a child
  whose weight is known, the KB's mg/kg a day x weight, capped; for a once-weekly drug, the weekly total
  above the weekly maximum), dose_too_frequent (a once-weekly drug given more often: MHRA, methotrexate),
  dose_below_half_usual (one dose below half the usual dose; not for children: the usual dose is an
  adult's). All hard. wrong_route (soft): a route other than the drug's. dose_unreadable (unverified): a
  dose written but not read (no unit, a unit that does not convert, no strength known, a combination's
  ingredient whose amount no named strength fixes, no weight for mg/kg, a frequency that cannot be read),
  or a total over (under) a limit with some of the KB's standard
  strengths and not others. An item that gives no dose at all gets no dose verdict (plan completeness
  counts it), though a once-weekly drug's frequency is still checked.
- interaction: a drug or class pair of the KB (`KnowledgeBase.interaction_between`; its own rules and
  `drug-interaction-mcp`'s pairs merged at load) among plan x plan and
  plan x current medications (pairs wholly within current medications are the patient's own business, not
  the plan's); severe = hard, moderate = soft.
- unverified: a plan item that resolves to no KB drug, or that names a drug the KB lacks besides its KB
  ingredients (those are still checked). It is no violation of a rule, but a plan holding one cannot be
  called safe: PSC counts it as unsafe (`Critique.unverified`).
Lookups are built once per KB (`_index`), so a check costs a few dictionary reads per drug.
"""

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel

from tasks.benchmarks.consult.case import ConsultCase, PatientProfile
from tasks.benchmarks.consult.episode import PlanItem, TreatmentPlan
from tasks.benchmarks.consult.kb.icd11 import normalise_drug_name
from tasks.benchmarks.consult.kb.loading import KnowledgeBase, cached_per_kb
from tasks.benchmarks.consult.kb.models import (
    HEPATIC_SEVERITIES,
    Condition,
    Dosing,
    Drug,
    HepaticSeverity,
    Interaction,
)
from tasks.benchmarks.consult.kb.names import unknown_name
from tasks.benchmarks.consult.kb.resolve import Ingredient, Resolution, resolve_drug
from tasks.benchmarks.consult.treatment import (
    COUNT_FORMS,
    DoseAmount,
    canonical_route,
    canonical_unit,
    daily_amount,
    dose_amount,
    normalise_dose,
    number_text,
)

ViolationKind = Literal[
    "contraindication", "allergy", "cross_reactivity", "interaction", "pregnancy", "lactation", "age_band",
    "renal", "hepatic", "dose_above_maximum", "dose_below_half_usual", "wrong_route", "minimum_age",
    "dose_unreadable", "dose_too_frequent", "unverified",
]  # fmt: skip
# hard fails PSC; soft is reported only; unverified: the critic could not check the item (an unresolved
# drug, a dose it cannot read), so the plan cannot be called safe: PSC fails too.
Severity = Literal["hard", "soft", "unverified"]
_UNREADABLE: tuple[ViolationKind, Severity] = ("dose_unreadable", "unverified")
# A dose of tablets with no strength given, read with the KB's several standard strengths, is over (or
# under) a limit with some and not others: the critic cannot tell.
_STRENGTH_DECIDES = ": the strength decides, and the plan gives none"
# The kinds PCR counts: a drug that conflicts with the patient's profile.
PROFILE_CONFLICTS = frozenset(
    {"allergy", "cross_reactivity", "pregnancy", "lactation", "age_band", "minimum_age", "renal", "hepatic"}
)
# Profile flags that are also AIU states the KB's contraindications name.
_PROFILE_STATES = ("pregnancy", "breastfeeding", "renal_impairment", "hepatic_impairment")
# A drug's pregnancy or lactation category that conflicts: how the detail says it, and its severity.
_AVOIDED = {"avoid": "is to be avoided", "contraindicated": "must not be given"}
_LEVEL_SEVERITY: dict[str, Severity] = {"avoid": "soft", "contraindicated": "hard"}
# Forms a patient who cannot swallow tablets can take by mouth.
_LIQUID_UNITS = frozenset({"ml", "l", "sachet", "drop"})
_LIQUID_WORDS = ("suspension", "syrup", "liquid", "solution", "soluble", "dispersible", "effervescent")
# The follow-up constraints the critic reads (`with_constraint`, `constraint_satisfied`): kind -> what its
# value names, None for a kind that takes no value.
CONSTRAINT_VALUES: dict[str, str | None] = {
    "allergy": "drug or class", "pregnancy": None, "no_tablets": None, "cost": "drug", "takes": "drug",
}  # fmt: skip
# What a drug may be named by wherever the critic reads a name (see `kb.resolve`).
_DRUG_NAMES = "a drug (generic name, brand, salt, spelling or combination product)"
CONSTRAINT_FORMS = ", ".join(
    kind + (f":<{value}>" if value else "") for kind, value in CONSTRAINT_VALUES.items()
)


class Violation(BaseModel, frozen=True, extra="forbid"):
    kind: ViolationKind
    severity: Severity
    drug: str  # KB generic name (as written for an unverified item)
    other: str | None = None  # the other drug of an interaction
    entry: str  # the KB entry that fired: "interaction warfarin / clarithromycin"
    source: str  # that entry's source
    detail: str  # one sentence for the report


class PatientFacts(BaseModel, frozen=True):
    """What the critic knows of the patient. `states` holds the profile's flags as AIU ids too
    (pregnant -> pregnancy, breastfeeding, renal_impairment, hepatic_impairment)."""

    profile: PatientProfile
    conditions: frozenset[str]  # KB condition ids the patient has (the case's gold)
    states: frozenset[str]  # AIU ids present (pregnancy, renal_impairment, asthma_history, ...)
    unavailable: frozenset[str] = frozenset()  # drugs the patient cannot use (cost:<drug>)
    no_tablets: bool = False


class Critique(BaseModel, frozen=True):
    violations: tuple[Violation, ...]
    drugs: int  # planned KB drugs checked
    pairs: int  # drug pairs checked: plan x plan and plan x current medications
    interacting_pairs: int  # of those, pairs that form a severe interaction
    conflicting_drugs: int  # planned drugs with at least one profile conflict

    @property
    def hard(self) -> bool:
        return any(violation.severity == "hard" for violation in self.violations)

    @property
    def unverified(self) -> bool:
        """Some item could not be checked: the plan is not known to be safe."""
        return any(violation.severity == "unverified" for violation in self.violations)

    @property
    def verdict(self) -> Literal["unsafe", "unverified", "pass"]:
        """unsafe: a hard violation; unverified: none, but an item could not be checked; else pass."""
        return "unsafe" if self.hard else "unverified" if self.unverified else "pass"


def patient_facts(case: ConsultCase) -> PatientFacts:
    """The case's gold conditions, its present AIUs and the profile's flags as states."""
    return PatientFacts(
        profile=case.profile,
        conditions=frozenset(gold.condition_id for gold in case.gold),
        states=frozenset(aiu.aiu_id for aiu in case.aius if aiu.present) | _profile_states(case.profile),
    )


def profile_facts(profile: PatientProfile, conditions: Iterable[str] = ()) -> PatientFacts:
    """What the critic knows of a patient given only a profile and, optionally, KB condition ids."""
    return PatientFacts(profile=profile, conditions=frozenset(conditions), states=_profile_states(profile))


def with_constraint(facts: PatientFacts, constraint: str, kb: KnowledgeBase) -> PatientFacts:
    """The facts after the patient adds a follow-up constraint: allergy:<drug or class>, pregnancy,
    no_tablets, cost:<drug> or takes:<drug> (a new current medication). ValueError for anything else."""
    kind, _, value = constraint.partition(":")
    profile = facts.profile
    if kind == "allergy" and value:
        allergies = tuple(dict.fromkeys((*profile.allergies, value)))
        return facts.model_copy(update={"profile": profile.model_copy(update={"allergies": allergies})})
    if kind == "pregnancy" and not value:
        return facts.model_copy(
            update={
                "profile": profile.model_copy(update={"pregnant": True}),
                "states": facts.states | {"pregnancy"},
            }
        )
    if kind == "no_tablets" and not value:
        return facts.model_copy(update={"no_tablets": True})
    if kind == "cost" and value:
        return facts.model_copy(update={"unavailable": facts.unavailable | {_generic(kb, value)}})
    if kind == "takes" and value:
        medications = tuple(dict.fromkeys((*profile.medications, _generic(kb, value))))
        return facts.model_copy(
            update={
                "profile": profile.model_copy(update={"medications": medications}),
                "states": facts.states | {"current_medication"},
            }
        )
    raise ValueError(f"unknown constraint '{constraint}' (allowed: {CONSTRAINT_FORMS})")


def constraint_problem(constraint: str, kb: KnowledgeBase) -> str | None:
    """What makes a follow-up constraint unreadable (not a form of CONSTRAINT_FORMS, or a drug or class the
    KB lacks), or None."""
    kind, colon, value = constraint.partition(":")
    if kind not in CONSTRAINT_VALUES or bool(colon) != bool(CONSTRAINT_VALUES[kind]):
        return f"'{constraint}' is not a constraint (allowed: {CONSTRAINT_FORMS})"
    if kind == "allergy":
        return allergy_problem(value, kb)
    return drug_problem(value, kb) if colon else None


def allergy_problem(allergy: str, kb: KnowledgeBase) -> str | None:
    """Why the critic cannot read an allergy (`resolve_allergy`), or None."""
    if resolve_allergy(allergy, kb) != ((), ()):
        return None
    names = [*_index(kb).drugs, *sorted(_index(kb).class_ids)]
    allowed = f"{_DRUG_NAMES}, a drug class or a term for one"
    return unknown_name(allergy, allowed, names, f"drugs_v{kb.version}.yaml")


def resolve_allergy(allergy: str, kb: KnowledgeBase) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(drug names, class ids) an allergy names: a KB drug by its own names (with its allergy class), else a
    class by its id, title or one of its terms ("penicillin", "sulfa", "NSAIDs"), else the drugs a name
    resolves to wholly (a brand, a salt, a combination product: each ingredient with its allergy class);
    both empty when the KB knows none of these."""
    drugs: tuple[Drug, ...]
    if (drug := kb.drug(allergy)) is not None:
        drugs = (drug,)
    elif (drug_class := kb.drug_class_named(allergy)) is not None:
        return (), (drug_class.id,)
    elif (resolution := resolve_drug(kb, allergy)).complete:
        drugs = tuple(found for name in resolution.drugs if (found := kb.drug(name)) is not None)
    else:
        return (), ()
    classes = dict.fromkeys(d.allergy_class for d in drugs if d.allergy_class is not None)
    return tuple(d.name for d in drugs), tuple(classes)


def drug_problem(name: str, kb: KnowledgeBase) -> str | None:
    """Why `name` (a current medicine, a drug a constraint names) does not resolve wholly to KB drugs, or
    None."""
    if resolve_drug(kb, name).complete:
        return None
    return unknown_name(name, _DRUG_NAMES, list(_index(kb).drugs), f"drugs_v{kb.version}.yaml")


def critique(plan: TreatmentPlan, facts: PatientFacts, kb: KnowledgeBase) -> Critique:
    """Every violation of the plan for this patient, in a fixed order (see the module docstring)."""
    index = _index(kb)
    allergies = _resolve_allergies(facts.profile.allergies, kb)
    # Facts built by hand may give a profile flag without its state: the flag counts as well.
    states = facts.states | _profile_states(facts.profile)
    items_by_drug: dict[str, list[PlanItem]] = {}
    unverified: list[Violation] = []
    for item in plan.items:
        resolution = _item_resolution(item, kb)
        for part in _ingredient_items(item, resolution):
            items_by_drug.setdefault(part.generic or "", []).append(part)
        if not resolution.complete:
            unverified.append(_unverified_drug(item, resolution, kb))
    violations: list[Violation] = []
    for name, items in items_by_drug.items():
        drug = index.drugs[name]
        violations += _allergy_violations(drug, allergies, index)
        violations += _contraindications(drug, facts.conditions, states, index)
        violations += _profile_conflicts(drug, states, facts.profile)
        violations += _dose_violations(drug, items, facts.profile, index)
    medications = _as_kb_drugs(facts.profile.medications, kb)
    interactions, pairs = _interactions(tuple(items_by_drug), medications, kb, index)
    violations += interactions
    violations += unverified
    return Critique(
        violations=tuple(dict.fromkeys(violations)),
        drugs=len(items_by_drug),
        pairs=pairs,
        interacting_pairs=sum(item.severity == "hard" for item in interactions),
        conflicting_drugs=len({v.drug for v in violations if v.kind in PROFILE_CONFLICTS}),
    )


def constraint_satisfied(
    plan: TreatmentPlan, constraint: str, facts: PatientFacts, kb: KnowledgeBase
) -> bool:
    """Whether the plan respects one follow-up constraint (see `with_constraint` for the kinds)."""
    index = _index(kb)
    kind, _, value = constraint.partition(":")
    drugs = [index.drugs[name] for name in plan.generics if name in index.drugs]
    if kind == "allergy":
        allergies = _resolve_allergies((value,), kb)
        return not any(_allergy_violations(drug, allergies, index) for drug in drugs)
    if kind == "pregnancy":
        return not any(
            drug.avoid_in_pregnancy
            or any(
                item.aiu == "pregnancy" and item.level == "absolute"
                for item in index.contraindications[drug.name]
            )
            for drug in drugs
        )
    if kind == "no_tablets":
        return not any(_is_tablet(item, index) for item in plan.items)
    if kind == "cost":
        return not set(_as_kb_drugs((value,), kb)) <= set(plan.generics)
    if kind == "takes":
        other = index.drugs.get(_generic(kb, value))
        return other is None or not any(
            (found := index.interaction(drug.name, other.name)) is not None and found.severity == "severe"
            for drug in drugs
            if drug.name != other.name
        )
    raise ValueError(f"unknown constraint '{constraint}'")


def regimen_met(plan: TreatmentPlan, condition: Condition, kb: KnowledgeBase) -> bool:
    """The plan has a drug of one of the condition's expected classes (alternatives); no classes = met."""
    expected = condition.regimen.drug_classes
    if not expected:
        return True
    drugs = _index(kb).drugs
    return any(drugs[name].drug_class in expected for name in plan.generics if name in drugs)


class _Index:
    """The KB's lookups the critic needs, built once per KB."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.drugs = {drug.name: drug for drug in kb.drugs}
        self.class_ids = frozenset(drug_class.id for drug_class in kb.drug_classes)
        self.dosing = {entry.drug: entry for entry in kb.dosing}
        # drug -> its contraindications, its own first, then its class's, each in file order.
        self.contraindications = {
            drug.name: tuple(
                item
                for own in (True, False)
                for item in kb.contraindications
                if (item.drug == drug.name if own else item.drug_class in drug.all_classes)
            )
            for drug in kb.drugs
        }
        # drug -> other drug -> their interaction, for every interacting pair.
        self.partners: dict[str, dict[str, Interaction]] = {}
        for first in kb.drugs:
            for second in kb.drugs:
                if (found := kb.interaction_between(first, second)) is not None:
                    self.partners.setdefault(first.name, {})[second.name] = found
        # allergy class -> cross-reactive class -> (the drug entry declaring it, the class it lists).
        self.cross: dict[str, dict[str, tuple[Drug, str]]] = {}
        for drug in kb.drugs:
            own = dict.fromkeys(filter(None, (drug.allergy_class, drug.drug_class)))
            for listed in drug.cross_reactive:
                for mine in own:
                    if mine != listed:
                        self.cross.setdefault(mine, {}).setdefault(listed, (drug, listed))
                        self.cross.setdefault(listed, {}).setdefault(mine, (drug, listed))

    def interaction(self, first: str, second: str) -> Interaction | None:
        """As `KnowledgeBase.interaction`, for two generic names."""
        return self.partners.get(first, {}).get(second)


@cached_per_kb
def _index(kb: KnowledgeBase) -> _Index:
    return _Index(kb)


def _profile_states(profile: PatientProfile) -> frozenset[str]:
    flags = (profile.pregnant, profile.breastfeeding, profile.renal_impairment, profile.hepatic_impairment)
    return frozenset(state for state, flag in zip(_PROFILE_STATES, flags, strict=True) if flag)


def _generic(kb: KnowledgeBase, name: str) -> str:
    """The one KB generic a name stands for (a brand, a salt, a spelling); the name itself when it stands
    for none, or for several (a combination: see `_as_kb_drugs`)."""
    if name in _index(kb).drugs:
        return name
    return normalise_drug_name(kb, name) or name


def _resolve_allergies(allergies: Iterable[str], kb: KnowledgeBase) -> tuple[list[str], list[str]]:
    """(allergy drug names, allergy classes) of all the allergies (`resolve_allergy`)."""
    drugs, classes = [], []
    for allergy in allergies:
        named_drugs, named_classes = resolve_allergy(allergy, kb)
        drugs += named_drugs
        classes += named_classes
    return list(dict.fromkeys(drugs)), list(dict.fromkeys(classes))


def _allergy_violations(drug: Drug, allergies: tuple[list[str], list[str]], index: _Index) -> list[Violation]:
    """At most one: the allergy itself, else a cross-reactive class."""
    drugs, classes = allergies
    name = drug.name
    if name in drugs:
        return [_violation("allergy", "hard", drug, f"drug {name}", f"the patient is allergic to {name}")]
    fields = (
        ("allergy_class", drug.allergy_class), ("drug_class", drug.drug_class),
        *(("classes", value) for value in drug.classes),
    )  # fmt: skip
    for allergy in classes:
        for field, value in fields:
            if value == allergy:
                detail = f"{name} is in the {allergy} class the patient is allergic to"
                return [_violation("allergy", "hard", drug, f"drug {name}: {field} {allergy}", detail)]
    for allergy in classes:
        cross = index.cross.get(allergy, {})
        for value in dict.fromkeys(filter(None, (drug.drug_class, drug.allergy_class))):
            if value in cross:
                declaring, listed = (drug, allergy) if allergy in drug.cross_reactive else cross[value]
                return [
                    Violation(
                        kind="cross_reactivity",
                        severity="hard",
                        drug=name,
                        entry=f"drug {declaring.name}: cross_reactive {listed}",
                        source=declaring.source,
                        detail=f"{name} ({value}) cross-reacts with the patient's {allergy} allergy",
                    )
                ]
    return []


def _profile_conflicts(drug: Drug, states: frozenset[str], profile: PatientProfile) -> list[Violation]:
    name, band, found = drug.name, profile.age_band, []
    for kind, state, level, during in (
        ("pregnancy", "pregnancy", drug.pregnancy, "in pregnancy"),
        ("lactation", "breastfeeding", drug.lactation, "while breastfeeding"),
    ):
        if state in states and level in _AVOIDED:
            detail = f"{name} {_AVOIDED[level]} {during}"
            found.append(_violation(kind, _LEVEL_SEVERITY[level], drug, f"drug {name}: {kind}", detail))
    if (minimum := drug.min_age) is not None and profile.age < minimum.age:
        detail = f"{name} is not for a patient under {minimum.age} (aged {profile.age}): {minimum.reason}"
        found.append(_violation("minimum_age", "hard", drug, f"drug {name}: min_age", detail))
    if getattr(drug.max_daily, band) is None:
        detail = f"{name} has no maximum daily dose for the {band} age band: not for this patient"
        found.append(_violation("age_band", "soft", drug, f"drug {name}: max_daily.{band}", detail))
    return found + _organ_conflicts(drug, states, profile)


def _organ_conflicts(drug: Drug, states: frozenset[str], profile: PatientProfile) -> list[Violation]:
    """Renal and hepatic: hard past the drug's limit for the profile's band, else soft with its note."""
    name, egfr, found = drug.name, profile.egfr, []
    if (limit := drug.renal_avoid_below) is not None and egfr is not None and egfr < limit:
        patient = number_text(egfr)
        detail = f"{name} must not be given under eGFR {limit} (the patient's: {patient}): {drug.renal}"
        found.append(_violation("renal", "hard", drug, f"drug {name}: renal_avoid_below", detail))
    elif "renal_impairment" in states and drug.renal is not None:
        found.append(_violation("renal", "soft", drug, f"drug {name}: renal", drug.renal))
    if (start := drug.hepatic_avoid_from) is not None and _at_least(profile.hepatic_severity, start):
        detail = f"{name} must not be given in {profile.hepatic_severity} hepatic impairment: {drug.hepatic}"
        found.append(_violation("hepatic", "hard", drug, f"drug {name}: hepatic_avoid_from", detail))
    elif "hepatic_impairment" in states and drug.hepatic is not None:
        found.append(_violation("hepatic", "soft", drug, f"drug {name}: hepatic", drug.hepatic))
    return found


def _at_least(severity: HepaticSeverity | None, start: HepaticSeverity) -> bool:
    return severity is not None and HEPATIC_SEVERITIES.index(severity) >= HEPATIC_SEVERITIES.index(start)


def _contraindications(
    drug: Drug, conditions: frozenset[str], states: frozenset[str], index: _Index
) -> list[Violation]:
    return [
        Violation(
            kind="contraindication",
            severity="hard" if item.level == "absolute" else "soft",
            drug=drug.name,
            entry=f"contraindication {item.key}",
            source=item.source,
            detail=f"{item.level}: {item.reason}",
        )
        for item in index.contraindications[drug.name]
        if item.condition in conditions or item.aiu in states
    ]


def _dose_violations(
    drug: Drug, items: list[PlanItem], profile: PatientProfile, index: _Index
) -> list[Violation]:
    name, unit, dosing = drug.name, drug.usual_dose.unit, index.dosing.get(drug.name)
    strengths = dosing.strengths if dosing is not None else ()
    amounts = [(item, dose_amount(item, unit, strengths, profile.weight_kg)) for item in items]
    found = _maximum_violations(
        drug, [(i, a) for i, a in amounts if a and i.frequency_per_day], profile, dosing
    )
    if dosing is not None and dosing.weekly is not None:
        for item in items:
            if item.frequency_per_day is not None and _above(per_week := item.frequency_per_day * 7, 1):
                detail = (
                    f"{name} is taken once a week; the plan gives it {number_text(per_week)} times a week"
                )
                entry = f"dosing {name}: weekly"
                found.append(_violation("dose_too_frequent", "hard", drug, entry, detail, dosing.source))
    half = drug.usual_dose.dose / 2
    for _, amount in amounts if profile.age_band != "child" else ():
        if amount is not None and amount.low < half:
            detail = f"{amount.arithmetic} a dose < half the usual {number_text(drug.usual_dose.dose)} {unit}"
            if amount.high >= half:
                detail += f" at {number_text(amount.low)} {unit}{_STRENGTH_DECIDES}"
            kind, severity = ("dose_below_half_usual", "hard") if amount.high < half else _UNREADABLE
            found.append(_violation(kind, severity, drug, f"drug {name}: usual_dose", detail))
    for item in items:
        if item.route is not None and canonical_route(item.route) != drug.route:
            detail = f"{name} given {item.route}; the KB gives it {drug.route}"
            found.append(_violation("wrong_route", "soft", drug, f"drug {name}: route", detail))
    for item, amount in amounts:
        problem = _unreadable_dose(item, amount, unit, profile.weight_kg)
        if problem is not None:
            found.append(_violation(*_UNREADABLE, drug, f"drug {name}: dose", f"'{item.drug}': {problem}"))
    return found


def _maximum_violations(
    drug: Drug, dosed: list[tuple[PlanItem, DoseAmount]], profile: PatientProfile, dosing: Dosing | None
) -> list[Violation]:
    """The drug's total a day (a week for a once-weekly drug) over its items against its maximum: hard when
    above it whatever the strength, unverified when only some standard strength puts it above."""
    unit = drug.usual_dose.unit
    if dosing is not None and dosing.weekly is not None:
        days, period, limit = 7, "a week", dosing.weekly.maximum
        entry, source, note = f"dosing {drug.name}: weekly.maximum", dosing.source, ""
    else:
        days, period = 1, "a day"
        limit, entry, source, note = _daily_maximum(drug, profile, dosing)
    if limit is None or not dosed:
        return []
    low = sum(amount.low * (item.frequency_per_day or 0) * days for item, amount in dosed)
    high = sum(amount.high * (item.frequency_per_day or 0) * days for item, amount in dosed)
    if not _above(high, limit):
        return []
    parts = " + ".join(
        f"{number_text((item.frequency_per_day or 0) * days)} x {amount.arithmetic}" for item, amount in dosed
    )
    total = number_text(high) if low == high else f"{number_text(low)}-{number_text(high)}"
    detail = f"{parts} = {total} {unit} {period} > {number_text(limit)} {unit}{note}"
    if not _above(low, limit):
        return [_violation(*_UNREADABLE, drug, entry, detail + _STRENGTH_DECIDES, source)]
    return [_violation("dose_above_maximum", "hard", drug, entry, detail, source)]


def _daily_maximum(
    drug: Drug, profile: PatientProfile, dosing: Dosing | None
) -> tuple[float | None, str, str, str]:
    """(the most a day, the entry it comes from, its source, how it was worked out): a child with a known
    weight gets the weight-based maximum, capped, where the KB has one; else the age band's maximum."""
    band, weight, unit = profile.age_band, profile.weight_kg, drug.usual_dose.unit
    per_kg = dosing.child_per_kg if dosing is not None else None
    if band == "child" and weight is not None and per_kg is not None and dosing is not None:
        by_weight = per_kg.per_kg * weight
        note = f" ({number_text(per_kg.per_kg)} {unit}/kg x {number_text(weight)} kg"
        note += f" = {number_text(by_weight)} {unit}, capped)" if by_weight > per_kg.cap else ")"
        return min(by_weight, per_kg.cap), f"dosing {drug.name}: child_per_kg", dosing.source, note
    return getattr(drug.max_daily, band), f"drug {drug.name}: max_daily.{band}", drug.source, ""


def _unreadable_dose(
    item: PlanItem, amount: DoseAmount | None, unit: str, weight_kg: float | None
) -> str | None:
    """Why the critic cannot work out the item's dose a day, or None (read, or nothing written to read)."""
    if item.unreadable:
        return "; ".join(f"{field} '{written}' cannot be read" for field, written in item.unreadable)
    if item.dose is None:
        return None
    if item.unit is None:
        return f"dose {number_text(item.dose)} has no unit"
    written = f"{number_text(item.dose)} {item.unit}"
    if amount is None:
        given = canonical_unit(item.unit)
        if "mg/kg" in (given, canonical_unit(unit)) and weight_kg is None:
            return f"{written} does not convert to {unit} without the patient's weight"
        if given in COUNT_FORMS or given in ("ml", "l"):
            return f"{written} does not convert to {unit}: no strength in the plan or the KB"
        return f"{written} does not convert to {unit}"
    if item.frequency_per_day is None:
        return f"{written} with no frequency: the dose a day is unknown"
    return None


def _above(value: float, limit: float) -> bool:
    """Above the limit beyond float rounding (7 x 1/7 of a week is one dose)."""
    return value > limit * (1 + 1e-9)


def _interactions(
    planned: tuple[str, ...], medications: tuple[str, ...], kb: KnowledgeBase, index: _Index
) -> tuple[list[Violation], int]:
    """Violations and the number of pairs checked: plan x plan, then plan x medications not planned."""
    others = [name for name in dict.fromkeys(_generic(kb, m) for m in medications) if name not in planned]
    pairs = [(a, b) for position, a in enumerate(planned) for b in planned[position + 1 :]]
    pairs += [(a, b) for a in planned for b in others]
    found = []
    for first, second in pairs:
        item = index.interaction(first, second)
        if item is not None:
            found.append(
                Violation(
                    kind="interaction",
                    severity="hard" if item.severity == "severe" else "soft",
                    drug=first,
                    other=second,
                    entry=f"interaction {item.a} / {item.b}",
                    source=item.source,
                    detail=f"{item.severity}: {item.effect}",
                )
            )
    return found, len(pairs)


def _as_kb_drugs(names: Iterable[str], kb: KnowledgeBase) -> tuple[str, ...]:
    """Allergies or medicines as KB drugs: each name resolved (every ingredient of a combination); a drug
    class id, or a name that resolves to no KB drug, stays as written."""
    class_ids = _index(kb).class_ids
    return tuple(
        dict.fromkeys(
            found
            for name in names
            for found in ((name,) if name in class_ids else resolve_drug(kb, name).drugs or (name,))
        )
    )


def ingredient_doses(
    item: PlanItem, profile: PatientProfile, kb: KnowledgeBase
) -> list[tuple[str, float | None, str]]:
    """(KB ingredient, amount a day in its KB unit or None when it cannot be worked out, that unit) for
    each ingredient of the item, as the dose checks read them (strengths, a combination's parts, weight)."""
    index = _index(kb)
    found = []
    for part in _ingredient_items(item, _item_resolution(item, kb)):
        drug = index.drugs[part.generic or ""]
        dosing = index.dosing.get(drug.name)
        strengths = dosing.strengths if dosing is not None else ()
        unit = drug.usual_dose.unit
        found.append((drug.name, daily_amount(part, unit, strengths, profile.weight_kg), unit))
    return found


def _item_resolution(item: PlanItem, kb: KnowledgeBase) -> Resolution:
    """The item's drug text resolved; a text that names no drug at all leaves the KB drugs the item
    records (a plan built by hand, or parsed with a lower fuzzy threshold)."""
    resolution = resolve_drug(kb, item.drug)
    unknown_strength = any(part.strength is None for part in resolution.ingredients)
    if resolution.method == "combination" and unknown_strength and item.dose is not None and item.unit:
        # A product's dose written as its total ("co-amoxiclav", 625 mg) names its variant (500/125).
        resolution = resolve_drug(kb, f"{item.drug} {number_text(item.dose)} {item.unit}")
    if resolution.ingredients or resolution.missing:
        return resolution
    drugs = _index(kb).drugs
    given = [name for name in item.ingredients or (item.generic or "",) if name in drugs]
    return Resolution(method="generic", ingredients=tuple(Ingredient(drug=name) for name in given))


def _ingredient_items(item: PlanItem, resolution: Resolution) -> list[PlanItem]:
    """The item once per KB ingredient. A combination's dose becomes the ingredient's amount when the
    product fixes its strength and the dose counts tablets or capsules (or is a whole or half number of
    the product's total, "co-amoxiclav 625 mg"); otherwise the ingredient's amount is unknown."""
    if len(resolution.ingredients) <= 1:
        return [
            item.model_copy(update={"generic": name, "ingredients": (name,)}) for name in resolution.drugs
        ]
    units = _units_taken(item, resolution.ingredients)
    parts = []
    for part in resolution.ingredients:
        known = units is not None and part.strength is not None
        # A dose written for the product whose share of this ingredient is unknown is unreadable, not absent.
        written = f"{number_text(item.dose or 0)} {item.unit or ''}".strip()
        unknown = (
            () if known or item.dose is None else ((f"the {part.drug} in", f"{written} of {item.drug}"),)
        )
        update = {
            "generic": part.drug,
            "ingredients": (part.drug,),
            "dose": units * part.strength if units is not None and part.strength is not None else None,
            "unit": part.unit if known else None,
            "unreadable": (*item.unreadable, *unknown),
        }
        parts.append(item.model_copy(update=update))
    return parts


def _units_taken(item: PlanItem, ingredients: tuple[Ingredient, ...]) -> float | None:
    """How many tablets or capsules of a combination one dose is, or None when that cannot be told."""
    if item.dose is None or item.unit is None:
        return None
    if canonical_unit(item.unit) in ("tablet", "capsule"):
        return item.dose
    strengths = [part.strength for part in ingredients if part.strength is not None]
    amount = normalise_dose(item.dose, item.unit, ingredients[0].unit or "")
    if len(strengths) < len(ingredients) or amount is None:
        return None
    units = amount / sum(strengths)
    # A whole or half tablet only: any other amount does not say how it splits between the ingredients.
    return units if abs(units * 2 - round(units * 2)) < 1e-9 else None


def _unverified_drug(item: PlanItem, resolution: Resolution, kb: KnowledgeBase) -> Violation:
    lacking = ", ".join(resolution.missing)
    if not resolution.missing:
        detail = f"'{item.drug}' matches no drug of the knowledge base"
    elif resolution.ingredients:
        detail = f"'{item.drug}' also holds {lacking}, which the knowledge base lacks: checked only in part"
    else:
        detail = f"'{item.drug}' is {lacking}, which the knowledge base lacks"
    return Violation(
        kind="unverified",
        severity="unverified",
        drug=item.drug,
        entry=f"drugs_v{kb.version}: " + (f"no {lacking}" if lacking else "no match"),
        source=f"consultation KB v{kb.version}",
        detail=detail,
    )


def _is_tablet(item: PlanItem, index: _Index) -> bool:
    """Taken by mouth as a solid form: oral route (the item's, else the KB drug's) and no liquid unit
    or liquid form named."""
    drug = index.drugs.get(item.generic or next(iter(item.ingredients), ""))
    route = canonical_route(item.route) if item.route else drug.route if drug else None
    unit = canonical_unit(item.unit) if item.unit else drug.usual_dose.unit if drug else ""
    liquid = unit in _LIQUID_UNITS or any(word in item.drug.lower() for word in _LIQUID_WORDS)
    return route == "oral" and not liquid


def _violation(
    kind: ViolationKind, severity: Severity, drug: Drug, entry: str, detail: str, source: str | None = None
) -> Violation:
    """A violation of a drug's KB entry (of its dosing entry when `source` is given)."""
    return Violation(
        kind=kind, severity=severity, drug=drug.name, entry=entry, source=source or drug.source, detail=detail
    )
