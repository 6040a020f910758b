"""Read a treatment plan from an agent's reply, and put its doses in the knowledge base's units.

A plan is the first JSON list of objects that each have a `"drug"` key, or an object
`{"plan": [...], "advice": "..."}`, anywhere in the reply (code fences and prose around it allowed).
Fields are read tolerantly: numbers may be strings (`"500"`), a dose may carry its unit (`"500 mg"`,
`"1-2 tablets"`: the worst case, 2), a frequency may be words, shorthand or an interval (`"twice daily"`,
`"tds"`, `"q4h"`, `"every 6-8 hours"`: the most frequent, 4 a day; `"as needed, max 4 a day"`: the stated
maximum; `"once a week"`: 1/7; a `frequency` key is read when `frequency_per_day` is absent). A
tablet's strength comes from a `strength` key, else from the dose, unit or drug text (`"paracetamol
500 mg tablets"`, `"120 mg/5 ml"`). Drug names go to KB drugs through
`resolve.resolve_drug`: `generic` is the drug of a single-drug item, `ingredients` every drug of the
item. What was written but cannot be read is kept in `PlanItem.unreadable`.

Units: masses (mg, g, microgram under any spelling) convert to each other, volumes (ml, l) likewise;
counts (application, puff, spray, sachet, tablet, ...) compare only to the same unit, or to a mass through
a strength; per-weight doses (mg/kg) convert to a mass through the patient's weight. Anything else has no
conversion: the critic reports the dose as unreadable.
"""

import functools
import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from tasks.benchmarks.consult.episode import PlanItem, TreatmentPlan
from tasks.benchmarks.consult.kb.icd11 import DEFAULT_THRESHOLD, normalise_drug_name
from tasks.benchmarks.consult.kb.loading import KnowledgeBase
from tasks.benchmarks.consult.kb.models import Strength
from tasks.benchmarks.consult.kb.resolve import resolve_drug

_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.DOTALL)
_NUMBER = re.compile(r"^\s*(\d+(?:\.\d+)?|\.\d+)\s*(.*?)\s*$")
_JSON_START = re.compile(r"[\[{]")

