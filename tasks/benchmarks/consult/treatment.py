"""Read a treatment plan from an agent's reply, every part of it, or say why it cannot be read.

A plan is a JSON list of objects that each have a `"drug"` key, or an object `{"plan": [...], "advice":
"..."}`, anywhere in the reply (code fences and prose around it allowed; JSON found by
`tasks.core.json_text`, in time linear in the reply). `[]` is an empty plan. A reply holding two different
plans ("Plan A: [...] Actually use: [...]"), a plan list with an entry that is not an object with a
non-empty `"drug"` string, JSON nested too deep to read, or more brackets than the scanner reads is
unparseable, with the reason: never a silent choice of one list. So is one with JSON beside the plan that
was not read: text opening like JSON (`[{`, `{"`) that does not decode (a second plan cut off or with a
trailing comma), an object with a `"drug"` key outside the plan list (`Also add: {"drug": ...}`, or the
drug whose `"alternatives"` are the list), or a key of a plan object other than `"plan"` and `"advice"`
(`"also_start": [...]`). So is JSON with an object that gives a key twice (`{"drug": "warfarin", "drug":
"paracetamol"}`: a decoder keeps one value, and which one was meant is not read). The same plan written
twice counts once. A list of more than `MAX_PLAN_ITEMS` items is unparseable too.

Each item's fields are read by `doses.read_dose` (a dose and any unit or strength in it),
`frequency.read_frequency` (`frequency_per_day` and `frequency`, each one given, must read alike),
`doses.read_unit` and `doses.read_strength` (with any `strength_unit`); a field written but not read (a
`route` that is no text, a `strength_unit` with no strength to go with), or a key that is no field
(`ITEM_KEYS`), is kept in `PlanItem.unreadable` with the reason, and the critic then calls the item
unverified. A unit in the dose text and the `unit` key
must agree; a count of doses a day in the dose text ("1000 mg x2") must agree with any frequency given. A
tablet's strength comes from a `strength` key, the dose, unit or drug text (`"paracetamol 500 mg
tablets"`, `"120 mg/5 ml"`): every one given must be the same strength, and the drug text of a single
drug gives one, read whole (`"500 mg or 1 g tablets"` and `"1.000 mg"` are not read; a combination's name
gives its ingredients' strengths, which `resolve_drug` reads). Drug names go to KB drugs
through `kb.resolve.resolve_drug`: `generic` is the drug of a single-drug item, `ingredients` every KB drug
of the item.
"""

import json
import math
import re
from collections import Counter
from typing import Any, NamedTuple

from tasks.benchmarks.consult.doses import (
    canonical_unit,
    find_strength,
    normalise_dose,
    number_text,
    read_dose,
    read_strength,
    read_unit,
    same_strength,
)
from tasks.benchmarks.consult.episode import PlanItem, TreatmentPlan
from tasks.benchmarks.consult.frequency import Frequency, read_frequency
from tasks.benchmarks.consult.kb.icd11 import DEFAULT_THRESHOLD, normalise_drug_name
from tasks.benchmarks.consult.kb.loading import KnowledgeBase
from tasks.benchmarks.consult.kb.resolve import resolve_drug
from tasks.core.json_text import MAX_DEPTH, scan_json

# No treatment plan has more drugs than this; a longer list is not read (and would cost seconds to resolve).
MAX_PLAN_ITEMS = 50
_FENCE = re.compile(r"```[a-zA-Z]*[ \t]*\n(.*?)```", re.DOTALL)
# Where JSON opens in a reply: a list of objects, lists or strings, or an object with a key (not "[1]" or a
# Markdown link, whose brackets hold prose).
_JSON_OPENS = re.compile(r'[\[{]\s*+["{\[]')


class PlanReading(NamedTuple):
    """The reply's plan, or None with why none could be read."""

    plan: TreatmentPlan | None
    problem: str | None = None


def is_plan_attempt(text: str, kb: KnowledgeBase | None = None, plan: TreatmentPlan | None = None) -> bool:
    """The reply tries to give a plan: it has a `"drug"` key, something that opens a JSON list, or a JSON
    object; or, with `kb`, it names a KB drug the plan in force (`plan`) does not hold. A revision in
    prose or in a JSON shape of its own ("Stop it and take amoxicillin instead", `{"plan": "..."}`) was
    read as keeping the plan, and so as keeping to a constraint it breaks."""
    if '"drug"' in text or re.search(r"\[\s*[\]{]", text) is not None:
        return True
    if any(isinstance(found.value, dict) for found in scan_json(text).found):
        return True
    if kb is None:
        return False
    in_force = {item.generic for item in plan.items if item.generic} if plan is not None else set()
    return not kb.drugs_named_in(text) <= in_force


