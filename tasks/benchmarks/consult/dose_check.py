"""The critic's dose rules: a plan item as its KB ingredients, each with its dose in the KB's terms, and
what those doses break.

A plan item is checked only when all of it was read: its drug (every word, `kb.resolve`), its dose
(finite, above 0, in a unit that converts to the KB's), its frequency, the salt or ester written with it
(converted to the KB's dose basis with the factor of `salts_v<N>.yaml`, which cites each), and for a
combination product each ingredient's amount. Anything else is `dose_unreadable` (unverified), naming what
could not be read. Rules, per KB drug over every item that gives it (see critic.py for the order):
- dose_above_maximum (hard): the daily total (weekly for a once-weekly drug) above the maximum for the
  patient's band, or a child's mg/kg maximum x weight, capped; the same ingredient in several items, or
  in a current medicine, sums into one total (a current medicine's dose is unknown: any amount of it
  passes a limit the plan already reaches, and below that the total is unverified);
- dose_too_frequent (hard): a once-weekly drug given more often (MHRA: methotrexate);
- dose_below_half_usual (hard): one dose below half the usual dose (not for children: the usual dose is an
  adult's);
- wrong_route (soft).
A total over (under) a limit with some of the KB's standard strengths and not others is unverified: the
strength decides, and the plan gives none.
"""

import math

from tasks.benchmarks.consult.case import PatientProfile
from tasks.benchmarks.consult.doses import (
    COUNT_FORMS,
    ROUTES,
    DoseAmount,
    canonical_route,
    canonical_unit,
    daily_amount,
    dose_amount,
    normalise_dose,
    number_text,
)
from tasks.benchmarks.consult.episode import PlanItem
from tasks.benchmarks.consult.kb.loading import KnowledgeBase
from tasks.benchmarks.consult.kb.models import Dosing, Drug
from tasks.benchmarks.consult.kb.resolve import Ingredient, Resolution, resolve_drug
from tasks.benchmarks.consult.violations import UNREADABLE, Violation, drug_violation

_STRENGTH_DECIDES = ": the strength decides, and the plan gives none"
_MASS_UNITS = frozenset({"microgram", "mg", "g"})


def plan_parts(item: PlanItem, kb: KnowledgeBase) -> tuple[Resolution, list[PlanItem]]:
    """The item's drug text resolved, and the item once per KB ingredient with that ingredient's dose."""
    resolution = _item_resolution(item, kb)
    return resolution, [
        _in_kb_terms(part, ingredient, item, kb) for part, ingredient in _ingredient_items(item, resolution)
    ]


def ingredient_doses(
    item: PlanItem, profile: PatientProfile, kb: KnowledgeBase
) -> list[tuple[str, float | None, str]]:
    """(KB ingredient, amount a day in its KB unit or None when it cannot be worked out, that unit) for
    each ingredient of the item, as the dose checks read them (strengths, a combination's parts, salts,
    weight)."""
    found = []
    for part in plan_parts(item, kb)[1]:
        drug = kb.drug(part.generic or "")
        if drug is None:
            continue
        dosing = kb.dosing_of(drug.name)
        strengths = dosing.strengths if dosing is not None else ()
        unit = drug.usual_dose.unit
        daily = None if part.unreadable else daily_amount(part, unit, strengths, profile.weight_kg)
        found.append((drug.name, daily, unit))
    return found