# Canonical unit -> (dimension, size in that dimension's smallest unit). Integer sizes keep 200 microgram
# -> 0.2 mg exact (a division, not a multiplication by 0.001).
_UNIT_SIZES: dict[str, tuple[str, int]] = {
    "microgram": ("mass", 1),
    "mg": ("mass", 1000),
    "g": ("mass", 1_000_000),
    "ml": ("volume", 1),
    "l": ("volume", 1000),
}
_UNIT_ALIASES = {
    "microgram": ("mcg", "µg", "μg", "ug", "microgram", "micrograms", "microgramme", "microgrammes"),
    "mg": ("mg", "mgs", "milligram", "milligrams", "milligramme", "milligrammes"),
    "g": ("g", "gm", "gms", "gram", "grams", "gramme", "grammes"),
    "ml": ("ml", "mls", "millilitre", "millilitres", "milliliter", "milliliters", "cc"),
    "l": ("l", "litre", "litres", "liter", "liters"),
    "application": ("application", "applications", "apply", "fingertip unit", "fingertip units"),
    "puff": ("puff", "puffs", "inhalation", "inhalations", "actuation", "actuations"),
    "spray": ("spray", "sprays"),
    "sachet": ("sachet", "sachets"),
    "tablet": ("tablet", "tablets", "tab", "tabs"),
    "capsule": ("capsule", "capsules", "cap", "caps"),
    "drop": ("drop", "drops"),
    "pessary": ("pessary", "pessaries"),
    "mg/kg": ("mg/kg", "mg per kg", "mg/kg/dose"),
}
_UNITS = {alias: unit for unit, aliases in _UNIT_ALIASES.items() for alias in aliases}
_ROUTE_ALIASES = {
    "oral": ("oral", "orally", "po", "by mouth", "mouth", "p.o."),
    "topical": ("topical", "topically", "skin", "cutaneous", "on the skin", "applied to the skin"),
    "inhaled": ("inhaled", "inhalation", "inhaler", "inh", "by inhalation"),
    "nasal": ("nasal", "intranasal", "nasally", "into the nose", "in the nose"),
    "vaginal": ("vaginal", "vaginally", "pv", "intravaginal"),
    "intramuscular": ("intramuscular", "im", "i.m.", "intramuscularly", "injection"),
    "sublingual": ("sublingual", "sl", "under the tongue", "sublingually"),
    "rectal": ("rectal", "pr", "rectally"),
}
_ROUTES = {alias: route for route, aliases in _ROUTE_ALIASES.items() for alias in aliases}
# Frequencies. The text is read lower-cased with number words as digits ("twice" -> "2 times"); every
# reading found counts and the most frequent wins (the worst case); a stated maximum caps it.
_NUMBER_WORDS = {
    "half": "0.5", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "twelve": "12", "once": "1 times", "twice": "2 times",
    "thrice": "3 times",
}  # fmt: skip
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b")
# Prescription shorthand (Latin: omni die, bis / ter / quater in die, quaque hora, ...) -> doses a day.
_SHORTHAND = {
    "od": 1, "qd": 1, "daily": 1, "nocte": 1, "mane": 1, "qam": 1, "qpm": 1, "qhs": 1, "stat": 1, "bd": 2,
    "bid": 2, "tds": 3, "tid": 3, "qds": 4, "qid": 4, "fortnightly": 1 / 14,
}  # fmt: skip
_SHORTHAND_WORD = re.compile(r"\b(" + "|".join(_SHORTHAND) + r")\b")
_N = r"(\d+(?:\.\d+)?)"
_RANGE = _N + r"(?:\s*(?:-|to|or)\s*" + _N + ")?"  # "6-8", "6 to 8", "1 or 2"
_HOURS = r"(?:h|hr|hrs|hour|hours)"
_PER = r"(?:a|an|per|/|each|every|in)"


def _count_per(period: str, adverb: str) -> str:
    """ "3 times a day", "3 x daily", "3 doses per day", "3/day", "3 daily"; a bare "5 day" is none."""
    return (
        _RANGE + r"\s*(?:(?:x|times|doses?)\s*(?:" + _PER + r"\s*)?(?:" + period + "|" + adverb + ")|" + _PER
        + r"\s*(?:" + period + ")|" + adverb + r")\b"
    )  # fmt: skip