def parse_plan(text: str, kb: KnowledgeBase, threshold: float = DEFAULT_THRESHOLD) -> TreatmentPlan | None:
    """The reply's plan, or None when no plan can be read (`read_plan_reply` says why)."""
    return read_plan_reply(text, kb, threshold).plan


def read_plan_reply(text: str, kb: KnowledgeBase, threshold: float = DEFAULT_THRESHOLD) -> PlanReading:
    """The one plan of a reply (see the module docstring). Advice is the object's `advice` field, else the
    prose around the JSON that holds the plan (its whole code fence when fenced)."""
    repeated = _RepeatedKeys()
    scan = scan_json(text, object_pairs_hook=repeated)
    if scan.stopped_at is not None:
        read_to = f"{scan.stopped_at:,}"
        return PlanReading(None, f"the reply holds more brackets than are read (read up to char {read_to})")
    if scan.too_deep:  # it may hold a plan that was not read
        return PlanReading(None, f"JSON nested deeper than {MAX_DEPTH} levels cannot be read")
    if repeated:
        return PlanReading(None, f'a JSON object gives the key "{repeated[0]}" more than once')
    candidates: list[tuple[list[Any], Any, tuple[int, int]]] = []
    strays: list[dict[str, Any]] = []
    unread_keys: list[str] = []
    for found in scan.found:
        values = _plan_values(found.value)
        candidates += [(raw, advice, (found.start, found.end)) for raw, advice in values.plans]
        strays += values.strays
        unread_keys += values.unread_keys
    if not candidates:
        return PlanReading(None, 'no JSON list of items with a "drug", nor {"plan": [...]}')
    if unread_keys:  # "also_start": [...], "stop": "warfarin": beside the plan, and never read
        return PlanReading(None, f'"{unread_keys[0]}" beside "plan" is not read: only "advice" is')
    distinct = list(dict.fromkeys(json.dumps(raw, sort_keys=True, default=str) for raw, _, _ in candidates))
    if len(distinct) > 1:
        return PlanReading(None, f"the reply gives {len(distinct)} different plans; it must give one")
    undecoded = _undecoded_json(text, [(found.start, found.end) for found in scan.found])
    if undecoded is not None:  # it may be a second plan, or more of this one
        return PlanReading(None, f"JSON at char {undecoded:,} does not decode: {_shown(text[undecoded:])}")
    if strays:
        shown = _shown(json.dumps(strays[0], default=str))
        return PlanReading(None, f'an object with a "drug" lies outside the plan list: {shown}')
    # The same plan written twice (a list, then {"plan": ..., "advice": ...}): the advice where one is given.
    raw, advice, (start, end) = next((c for c in candidates if isinstance(c[1], str)), candidates[0])
    items = _plan_items(raw, kb, threshold)
    if isinstance(items, str):
        return PlanReading(None, items)
    if not isinstance(advice, str):
        start, end = _fence_around(text, start, end)
        advice = text[:start].strip() + "\n" + text[end:].strip()
    return PlanReading(TreatmentPlan(items=items, advice=advice.strip()))


class _RepeatedKeys(list[str]):
    """An `object_pairs_hook` that decodes an object as a dict and keeps every key an object gives more than
    once: the decoder alone keeps the last value without a word."""

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        decoded = dict(pairs)
        if len(decoded) < len(pairs):
            self.extend(key for key, count in Counter(key for key, _ in pairs).items() if count > 1)
        return decoded


class _PlanValues(NamedTuple):
    plans: list[tuple[list[Any], Any]]  # each plan's list, and the advice beside it or None
    strays: list[dict[str, Any]]  # objects with a "drug" key that are no entry of a plan list
    unread_keys: list[str]  # keys of a plan object other than "plan" and "advice"


def _plan_values(value: Any) -> _PlanValues:
    """Every plan in a decoded JSON value, at any depth, and what lies beside them unread. A list is a plan
    when an entry has a "drug" key, or when it is the whole value and empty; an object when it has a "plan"
    key (its advice is searched too: it may hold a drug)."""
    if value == []:
        return _PlanValues([([], None)], [], [])
    found = _PlanValues([], [], [])
    pending = [value]
    while pending:
        current = pending.pop()
        if isinstance(current, dict) and "plan" in current:
            raw = current["plan"]
            found.plans.append((raw if isinstance(raw, list) else [raw], current.get("advice")))
            found.unread_keys.extend(key for key in current if key not in ("plan", "advice"))
            pending.append(current.get("advice"))
        elif isinstance(current, list) and any(
            isinstance(entry, dict) and "drug" in entry for entry in current
        ):
            found.plans.append((current, None))
        elif isinstance(current, dict):
            if "drug" in current:
                found.strays.append(current)
            pending.extend(reversed(list(current.values())))
        elif isinstance(current, list):
            pending.extend(reversed(current))
    return found