def dose_violations(
    drug: Drug,
    items: list[PlanItem],
    profile: PatientProfile,
    dosing: Dosing | None,
    taken_in: tuple[str, ...],
) -> list[Violation]:
    """Every dose rule on the items that give `drug` (their parts for it), for this patient; `taken_in`:
    the patient's current medicines that hold the drug too."""
    name, unit = drug.name, drug.usual_dose.unit
    strengths = dosing.strengths if dosing is not None else ()
    amounts = [(item, dose_amount(item, unit, strengths, profile.weight_kg)) for item in items]
    readable = [(item, amount) for item, amount in amounts if amount is not None and not item.unreadable]
    found = _maximum_violations(
        drug,
        [(item, amount) for item, amount in readable if item.frequency_per_day],
        profile,
        dosing,
        taken_in,
    )
    if dosing is not None and dosing.weekly is not None:
        for item in items:
            if item.frequency_per_day is not None and _above(per_week := item.frequency_per_day * 7, 1):
                detail = (
                    f"{name} is taken once a week; the plan gives it {number_text(per_week)} times a week"
                )
                entry = f"dosing {name}: weekly"
                found.append(drug_violation("dose_too_frequent", "hard", drug, entry, detail, dosing.source))
    half = drug.usual_dose.dose / 2
    for _, amount in readable if profile.age_band != "child" else ():
        if amount.low < half:
            detail = f"{amount.arithmetic} a dose < half the usual {number_text(drug.usual_dose.dose)} {unit}"
            if amount.high >= half:
                detail += f" at {number_text(amount.low)} {unit}{_STRENGTH_DECIDES}"
            kind, severity = ("dose_below_half_usual", "hard") if amount.high < half else UNREADABLE
            found.append(drug_violation(kind, severity, drug, f"drug {name}: usual_dose", detail))
    for item in items:
        route = None if item.route is None else canonical_route(item.route)
        if route is not None and route not in ROUTES:  # "oral tablet": not known to be the KB's route
            detail = f"'{item.drug}': the route '{item.route}' is not read"
            found.append(drug_violation("unverified", "unverified", drug, f"drug {name}: route", detail))
        elif route is not None and route != drug.route:
            detail = f"{name} given {item.route}; the KB gives it {drug.route}"
            found.append(drug_violation("wrong_route", "soft", drug, f"drug {name}: route", detail))
    for item, amount in amounts:
        problem = _unread_dose(item, amount, unit, profile.weight_kg)
        if problem is not None:
            found.append(drug_violation(*UNREADABLE, drug, f"drug {name}: dose", f"'{item.drug}': {problem}"))
    return found


def _maximum_violations(
    drug: Drug,
    dosed: list[tuple[PlanItem, DoseAmount]],
    profile: PatientProfile,
    dosing: Dosing | None,
    taken_in: tuple[str, ...],
) -> list[Violation]:
    """The drug's total a day (a week for a once-weekly drug) over its items against its maximum: hard when
    above it whatever the strength, unverified when only some standard strength puts it above. A current
    medicine holding the drug adds an unknown amount above 0."""
    unit = drug.usual_dose.unit
    if not dosed:
        return []
    daily_limit, entry, source, note = _daily_maximum(drug, profile, dosing)
    if daily_limit is None:  # the KB gives no most for this patient's age band: the dose cannot be checked
        band = profile.age_band
        detail = f"the KB gives {drug.name} no maximum for the {band} age band: the dose is not checked"
        return [drug_violation(*UNREADABLE, drug, entry, detail, source)]
    days, period, limit = 1, "a day", daily_limit
    if dosing is not None and dosing.weekly is not None:
        days, period, limit = 7, "a week", dosing.weekly.maximum
        entry, source, note = f"dosing {drug.name}: weekly.maximum", dosing.source, ""
    low = sum(amount.low * (item.frequency_per_day or 0) * days for item, amount in dosed)
    high = sum(amount.high * (item.frequency_per_day or 0) * days for item, amount in dosed)
    parts = " + ".join(
        f"{number_text((item.frequency_per_day or 0) * days)} x {amount.arithmetic}" for item, amount in dosed
    )
    total = number_text(high) if low == high else f"{number_text(low)}-{number_text(high)}"
    if taken_in:
        medicines = ", ".join(taken_in)
        detail = (
            f"{parts} = {total} {unit} {period}, plus the {drug.name} in {medicines}, which the patient "
            f"already takes; the most is {number_text(limit)} {unit}{note}"
        )
        if not low < limit * (1 - 1e-9):
            return [drug_violation("dose_above_maximum", "hard", drug, entry, detail, source)]
        return [drug_violation(*UNREADABLE, drug, entry, detail + ": the total is unknown", source)]
    if not _above(high, limit):
        return _weight_unknown(drug, profile, dosing, f"{parts} = {total} {unit} {period}")
    detail = f"{parts} = {total} {unit} {period} > {number_text(limit)} {unit}{note}"
    if not _above(low, limit):
        return [drug_violation(*UNREADABLE, drug, entry, detail + _STRENGTH_DECIDES, source)]
    return [drug_violation("dose_above_maximum", "hard", drug, entry, detail, source)]


def _weight_unknown(
    drug: Drug, profile: PatientProfile, dosing: Dosing | None, total: str
) -> list[Violation]:
    """A child's dose within the age band's most, where the KB doses children by weight and the weight is
    not recorded: not checked (2 g of paracetamol a day is within the band and 200 mg/kg at 10 kg)."""
    per_kg = dosing.child_per_kg if dosing is not None else None
    if profile.age_band != "child" or profile.weight_kg is not None or per_kg is None or dosing is None:
        return []
    detail = (
        f"{total}: the most for a child is {number_text(per_kg.per_kg)} {drug.usual_dose.unit}/kg a day, and "
        "the patient's weight is not recorded"
    )
    return [drug_violation(*UNREADABLE, drug, f"dosing {drug.name}: child_per_kg", detail, dosing.source)]


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