_DAY, _WEEK = r"day|24\s*" + _HOURS, r"week|wk"
# pattern -> doses a day from its match; a range of counts takes the larger, a range of intervals the shorter.
_RATES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], float]], ...] = tuple(
    (re.compile(r"\b" + pattern), rate)
    for pattern, rate in (
        (r"(?:every|q)\s*(?:" + _RANGE + r")?\s*" + _HOURS + r"\b", lambda m: 24 / _low(m, default=1)),
        (r"(?:" + _RANGE + r"\s*-?\s*)?hourly\b", lambda m: 24 / _low(m, default=1)),
        (r"every\s*" + _RANGE + r"\s*days?\b", lambda m: 1 / _low(m)),
        (r"(?:every|q)\s*" + _RANGE + r"\s*(?:weeks?|wks?)\b", lambda m: 1 / 7 / _low(m)),
        (_count_per(_DAY, "daily"), lambda m: _high(m)),
        (_count_per(_WEEK, "weekly"), lambda m: _high(m) / 7),
        (r"(?:every|each)\s*day\b|(?:single|1-off|1 off)\s*dose\b", lambda m: 1),
        (r"(?:every|each)\s*(?:week|wk)\b|(?<!\d )weekly\b", lambda m: 1 / 7),
        (r"(?:every other day|(?:on )?alternate days)\b", lambda m: 0.5),
    )
)
# "3 times", "x3": a count with no period is a day's (read only when nothing else gave a frequency).
_BARE_COUNT = re.compile(r"\b" + _RANGE + r"\s*(?:x|times)\b|\bx\s*" + _N + r"\b")
# Times of day a dose is taken at, each counted once: "morning and night" = 2 a day.
_TIMES_OF_DAY = tuple(
    re.compile(pattern)
    for pattern in (
        r"\b(?:morning|mane|breakfast)\b", r"\b(?:midday|noon|lunch|lunchtime)\b",
        r"\b(?:evening|teatime|dinner|supper)\b", r"\b(?:night|nocte|bedtime)\b",
    )
)  # fmt: skip
_AS_NEEDED = re.compile(r"\b(?:prn|sos|(?:as|when|if) (?:needed|required|necessary))\b")
# "max 4 a day", "up to 4 times daily", "no more than 4 doses in 24 hours": the most doses a day.
_STATED_MAXIMUM = re.compile(
    r"\b(?:max(?:imum)?|up to|no more than|not more than|not to exceed|at most)\s*(?:of\s*)?"
    + _count_per(_DAY, "daily")
)  # fmt: skip
# Doses and strengths. "500 mg", "120 mg/5 ml", "250mg per 5ml": a strength, per ml when a volume follows.
_STRENGTH = re.compile(
    _N + r"\s*(micrograms?|mcg|µg|μg|ug|milligrams?|mg|grams?|gm|g)"
    + r"(?:\s*(?:/|per|in)\s*" + _N + r"?\s*(?:ml|millilitres?|milliliters?))?(?![a-z/])"
)  # fmt: skip
_DOSE = re.compile(_RANGE + r"\s*(.*)")
_BOTH_NOSTRILS = re.compile(r"\b(?:in|into|to)?\s*(?:each|both|per)\s*nostrils?\b")
_FILLER = re.compile(r"[()]|\b(?:a|an|of|each|x|×)\b", re.IGNORECASE)
# Forms a strength is given per one of; a volume's strength is per ml.
COUNT_FORMS = frozenset({"tablet", "capsule", "puff", "spray", "sachet", "pessary"})
_SOLID_FORMS = {"tablet": ("capsule",), "capsule": ("tablet",)}


@functools.lru_cache(maxsize=1024)
def canonical_unit(unit: str) -> str:
    """`"mcg"` -> `"microgram"`, `"Grams"` -> `"g"`; a unit we do not know comes back lower-cased."""
    text = " ".join(unit.strip().lower().split())
    return _UNITS.get(text, _UNITS.get(text.rstrip("."), text))


@functools.lru_cache(maxsize=1024)
def canonical_route(route: str) -> str:
    """`"PO"` -> `"oral"`, `"intranasal"` -> `"nasal"`; a route we do not know comes back lower-cased."""
    text = " ".join(route.strip().lower().split())
    return _ROUTES.get(text, text)


def normalise_dose(dose: float, unit: str, to_unit: str) -> float | None:
    """`dose` in `unit` expressed in `to_unit`; None when the two do not convert (puffs vs mg)."""
    source, target = canonical_unit(unit), canonical_unit(to_unit)
    if source == target:
        return dose
    source_size, target_size = _UNIT_SIZES.get(source), _UNIT_SIZES.get(target)
    if source_size is None or target_size is None or source_size[0] != target_size[0]:
        return None
    return dose * source_size[1] / target_size[1]


class DoseAmount(NamedTuple):
    """One dose in a target unit, `low` to `high` (equal unless it rests on one of several standard
    strengths), and how it was worked out ("2 tablets x 500 mg")."""

    low: float
    high: float
    arithmetic: str