def _undecoded_json(text: str, decoded: list[tuple[int, int]]) -> int | None:
    """Where the first text opening like JSON lies outside every decoded span (spans in text order, none
    inside another), else None."""
    spans = iter(decoded)
    span = next(spans, None)
    for opening in _JSON_OPENS.finditer(text):
        while span is not None and span[1] <= opening.start():
            span = next(spans, None)
        if span is None or opening.start() < span[0]:
            return opening.start()
    return None


def _shown(text: str) -> str:
    """The start of a quoted text, enough to name it."""
    return text if len(text) <= 80 else text[:77] + "..."


def _fence_around(text: str, start: int, end: int) -> tuple[int, int]:
    """The span of the code fence holding text[start:end], else that span."""
    for fence in _FENCE.finditer(text):
        if fence.start(1) <= start and end <= fence.end(1):
            return fence.span()
    return start, end


def _plan_items(raw: list[Any], kb: KnowledgeBase, threshold: float) -> tuple[PlanItem, ...] | str:
    """The list's plan items, or why an entry is no item (not an object with a non-empty "drug" string)."""
    if len(raw) > MAX_PLAN_ITEMS:
        return f"the plan lists {len(raw):,} items: more than {MAX_PLAN_ITEMS} is no treatment plan"
    items = []
    for position, entry in enumerate(raw, start=1):
        drug = entry.get("drug") if isinstance(entry, dict) else None
        if not isinstance(drug, str) or not drug.strip():
            shown = _shown(json.dumps(entry, default=str))
            return f'plan item {position} ({shown}) is not an object with a "drug" name'
        items.append(_plan_item(entry, drug.strip(), kb, threshold))
    return tuple(items)


# The keys an item is read by: the spec's (consult.md, "Treatment plan"), a frequency in words, a strength.
ITEM_KEYS = frozenset(
    {"drug", "dose", "unit", "frequency_per_day", "days", "route", "frequency", "strength", "strength_unit"}
)


def _plan_item(entry: dict[str, Any], drug: str, kb: KnowledgeBase, threshold: float) -> PlanItem:
    """One item, every field read or its problem kept in `unreadable`: a key no field is read from
    ("extra_dose", "status": "do not give") may change what the item means, so it is a problem too."""
    problems = [(str(key), "not a field of a plan item: not read") for key in entry if key not in ITEM_KEYS]
    dose = read_dose(entry.get("dose"))
    unit, strength_in_unit, unit_problem = read_unit(entry.get("unit"))
    frequency = _item_frequency(entry, problems)
    strength_unit = entry.get("strength_unit")
    if isinstance(strength_unit, str) and not strength_unit.strip():
        strength_unit = None
    stated_strength = read_strength(entry.get("strength"), strength_unit)
    for field, problem in (("dose", dose.problem), ("unit", unit_problem), ("frequency", frequency.problem)):
        if problem is not None:
            problems.append((field, problem))
    if entry.get("strength") is not None and stated_strength is None:
        shown = json.dumps(entry["strength"], default=str)
        if strength_unit is not None:
            shown += f" with strength_unit {json.dumps(strength_unit, default=str)}"
        problems.append(("strength", f"{shown} is not a strength"))
    elif entry.get("strength") is None and strength_unit is not None:
        problems.append(
            ("strength_unit", f"{json.dumps(strength_unit, default=str)} is given with no strength")
        )
    if unit and dose.unit and canonical_unit(unit) != canonical_unit(dose.unit):
        problems.append(("unit", f"the dose says {dose.unit} and the unit says {unit}"))
    per_day = frequency.per_day
    if dose.per_day is not None:  # "1000 mg x2": the doses a day written with the dose
        if per_day is not None and abs(per_day - dose.per_day) > 1e-9:
            problems.append(
                ("frequency", f"the dose says {dose.per_day:g} a day and the frequency {per_day:g}")
            )
        per_day = dose.per_day
    dose_unit = unit or dose.unit or None
    if frequency.max_amount is not None:
        most_doses = frequency.per_day if frequency.is_maximum else None
        per_day = _allowed_by_amount(most_doses, frequency.max_amount, dose.dose, dose_unit, problems)
    resolution = resolve_drug(kb, drug, threshold)
    # A combination's name gives each ingredient's strength ("co-codamol 30 mg/500 mg"), read by resolve_drug.
    name_strength, name_problem = find_strength(drug) if len(resolution.ingredients) <= 1 else (None, None)
    if name_problem is not None:
        problems.append(("strength", name_problem))
    strengths = [
        found for found in (stated_strength, dose.strength, strength_in_unit, name_strength) if found
    ]
    strength = strengths[0] if strengths else None
    if strength is not None and any(not same_strength(strength, other) for other in strengths[1:]):
        shown = " and ".join(dict.fromkeys(f"{number_text(amount)} {unit}" for amount, unit in strengths))
        problems.append(("strength", f"the item gives different strengths: {shown}"))
    days = _days(entry.get("days"), problems)
    route = entry.get("route")
    if route is not None and not isinstance(route, str):  # ["intravenous"] was dropped, and the item passed
        problems.append(("route", f"{json.dumps(route, default=str)} is not a route"))
    return PlanItem(
        drug=drug,
        generic=normalise_drug_name(kb, drug, threshold),
        ingredients=resolution.drugs,
        dose=dose.dose if dose.problem is None else None,
        unit=dose_unit,
        frequency_per_day=per_day if not any(field == "frequency" for field, _ in problems) else None,
        days=days,
        route=route.strip() if isinstance(route, str) and route.strip() else None,
        strength=strength[0] if strength else None,
        strength_unit=strength[1] if strength else None,
        as_needed=frequency.as_needed,
        unreadable=tuple(problems),
    )


