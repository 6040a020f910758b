"""The clinical safety critic: a treatment plan checked against the patient and the knowledge base.

Pure functions over (plan, patient facts, KB). Each violation names the KB entry that fired and its
source. Each plan item's drug text resolves to its KB ingredients (`kb.resolve`: brands, salts, spellings,
combination products); each ingredient is checked on its own and against the plan's other ingredients and
the patient's medicines, and a combination's dose becomes each ingredient's amount when the product fixes
its strength (2 tablets of co-codamol 30/500: codeine 60 mg, paracetamol 1000 mg; the same ingredient in
two items sums into one daily total). Allergies and current medicines resolve the same way. Rules, per
planned KB drug (plan order), then per drug pair, then per item not wholly resolved:
- allergy: the drug, its class or its allergy class is in the patient's allergies (drug or class ids; an
  allergy to a drug extends to that drug's allergy class). cross_reactivity: otherwise, a class
  cross-reactive with an allergy class (a drug's `cross_reactive`, read both ways). Both hard.
- contraindication: a contraindication of the drug or its class with one of the patient's conditions or
  present AIU states; absolute = hard, relative = soft.
- profile conflicts, soft: pregnancy / lactation (the drug's category is `avoid`), age_band (no maximum
  daily dose for the patient's band), renal / hepatic (impairment and the drug has a renal / hepatic note).
- doses, after unit conversion to the KB drug's unit: dose_above_maximum (the drug's daily total over the
  plan's items above the band's maximum), dose_below_half_usual (one dose below half the usual dose; not
  for children: the usual dose is an adult's). Both hard. wrong_route (soft): a route other than the
  drug's. A dose whose unit does not convert gets no verdict.
- interaction: a drug or class pair of the KB among plan x plan and plan x current medications (pairs
  wholly within current medications are the patient's own business, not the plan's); severe = hard,
  moderate = soft.
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
from tasks.benchmarks.consult.kb.models import Condition, Drug, Interaction
from tasks.benchmarks.consult.kb.names import unknown_name
from tasks.benchmarks.consult.kb.resolve import Ingredient, Resolution, resolve_drug
from tasks.benchmarks.consult.treatment import canonical_route, canonical_unit, daily_amount, normalise_dose

ViolationKind = Literal[
    "contraindication", "allergy", "cross_reactivity", "interaction", "pregnancy", "lactation", "age_band",
    "renal", "hepatic", "dose_above_maximum", "dose_below_half_usual", "wrong_route", "minimum_age",
    "dose_unreadable", "unverified",
]  # fmt: skip
# hard fails PSC; soft is reported only; unverified: the critic could not check the item (an unresolved
# drug, a dose it cannot read), so the plan cannot be called safe: PSC fails too.
Severity = Literal["hard", "soft", "unverified"]
# The kinds PCR counts: a drug that conflicts with the patient's profile.
PROFILE_CONFLICTS = frozenset(
    {"allergy", "cross_reactivity", "pregnancy", "lactation", "age_band", "renal", "hepatic"}
)
# Profile flags that are also AIU states the KB's contraindications name.
_PROFILE_STATES = ("pregnancy", "breastfeeding", "renal_impairment", "hepatic_impairment")
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


def patient_facts(case: ConsultCase) -> PatientFacts:
    """The case's gold conditions, its present AIUs and the profile's flags as states."""
    return PatientFacts(
        profile=case.profile,
        conditions=frozenset(gold.condition_id for gold in case.gold),
        states=frozenset(aiu.aiu_id for aiu in case.aius if aiu.present) | _profile_states(case.profile),
    )


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
    """Why the critic cannot read an allergy (a drug class id of the KB, or a drug name that resolves wholly
    to KB drugs: generic, brand, salt, combination), or None."""
    index = _index(kb)
    if allergy in index.class_ids or resolve_drug(kb, allergy).complete:
        return None
    names = [*index.drugs, *sorted(index.class_ids)]
    return unknown_name(allergy, f"a drug class id or {_DRUG_NAMES}", names, f"drugs_v{kb.version}.yaml")


def drug_problem(name: str, kb: KnowledgeBase) -> str | None:
    """Why `name` (a current medicine, a drug a constraint names) does not resolve wholly to KB drugs, or
    None."""
    if resolve_drug(kb, name).complete:
        return None
    return unknown_name(name, _DRUG_NAMES, list(_index(kb).drugs), f"drugs_v{kb.version}.yaml")


def critique(plan: TreatmentPlan, facts: PatientFacts, kb: KnowledgeBase) -> Critique:
    """Every violation of the plan for this patient, in a fixed order (see the module docstring)."""
    index = _index(kb)
    allergies = _resolve_allergies(_as_kb_drugs(facts.profile.allergies, kb), index)
    band = facts.profile.age_band
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
        violations += _profile_conflicts(drug, states, band)
        violations += _dose_violations(drug, items, band)
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
        allergies = _resolve_allergies(_as_kb_drugs((value,), kb), index)
        return not any(_allergy_violations(drug, allergies, index) for drug in drugs)
    if kind == "pregnancy":
        return not any(
            drug.pregnancy == "avoid"
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
        # drug -> its contraindications, its own first, then its class's, each in file order.
        self.contraindications = {
            drug.name: tuple(
                item
                for own in (True, False)
                for item in kb.contraindications
                if (item.drug == drug.name if own else item.drug_class == drug.drug_class)
            )
            for drug in kb.drugs
        }
        interactions = {(item.scope, frozenset((item.a, item.b))): item for item in kb.interactions}
        # drug -> other drug -> their interaction (drug pair first, then class pair), for every pair.
        self.partners: dict[str, dict[str, Interaction]] = {}
        for first in kb.drugs:
            for second in kb.drugs:
                found = interactions.get(("drug", frozenset((first.name, second.name)))) or interactions.get(
                    ("class", frozenset((first.drug_class, second.drug_class)))
                )
                if found is not None and first.name != second.name:
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


def _resolve_allergies(allergies: Iterable[str], index: _Index) -> tuple[list[str], list[str]]:
    """(allergy drug names, allergy classes); a drug allergy adds the drug's allergy class."""
    drugs, classes = [], []
    for allergy in allergies:
        if allergy in index.drugs:
            drugs.append(allergy)
            allergy = index.drugs[allergy].allergy_class or ""
        if allergy in index.class_ids:
            classes.append(allergy)
    return drugs, list(dict.fromkeys(classes))