def dose_amount(
    item: PlanItem, to_unit: str, standard: Sequence[Strength] = (), weight_kg: float | None = None
) -> DoseAmount | None:
    """One dose of the item in `to_unit`. A count of tablets (puffs, ml) converts through the plan's
    strength, else the KB's `standard` strengths of that form; mg/kg and mass convert through the weight.
    None when the item has no dose or unit, or they do not convert."""
    if item.dose is None or item.unit is None:
        return None
    unit, written = canonical_unit(item.unit), f"{number_text(item.dose)} {item.unit}"
    per_form = _form_strength(item, unit, to_unit, standard)
    if per_form is not None:
        count = item.dose if unit in COUNT_FORMS else normalise_dose(item.dose, unit, "ml") or 0.0
        (low, high), strength = per_form
        return DoseAmount(count * low, count * high, f"{written} x {strength}")
    target = canonical_unit(to_unit)
    if weight_kg is not None and unit == "mg/kg" and target != unit:
        amount = normalise_dose(item.dose * weight_kg, "mg", target)
        arithmetic = f"{written} x {number_text(weight_kg)} kg"
    elif weight_kg is not None and target == "mg/kg" and unit != target:
        in_mg = normalise_dose(item.dose, unit, "mg")
        amount = None if in_mg is None else in_mg / weight_kg
        arithmetic = f"{written} / {number_text(weight_kg)} kg"
    else:
        amount, arithmetic = normalise_dose(item.dose, unit, target), written
    return None if amount is None else DoseAmount(amount, amount, arithmetic)


def daily_amount(
    item: PlanItem, to_unit: str, standard: Sequence[Strength] = (), weight_kg: float | None = None
) -> float | None:
    """Dose x doses a day in `to_unit` (as `dose_amount`; the larger when the strength is one of several);
    None when dose, unit or frequency is missing or does not convert."""
    amount = dose_amount(item, to_unit, standard, weight_kg)
    if amount is None or item.frequency_per_day is None:
        return None
    return amount.high * item.frequency_per_day


def _form_strength(
    item: PlanItem, unit: str, to_unit: str, standard: Sequence[Strength]
) -> tuple[tuple[float, float], str] | None:
    """The drug in one unit of the item's form (one tablet, one ml) in `to_unit`, lowest and highest, and
    the strength as written; None when the unit is no form or no strength of it converts."""
    volume = _UNIT_SIZES.get(unit, ("",))[0] == "volume"
    if unit not in COUNT_FORMS and not volume:
        return None
    if item.strength is not None and item.strength_unit is not None:
        mass, per_ml, _ = item.strength_unit.partition("/ml")
        amount = normalise_dose(item.strength, mass, to_unit) if bool(per_ml) == volume else None
        if amount is not None:
            return (amount, amount), f"{number_text(item.strength)} {item.strength_unit}"
    # A tablet and a capsule of a drug come in the same strengths: either stands for the other when the KB
    # lists only one.
    forms = ["ml"] if volume else [unit, *_SOLID_FORMS.get(unit, ())]
    for strength in sorted((s for s in standard if s.form in forms), key=lambda s: forms.index(s.form)):
        converted = (normalise_dose(amount, strength.unit, to_unit) for amount in strength.amounts)
        amounts = [amount for amount in converted if amount is not None]
        if len(amounts) == len(strength.amounts):
            written = "/".join(number_text(amount) for amount in strength.amounts)
            return (min(amounts), max(amounts)), f"{written} {strength.unit}{'/ml' if volume else ''}"
    return None


def number_text(value: float) -> str:
    """4000.0 -> "4000", 0.2 -> "0.2"."""
    return f"{value:.4f}".rstrip("0").rstrip(".")


def is_plan_attempt(text: str) -> bool:
    """The reply tries to give a plan: it has a `"drug"` key or something that opens a JSON list."""
    return '"drug"' in text or re.search(r"\[\s*[\]{]", text) is not None


def parse_plan(text: str, kb: KnowledgeBase, threshold: float = DEFAULT_THRESHOLD) -> TreatmentPlan | None:
    """The reply's plan, or None when no plan can be read. `[]` alone is an empty plan; a non-empty plan
    found anywhere wins over it. Advice is the object's `advice` field, else the prose around the JSON."""
    found_empty: TreatmentPlan | None = None
    for value, (cut_start, cut_end) in _json_values(text):
        raw, advice = value, None
        if isinstance(value, dict):
            raw, advice = value.get("plan"), value.get("advice")
        if not isinstance(raw, list):
            continue
        items = _plan_items(raw, kb, threshold)
        if items is None:
            continue
        if not isinstance(advice, str):
            advice = text[:cut_start].strip() + "\n" + text[cut_end:].strip()
        plan = TreatmentPlan(items=items, advice=advice.strip())
        if items:
            return plan
        found_empty = found_empty or plan
    return found_empty


