"""Doses: the units a plan writes them in, a dose read from its text, and one dose in the KB's unit.

Units: masses (mg, g, microgram under any spelling) convert to each other, volumes (ml, l) likewise;
counts (application, puff, spray, sachet, tablet, ...) compare only to the same unit, or to a mass through
a strength; per-weight doses (mg/kg) convert to a mass through the patient's weight. Anything else has no
conversion: the critic reports the dose as unreadable.

A dose is read from a number or from its text, every word of it: "500", "500mg", "1 g", "1,000 mg", "1-2
tablets" and "500 mg-1 g" (ranges at their worst, the larger), "half a tablet", "2 x 500 mg tablets" (a
strength) and "2 x 500 mg" (1000 mg), "2 tablets (500 mg each)", "5 ml of 120 mg/5 ml", "15 mg/kg", "2
sprays in each nostril" (4), and a count of doses a day written with it ("1000 mg x2", "1000 mg twice").
A number is read only when it is finite and above 0 ("1000e1" is 10000); a text of more than 500
characters is not read. A point before exactly three digits after a number from 1 to 999 ("1.500 mg") is
not read either: it is a decimal point (1.5 mg) or, as many European prescribers write, a thousands point
(1500 mg), a thousand times apart ("0.500" and "0,500" are 0.5: no thousands group follows a lone 0).
Digits of any script are read as ASCII ones (`frequency.plain`), so full-width "１.０００ mg" is not read
either. Anything else in the text makes the dose unread, with the reason (`Dose.problem`).
"""

import functools
import math
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from tasks.benchmarks.consult.episode import PlanItem
from tasks.benchmarks.consult.frequency import MAX_CHARS, plain, read_frequency
from tasks.benchmarks.consult.kb.models import Strength

_N = r"(\d+(?:\.\d+)?(?:e[+-]?\d+)?|\.\d+)"
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
ROUTES = frozenset(_ROUTE_ALIASES)  # the routes a route written is read as (`canonical_route`)
# Doses and strengths. "500 mg", "120 mg/5 ml", "250mg per 5ml": a strength, per ml when a volume follows.
_STRENGTH = re.compile(
    _N + r"\s*(micrograms?|mcg|µg|μg|ug|milligrams?|mg|grams?|gm|g)"
    + r"(?:\s*(?:/|per|in)\s*" + _N + r"?\s*(?:ml|millilitres?|milliliters?))?(?![a-z/])"
)  # fmt: skip
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
        # The plan's own strength or none: one that does not fit the form ("120 mg/5 ml" for tablets) is
        # no reason to take the KB's standard one instead.
        mass, per_ml, _ = item.strength_unit.partition("/ml")
        amount = normalise_dose(item.strength, mass, to_unit) if bool(per_ml) == volume else None
        if amount is None:
            return None
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


class Dose(NamedTuple):
    """A dose as read: its amount (None: not read or not written), its unit as written ("" when none), a
    strength the text gives per unit of a form ("2 x 500 mg tablets"), a count of doses a day written with
    it ("1000 mg x2"), and why it was not read (None when read, or when nothing was written)."""

    dose: float | None
    unit: str = ""
    strength: tuple[float, str] | None = None
    per_day: float | None = None
    problem: str | None = None


# "1.500": a decimal point or a thousands point (no leading zero: "0.125" is a decimal).
_THOUSANDS_OR_DECIMAL_POINT = re.compile(r"(?<![\d.])[1-9]\d{0,2}\.\d{3}(?![\d])")


def _ambiguous_point(value: str, text: str) -> str | None:
    """Why a text is not read when a number in it has a point that may be a thousands point; else None."""
    if (found := _THOUSANDS_OR_DECIMAL_POINT.search(text)) is None:
        return None
    number = found.group()
    return (
        f"'{value}': '{number}' has a point that is a decimal point ({number_text(float(number))}) or a "
        f"thousands point ({number_text(float(number.replace('.', '')))})"
    )