def _allergy_violations(drug: Drug, allergies: tuple[list[str], list[str]], index: _Index) -> list[Violation]:
    """At most one: the allergy itself, else a cross-reactive class."""
    drugs, classes = allergies
    name = drug.name
    if name in drugs:
        return [_violation("allergy", "hard", drug, f"drug {name}", f"the patient is allergic to {name}")]
    for allergy in classes:
        for field, value in (("allergy_class", drug.allergy_class), ("drug_class", drug.drug_class)):
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


def _profile_conflicts(drug: Drug, states: frozenset[str], band: str) -> list[Violation]:
    name, found = drug.name, []
    if "pregnancy" in states and drug.pregnancy == "avoid":
        detail = f"{name} is to be avoided in pregnancy"
        found.append(_violation("pregnancy", "soft", drug, f"drug {name}: pregnancy", detail))
    if "breastfeeding" in states and drug.lactation == "avoid":
        detail = f"{name} is to be avoided while breastfeeding"
        found.append(_violation("lactation", "soft", drug, f"drug {name}: lactation", detail))
    if getattr(drug.max_daily, band) is None:
        detail = f"{name} has no maximum daily dose for the {band} age band: not for this patient"
        found.append(_violation("age_band", "soft", drug, f"drug {name}: max_daily.{band}", detail))
    if "renal_impairment" in states and drug.renal is not None:
        found.append(_violation("renal", "soft", drug, f"drug {name}: renal", drug.renal))
    if "hepatic_impairment" in states and drug.hepatic is not None:
        found.append(_violation("hepatic", "soft", drug, f"drug {name}: hepatic", drug.hepatic))
    return found


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


def _dose_violations(drug: Drug, items: list[PlanItem], band: str) -> list[Violation]:
    name, unit, found = drug.name, drug.usual_dose.unit, []
    maximum = getattr(drug.max_daily, band)
    dosed = [(item, amount) for item in items if (amount := daily_amount(item, unit)) is not None]
    total = sum(amount for _, amount in dosed)
    if maximum is not None and dosed and total > maximum:
        parts = " + ".join(
            f"{_number(item.frequency_per_day or 0)} x {_dose_text(item)}" for item, _ in dosed
        )
        detail = f"{parts} = {_number(total)} {unit} a day > {_number(maximum)} {unit}"
        found.append(_violation("dose_above_maximum", "hard", drug, f"drug {name}: max_daily.{band}", detail))
    usual = drug.usual_dose.dose
    for item in items if band != "child" else ():
        dose = normalise_dose(item.dose, item.unit, unit) if item.dose is not None and item.unit else None
        if dose is not None and dose < usual / 2:
            detail = f"{_dose_text(item)} a dose < half the usual {_number(usual)} {unit}"
            entry = f"drug {name}: usual_dose"
            found.append(_violation("dose_below_half_usual", "hard", drug, entry, detail))
    for item in items:
        if item.route is not None and canonical_route(item.route) != drug.route:
            detail = f"{name} given {item.route}; the KB gives it {drug.route}"
            found.append(_violation("wrong_route", "soft", drug, f"drug {name}: route", detail))
    return found


def _dose_text(item: PlanItem) -> str:
    return f"{_number(item.dose or 0)} {item.unit}"


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


def _item_resolution(item: PlanItem, kb: KnowledgeBase) -> Resolution:
    """The item's drug text resolved; a text that names no drug at all leaves the KB drugs the item
    records (a plan built by hand, or parsed with a lower fuzzy threshold)."""
    resolution = resolve_drug(kb, item.drug)
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
    return [
        item.model_copy(
            update={
                "generic": part.drug,
                "ingredients": (part.drug,),
                "dose": None if units is None or part.strength is None else units * part.strength,
                "unit": None if units is None or part.strength is None else part.unit,
            }
        )
        for part in resolution.ingredients
    ]


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


def _violation(kind: ViolationKind, severity: Severity, drug: Drug, entry: str, detail: str) -> Violation:
    return Violation(
        kind=kind, severity=severity, drug=drug.name, entry=entry, source=drug.source, detail=detail
    )


def _number(value: float) -> str:
    """4000.0 -> "4000", 0.2 -> "0.2"."""
    return f"{value:.4f}".rstrip("0").rstrip(".")