def _json_values(text: str) -> Iterator[tuple[Any, tuple[int, int]]]:
    """Every JSON list or object decodable from a `[` or `{`, fenced blocks first, with the span of text it
    takes (its whole code fence when fenced)."""
    decoder = json.JSONDecoder()
    blocks = [(match.group(1), match.span()) for match in _FENCE.finditer(text)]
    for block, fence in [*blocks, (text, None)]:
        for start in _JSON_START.finditer(block):
            try:
                value, end = decoder.raw_decode(block, start.start())
            except json.JSONDecodeError:
                continue
            yield value, fence or (start.start(), end)


def _plan_items(raw: list[Any], kb: KnowledgeBase, threshold: float) -> tuple[PlanItem, ...] | None:
    """The list's plan items; None when an entry is not an object with a non-empty `"drug"` string."""
    items = []
    for entry in raw:
        drug = entry.get("drug") if isinstance(entry, dict) else None
        if not isinstance(drug, str) or not drug.strip():
            return None
        written = {"dose": entry.get("dose"), "frequency_per_day": entry.get("frequency_per_day")}
        if written["frequency_per_day"] is None:
            written["frequency_per_day"] = entry.get("frequency")
        dose, unit_in_dose, strength_in_dose = read_dose(written["dose"])
        unit, strength_in_unit = _read_unit(entry.get("unit"))
        per_day, as_needed = read_frequency(written["frequency_per_day"])
        stated_strength = _stated_strength(entry.get("strength"), entry.get("strength_unit"))
        strength = stated_strength or strength_in_dose or strength_in_unit or find_strength(drug)
        read = {"dose": dose, "frequency_per_day": per_day}
        if entry.get("strength") is not None:
            written["strength"], read["strength"] = entry["strength"], stated_strength
        route = entry.get("route")
        items.append(
            PlanItem(
                drug=drug.strip(),
                generic=normalise_drug_name(kb, drug, threshold),
                ingredients=resolve_drug(kb, drug, threshold).drugs,
                dose=dose,
                unit=unit or unit_in_dose or None,
                frequency_per_day=per_day,
                days=_number_and_rest(entry.get("days"))[0],
                route=route.strip() if isinstance(route, str) and route.strip() else None,
                strength=strength[0] if strength else None,
                strength_unit=strength[1] if strength else None,
                as_needed=as_needed,
                unreadable=tuple(
                    (field, value if isinstance(value, str) else json.dumps(value))
                    for field, value in written.items()
                    if read[field] is None and _given(value)
                ),
            )
        )
    return tuple(items)


def _number_and_rest(value: Any) -> tuple[float | None, str]:
    """`500` -> (500.0, ""), `"500 mg"` -> (500.0, "mg"); anything without a leading number -> (None, "")."""
    if isinstance(value, bool):
        return None, ""
    if isinstance(value, int | float):
        return float(value), ""
    if isinstance(value, str):
        match = _NUMBER.match(value.replace(",", ""))
        if match:
            return float(match.group(1)), match.group(2)
    return None, ""