_UNIT_WORD = "|".join(sorted((re.escape(alias) for alias in _UNITS), key=len, reverse=True))
_AMOUNT = re.compile(
    rf"(?:{_N}\s*x\s*)?{_N}\s*(?:({_UNIT_WORD})(?![a-z]))?"
    rf"(?:\s*(?:-|to|or)\s*{_N}\s*(?:({_UNIT_WORD})(?![a-z]))?)?"
)
_BOTH_NOSTRILS = re.compile(r"(?:(?:in|into|to)\s*)?(?:each|both|per)\s*nostrils?(?![a-z])")
_UNIT_FILLER = re.compile(r"[()]|\b(?:a|an|of|each|x)\b", re.IGNORECASE)
_UNIT_PATTERN = re.compile(rf"({_UNIT_WORD})(?![a-z])")
# "x" before a strength is filler ("2 tablets x 500 mg"); before anything else it starts a count or a course
# ("x2"; "x 5/7": for 5 days), which the frequency reader reads whole: dropped, "x 5/7" was 5 doses a week.
_DOSE_FILLER = re.compile(rf"(?:of|a|an|each|per dose|dose|at a time)(?![a-z])|x(?=\s*{_STRENGTH.pattern})")
_DOSE_SEPARATORS = re.compile(r"[\s,;:()\[\]]+")


def read_dose(value: Any) -> Dose:
    """The dose of a plan item from a number or its text (see the module docstring)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return Dose(None)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return Dose(None, problem=f"{value!r} is not a dose")
    if not isinstance(value, str):
        if math.isfinite(value) and value > 0:
            return Dose(float(value))
        return Dose(None, problem=f"{value} is not a dose")
    if len(value) > MAX_CHARS:
        return Dose(None, problem=f"{len(value):,} characters is no dose (at most {MAX_CHARS})")
    text = plain(value)
    if (ambiguous := _ambiguous_point(value, text)) is not None:
        return Dose(None, problem=ambiguous)
    found = _AMOUNT.match(text)
    if found is None:
        return Dose(None, problem=f"'{value}' gives no amount")
    count, low, low_unit, high, high_unit = found.groups()
    numbers = [float(number) for number in (count, low, high) if number is not None]
    if not all(math.isfinite(number) and number > 0 for number in numbers):
        return Dose(None, problem=f"'{value}': {found.group()} is not a dose")
    unit = high_unit or low_unit or ""
    dose = float(low)
    if high is not None:
        low_amount = normalise_dose(dose, low_unit, unit) if low_unit and high_unit else dose
        if low_amount is None:
            return Dose(None, problem=f"'{value}': {low_unit} and {high_unit} do not convert")
        dose = max(low_amount, float(high))
    # A form after a counted amount ("2 x 500 mg tablets") is what is counted.
    rest = _read_rest(text, found.end(), unit_wanted=not unit or count is not None)
    if rest.problem is not None:
        return Dose(None, problem=f"'{value}': {rest.problem}")
    unit = unit or rest.unit
    strength = rest.strength
    if count is not None:
        if rest.unit:  # "2 x 500 mg tablets": two tablets of 500 mg
            dose, unit, strength = float(count), rest.unit, (dose, canonical_unit(unit))
        else:  # "2 x 500 mg": two lots of 500 mg
            dose *= float(count)
    if count is None and strength is not None and _UNIT_SIZES.get(canonical_unit(unit), ("",))[0] == "mass":
        # "1 g, 2 g": a mass is no form a strength is per, so the second amount is another dose
        return Dose(None, problem=f"'{value}': a second amount after {number_text(dose)} {unit}")
    dose *= rest.times
    if not (math.isfinite(dose) and (strength is None or math.isfinite(strength[0]))):
        return Dose(None, problem=f"'{value}' is not a dose")
    return Dose(dose, unit, strength, rest.per_day)


class _Rest(NamedTuple):
    unit: str = ""
    strength: tuple[float, str] | None = None
    times: float = 1.0  # 2 for "in each nostril"
    per_day: float | None = None
    problem: str | None = None


def _read_rest(text: str, position: int, unit_wanted: bool) -> _Rest:
    """What follows a dose's amount: a unit (when the amount had none), a strength, "in each nostril",
    filler words, and at the end a count of doses a day; anything else is a problem."""
    rest = _Rest()
    while (position := _skip(text, position)) < len(text):
        if word := _UNIT_PATTERN.match(text, position):
            if unit_wanted and not rest.unit:
                rest = rest._replace(unit=word.group(1))
            elif canonical_unit(word.group(1)) not in ("tablet", "capsule"):  # "500 mg tablets": the form
                return rest._replace(problem=f"'{word.group(1)}' is a second unit")
            position = word.end()
        elif rest.strength is None and (strength := _STRENGTH.match(text, position)):
            if (read := _strength_of(strength)) is None:  # "(0 mg each)", "(1e999 mg each)"
                return rest._replace(problem=f"'{strength.group()}' is not a strength")
            rest, position = rest._replace(strength=read), strength.end()
        elif nostrils := _BOTH_NOSTRILS.match(text, position):
            rest, position = rest._replace(times=2.0), nostrils.end()
        elif filler := _DOSE_FILLER.match(text, position):
            position = filler.end()
        else:
            frequency = read_frequency(text[position:])
            # A most amount a day ("1 g bd max 6 g a day") is read in the frequency field, with the dose.
            if frequency.per_day is None or frequency.problem or frequency.as_needed or frequency.max_amount:
                return rest._replace(problem=f"'{text[position:]}' is not read")
            return rest._replace(per_day=frequency.per_day)
    return rest


def _skip(text: str, position: int) -> int:
    separator = _DOSE_SEPARATORS.match(text, position)
    return separator.end() if separator else position


def find_strength(text: str) -> tuple[tuple[float, str] | None, str | None]:
    """The strength a drug's name gives, per ml for a liquid: "paracetamol 500 mg tablets" -> (500.0, "mg"),
    "Calpol 120 mg/5 ml" -> (24.0, "mg/ml"), None when it gives none; and why it is not read (None when it
    is): a point that may be a thousands point ("1.000 mg"), a strength that is none ("0 mg"), or different
    strengths ("500 mg or 1 g"). Each of these left the first strength read, or none and the KB's standard
    one."""
    written = plain(text)
    if (ambiguous := _ambiguous_point(text, written)) is not None:
        return None, ambiguous
    strengths = []
    for match in _STRENGTH.finditer(written):
        if (strength := _strength_of(match)) is None:
            return None, f"'{match.group()}' in '{text}' is not a strength"
        strengths.append(strength)
    if any(not same_strength(strengths[0], other) for other in strengths[1:]):
        shown = " and ".join(dict.fromkeys(f"{number_text(amount)} {unit}" for amount, unit in strengths))
        return None, f"'{text}' gives different strengths: {shown}"
    return (strengths[0] if strengths else None), None


def same_strength(one: tuple[float, str], other: tuple[float, str]) -> bool:
    """Whether two strengths are the same amount per the same thing (500 mg and 0.5 g are)."""
    (amount, unit), (other_amount, other_unit) = one, other
    mass, per_ml, _ = unit.partition("/ml")
    other_mass, other_per_ml, _ = other_unit.partition("/ml")
    converted = normalise_dose(amount, mass, other_mass) if per_ml == other_per_ml else None
    return converted is not None and math.isclose(converted, other_amount, rel_tol=1e-9)


def read_strength(value: Any, unit: Any = None) -> tuple[float, str] | None:
    """A plan's `strength` key, all of it a strength: "500 mg", "120 mg/5 ml", or a number (or its text) with
    a `strength_unit` (None: none given); None otherwise, a strength with a unit of its own beside a
    `strength_unit` included ("1 g" with "mg": which one is meant is not read; the unit was ignored)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    written = str(value)
    if unit is not None:
        if not isinstance(unit, str) or re.fullmatch(_N, plain(written)) is None:
            return None
        written = f"{written} {unit}"
    text = plain(written)
    match = _STRENGTH.fullmatch(text)
    if match is None or _ambiguous_point(written, text) is not None:
        return None
    return _strength_of(match)