# The keys a plan item may give its doses a day in; each one given must read, and all alike.
FREQUENCY_KEYS = ("frequency_per_day", "frequency")


def _item_frequency(entry: dict[str, Any], problems: list[tuple[str, str]]) -> Frequency:
    """The item's doses a day from whichever of FREQUENCY_KEYS it gives (blank is not given); when it gives
    both, they must read alike, or the frequency is not read."""
    written = {
        key: entry[key]
        for key in FREQUENCY_KEYS
        if entry.get(key) is not None and not (isinstance(entry[key], str) and not entry[key].strip())
    }
    read = {key: read_frequency(value) for key, value in written.items()}
    if len(read) < 2:
        return next(iter(read.values()), read_frequency(None))
    (first, one), (second, other) = read.items()
    if (
        one.problem is None
        and other.problem is None
        and (one.per_day, one.as_needed) != (other.per_day, other.as_needed)
    ):
        problems.append(
            ("frequency", f"{first} {json.dumps(written[first], default=str)} and {second} "
             f"{json.dumps(written[second], default=str)} differ")
        )  # fmt: skip
    return one if one.problem is not None else other


def _allowed_by_amount(
    most_doses: float | None,
    maximum: tuple[float, str],
    dose: float | None,
    unit: str | None,
    problems: list[tuple[str, str]],
) -> float | None:
    """The doses a day a stated most amount a day allows ("max 8 sachets a day" with 2 sachets a dose: 4),
    fewer when a stated most doses a day is lower; or the problem when the amount and the dose do not
    convert. A regular count does not lower it: "1 g bd, max 6 g a day" lets 6 g be taken (frequency.py)."""
    amount, amount_unit = maximum
    in_dose_unit = normalise_dose(amount, amount_unit, unit) if dose is not None and unit else None
    if in_dose_unit is None or dose is None:
        problems.append(("frequency", f"the most a day, {amount:g} {amount_unit}, is not in the dose's unit"))
        return None
    doses = in_dose_unit / dose
    if not (math.isfinite(doses) and doses > 0):
        problems.append(("frequency", f"the most a day, {amount:g} {amount_unit}, is no count of doses"))
        return None
    return doses if most_doses is None else min(most_doses, doses)


# A course's length written whole: a number alone or of days or weeks ("5", "5 days", "2 weeks").
_DAYS = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(days?|d|weeks?|wks?)?\s*", re.IGNORECASE)


def _days(value: Any, problems: list[tuple[str, str]]) -> float | None:
    """The course's days: `5`, `"5 days"`, `"2 weeks"` (14); absent (None or blank) is None. Anything else
    ("3 months", "5-7 days", "10 doses", 0) is a problem, never its first number."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    days: float | None = None
    if isinstance(value, str) and (written := _DAYS.fullmatch(value)):
        weeks = (written.group(2) or "").lower().startswith("w")
        days = float(written.group(1)) * (7 if weeks else 1)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        days = float(value)
    if days is None or not (math.isfinite(days) and days > 0):
        problems.append(("days", f"{json.dumps(value, default=str)} is not a number of days"))
        return None
    return days