def read_frequency(value: Any) -> tuple[float | None, bool]:
    """(doses a day, taken as needed) from a number or words: "3", "tds", "three times a day", "q4h",
    "every 6-8 hours" (the most frequent: 4), "as needed, max 4 a day" (the stated maximum), "once a week"
    (1/7). None: no frequency can be read (an "as needed" with no maximum is none)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None, False
    if not isinstance(value, str):
        return float(value), False
    text = _plain(value)
    if re.fullmatch(_N, text):
        return float(text), False
    rates = [_SHORTHAND[match.group(1)] for match in _SHORTHAND_WORD.finditer(text)]
    for pattern, rate_of in _RATES:
        for match in pattern.finditer(text):
            try:
                rates.append(rate_of(match))
            except ZeroDivisionError:
                continue
    if not rates:
        rates = [_high(match) for match in _BARE_COUNT.finditer(text)]
    if not rates:
        rates = [sum(bool(pattern.search(text)) for pattern in _TIMES_OF_DAY)]
    rate = max(rates)
    stated = [_high(match) for match in _STATED_MAXIMUM.finditer(text)]
    if stated:
        rate = min(rate, *stated) if rate else min(stated)
    return (float(rate) if rate else None), _AS_NEEDED.search(text) is not None


def read_dose(value: Any) -> tuple[float | None, str, tuple[float, str] | None]:
    """(dose, unit as written, strength) from `500`, "500mg", "1 g", "1-2 tablets" (the worst case: 2),
    "2 x 500 mg tablets" (a strength), "2 x 500 mg" (1000 mg), "2 sprays in each nostril" (4)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None, "", None
    if not isinstance(value, str):
        return float(value), "", None
    match = _DOSE.fullmatch(_plain(value))
    if match is None:
        return None, "", None
    dose, rest = max(float(number) for number in match.groups()[:2] if number is not None), match.group(3)
    if _BOTH_NOSTRILS.search(rest):
        dose, rest = dose * 2, _BOTH_NOSTRILS.sub(" ", rest)
    unit, strength = _read_unit(rest)
    if strength is not None and not unit and not strength[1].endswith("/ml"):
        return dose * strength[0], strength[1], None  # "2 x 500 mg": two lots of 500 mg
    return dose, unit, strength


def find_strength(text: str) -> tuple[float, str] | None:
    """The first strength in a text, per ml for a liquid: "paracetamol 500 mg tablets" -> (500.0, "mg"),
    "Calpol 120 mg/5 ml" -> (24.0, "mg/ml")."""
    match = _STRENGTH.search(_plain(text))
    if match is None:
        return None
    amount, unit, volume = match.groups()
    if match.group(0).rstrip().endswith(("ml", "millilitre", "millilitres", "milliliter", "milliliters")):
        return float(amount) / float(volume or 1), canonical_unit(unit) + "/ml"
    return float(amount), canonical_unit(unit)


def _read_unit(value: Any) -> tuple[str, tuple[float, str] | None]:
    """A unit as written and any strength in it: "tablets (500 mg)" -> ("tablets", (500.0, "mg"))."""
    if not isinstance(value, str):
        return "", None
    strength = find_strength(value)
    rest = _STRENGTH.sub(" ", _plain(value), count=1) if strength else value
    return " ".join(_FILLER.sub(" ", rest).split()), strength


def _given(value: Any) -> bool:
    return value is not None and (not isinstance(value, str) or bool(value.strip()))


def _stated_strength(value: Any, unit: Any) -> tuple[float, str] | None:
    """The plan's `strength` key: "500 mg", "120 mg/5 ml", or a number with a `strength_unit`."""
    if isinstance(value, int | float) and not isinstance(value, bool) and isinstance(unit, str):
        return find_strength(f"{value} {unit}")
    return find_strength(value) if isinstance(value, str) else None


def _plain(text: str) -> str:
    """Lower case, number words as digits, thousands commas and abbreviation dots gone ("b.i.d." -> "bid"),
    dashes as "-"."""
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text.lower())
    text = re.sub(r"\.(?!\d)|(?<!\d)\.", "", re.sub(r"[\u2010-\u2015]", "-", text))
    text = _NUMBER_WORD.sub(lambda match: _NUMBER_WORDS[match.group(1)], text.replace(",", " "))
    return " ".join(text.split())


def _numbers(match: re.Match[str]) -> list[float]:
    return [float(group) for group in match.groups() if group is not None]


def _low(match: re.Match[str], default: float | None = None) -> float:
    """The smaller number of a matched range (the shorter interval), else `default`."""
    return min(_numbers(match), default=default)  # type: ignore[type-var]


def _high(match: re.Match[str]) -> float:
    """The larger number of a matched range (the larger count)."""
    return max(_numbers(match))