def _strength_of(match: re.Match[str]) -> tuple[float, str] | None:
    amount, unit, volume = match.groups()
    numbers = [float(amount), float(volume or 1)]
    if not all(math.isfinite(number) and number > 0 for number in numbers):
        return None
    if not math.isfinite(numbers[0] / numbers[1]) or numbers[0] / numbers[1] <= 0:
        return None
    if match.group(0).rstrip().endswith(("ml", "millilitre", "millilitres", "milliliter", "milliliters")):
        return numbers[0] / numbers[1], canonical_unit(unit) + "/ml"
    return numbers[0], canonical_unit(unit)


def read_unit(value: Any) -> tuple[str, tuple[float, str] | None, str | None]:
    """A plan's `unit` key: the unit as written, any strength in it ("tablets (500 mg)"), and why it is not
    read (None when it is a unit, or nothing was written)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return "", None, None
    if not isinstance(value, str):
        return "", None, f"{value!r} is not a unit"
    text = plain(value)
    if (ambiguous := _ambiguous_point(value, text)) is not None:
        return "", None, ambiguous
    strength = _STRENGTH.search(text)
    rest = _STRENGTH.sub(" ", text, count=1) if strength else text
    unit = " ".join(_UNIT_FILLER.sub(" ", rest).split())
    if unit and canonical_unit(unit) not in _UNIT_ALIASES:
        return unit, None, f"'{value}' is not a unit"
    read = _strength_of(strength) if strength else None
    if strength and read is None:  # "tablets (0 mg)"
        return unit, None, f"'{strength.group()}' in '{value}' is not a strength"
    return unit, read, None
