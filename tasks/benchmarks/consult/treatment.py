"""Read a treatment plan from an agent's reply, and put its doses in the knowledge base's units.

A plan is the first JSON list of objects that each have a `"drug"` key, or an object
`{"plan": [...], "advice": "..."}`, anywhere in the reply (code fences and prose around it allowed).
Fields are read tolerantly: numbers may be strings (`"500"`), a dose may carry its unit (`"500 mg"`), a
frequency may be a word (`"twice daily"`, `"tds"`). Drug names go to KB drugs through
`resolve.resolve_drug`: `generic` is the drug of a single-drug item, `ingredients` every drug of the item.

Units: masses (mg, g, microgram under any spelling) convert to each other, volumes (ml, l) likewise;
counts (application, puff, spray, sachet, tablet, ...) and per-weight doses (mg/kg) compare only to the
same unit. Anything else has no conversion: the critic then gives no dose verdict.
"""

import functools
import json
import re
from collections.abc import Iterator
from typing import Any

from tasks.benchmarks.consult.episode import PlanItem, TreatmentPlan
from tasks.benchmarks.consult.kb.icd11 import DEFAULT_THRESHOLD, normalise_drug_name
from tasks.benchmarks.consult.kb.loading import KnowledgeBase
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
# Prescription shorthand and words for doses a day ("bd", "twice daily", "three times a day").
_FREQUENCY_WORDS = {
    "od": 1, "once": 1, "daily": 1, "nocte": 1, "mane": 1, "bd": 2, "bid": 2, "twice": 2, "tds": 3,
    "tid": 3, "three": 3, "thrice": 3, "qds": 4, "qid": 4, "four": 4, "five": 5,
}  # fmt: skip


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


def daily_amount(item: PlanItem, to_unit: str) -> float | None:
    """Dose x doses a day in `to_unit`; None when dose, unit or frequency is missing or not convertible."""
    if item.dose is None or item.unit is None or item.frequency_per_day is None:
        return None
    dose = normalise_dose(item.dose, item.unit, to_unit)
    return None if dose is None else dose * item.frequency_per_day


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
        dose, unit_in_dose = _number_and_rest(entry.get("dose"))
        unit = entry.get("unit")
        unit = unit.strip() if isinstance(unit, str) and unit.strip() else unit_in_dose or None
        route = entry.get("route")
        items.append(
            PlanItem(
                drug=drug.strip(),
                generic=normalise_drug_name(kb, drug, threshold),
                ingredients=resolve_drug(kb, drug, threshold).drugs,
                dose=dose,
                unit=unit,
                frequency_per_day=_frequency(entry.get("frequency_per_day")),
                days=_number_and_rest(entry.get("days"))[0],
                route=route.strip() if isinstance(route, str) and route.strip() else None,
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


def _frequency(value: Any) -> float | None:
    """Doses a day from a number, a numeric string or words ("twice daily", "tds", "3 times a day")."""
    number, _ = _number_and_rest(value)
    if number is not None or not isinstance(value, str):
        return number
    words = re.findall(r"[a-z]+", value.lower())
    return next((float(_FREQUENCY_WORDS[word]) for word in words if word in _FREQUENCY_WORDS), None)