def _unread_dose(item: PlanItem, amount: DoseAmount | None, unit: str, weight_kg: float | None) -> str | None:
    """Why the critic cannot work out the item's dose a day, or None when it can."""
    if item.unreadable:
        return "; ".join(f"{field}: {why}" for field, why in item.unreadable)
    if item.dose is None:
        return "no dose is given"
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


def _item_resolution(item: PlanItem, kb: KnowledgeBase) -> Resolution:
    """The item's drug text resolved; a text that names no drug at all leaves the KB drugs the item
    records (a plan built by hand, or parsed with a lower fuzzy threshold)."""
    resolution = resolve_drug(kb, item.drug)
    unknown_strength = any(part.strength is None for part in resolution.ingredients)
    if resolution.method == "combination" and unknown_strength and item.dose is not None and item.unit:
        # A product's dose written as its total ("co-amoxiclav", 625 mg) names its variant (500/125); a
        # count of tablets names none, and is no word of the drug's name.
        with_dose = resolve_drug(kb, f"{item.drug} {number_text(item.dose)} {item.unit}")
        resolution = with_dose if with_dose.unknown == resolution.unknown else resolution
    if resolution.ingredients or resolution.missing or resolution.unknown:
        return resolution
    given = [name for name in item.ingredients or (item.generic or "",) if kb.drug(name) is not None]
    return Resolution(method="generic", ingredients=tuple(Ingredient(drug=name) for name in given))


def _ingredient_items(item: PlanItem, resolution: Resolution) -> list[tuple[PlanItem, Ingredient]]:
    """The item once per KB ingredient. A combination's dose becomes the ingredient's amount when the
    product fixes its strength and the dose counts tablets or capsules (or is a whole or half number of
    the product's total, "co-amoxiclav 625 mg"); otherwise the ingredient's amount is unknown."""
    if len(resolution.ingredients) <= 1:
        return [
            (item.model_copy(update={"generic": part.drug, "ingredients": (part.drug,)}), part)
            for part in resolution.ingredients
        ]
    units = _units_taken(item, resolution.ingredients)
    parts = []
    for part in resolution.ingredients:
        known = units is not None and part.strength is not None
        # A dose written for the product whose share of this ingredient is unknown is unreadable, not absent.
        written = f"{number_text(item.dose or 0)} {item.unit or ''}".strip()
        share = (
            f"how much {part.drug} is in {written} of {item.drug} is not known: name the product's strength"
        )
        update = {
            "generic": part.drug,
            "ingredients": (part.drug,),
            "dose": units * part.strength if units is not None and part.strength is not None else None,
            "unit": part.unit if known else None,
            "strength": None,
            "strength_unit": None,
            "unreadable": (*item.unreadable, *(() if known or item.dose is None else (("dose", share),))),
        }
        parts.append((item.model_copy(update=update), part))
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


def _in_kb_terms(part: PlanItem, ingredient: Ingredient, item: PlanItem, kb: KnowledgeBase) -> PlanItem:
    """The ingredient's part with a salt's dose converted to the KB's dose basis (`kb.salt_form`): a mass
    dose and a mass strength by the salt's factor. A salt the table lacks for the drug, or a count of units
    whose strength only the KB's standard strengths (of the base) give, cannot be converted."""
    if ingredient.salt is None:
        return part
    form = kb.salt_form(ingredient.drug, ingredient.salt)
    written = f"{ingredient.drug} {ingredient.salt}"
    if form is None:
        why = f"'{item.drug}': the KB's salt table has no factor for {written} (salts_v{kb.version}.yaml)"
        return part.model_copy(update={"unreadable": (*part.unreadable, ("drug", why))})
    if math.isclose(form.factor, 1.0):
        return part
    update: dict[str, object] = {}
    unit = canonical_unit(part.unit) if part.unit else None
    if part.dose is not None and (unit in _MASS_UNITS or unit == "mg/kg"):
        update["dose"] = part.dose * form.factor
    if part.strength is not None and part.strength_unit is not None:
        if canonical_unit(part.strength_unit.removesuffix("/ml")) in _MASS_UNITS:
            update["strength"] = part.strength * form.factor
    elif unit is not None and unit not in _MASS_UNITS and unit != "mg/kg":
        why = f"a {unit} of {written} holds an amount of {ingredient.drug} the plan does not give"
        update["unreadable"] = (*part.unreadable, ("strength", why))
    return part.model_copy(update=update)
