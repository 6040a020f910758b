"""Treatment plans checked by the safety critic for people (`consult check-plan`): one plan for one patient,
or a batch of them from JSON Lines with the KB and name library loaded once.

The profile is a case file's `profile` (case.py `PatientProfile`), checked against the KB as a case's is;
the plan is what an agent writes (a JSON list of items with a `"drug"` key, or `{"plan": [...], "advice":
...}`), read by the agents' own parser. The result lists each item's KB ingredients with their daily
amounts, and every violation with its severity, rule and source. A file that is not UTF-8 text, or holds
no plan the parser can read, is an input error naming the file and why.
"""

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ValidationError

from tasks.benchmarks.consult.case import PatientProfile
from tasks.benchmarks.consult.cases.case_set import profile_problems
from tasks.benchmarks.consult.critic import critique, profile_facts
from tasks.benchmarks.consult.dose_check import ingredient_doses
from tasks.benchmarks.consult.episode import TreatmentPlan
from tasks.benchmarks.consult.kb.loading import KnowledgeBase
from tasks.benchmarks.consult.treatment import read_plan_reply
from tasks.benchmarks.consult.violations import Violation
from tasks.core.files import safe_load_yaml
from tasks.core.preflight import validation_message


class CheckedIngredient(BaseModel, frozen=True):
    generic: str  # the KB drug
    daily: float | None  # the plan's amount a day in `unit`; None: the critic could not work it out
    unit: str


class CheckedItem(BaseModel, frozen=True):
    drug: str  # as written
    ingredients: tuple[CheckedIngredient, ...]  # empty: the name resolved to no KB drug
    checked: bool  # False: the critic could not check it (unverified)


class PlanCheck(BaseModel, frozen=True):
    verdict: Literal["pass", "unsafe", "unverified"]
    items: tuple[CheckedItem, ...]
    violations: tuple[Violation, ...]


# Exit codes by how bad an outcome is: a pass, a plan not known to be safe, an input the check cannot read.
EXIT_CODES = {"pass": 0, "unsafe": 1, "unverified": 1, "error": 2}


def read_profile(path: Path, kb: KnowledgeBase) -> PatientProfile:
    """A patient profile from a YAML or JSON file; ValueError naming the file and every field at fault."""
    try:
        return profile_from(safe_load_yaml(_text(path)), kb)
    except yaml.YAMLError as error:
        raise ValueError(f"{path.name}: not valid YAML or JSON: {error}") from None
    except ValueError as error:
        raise ValueError(f"{path.name}: {error}") from None


def profile_from(value: Any, kb: KnowledgeBase) -> PatientProfile:
    """A profile from decoded YAML or JSON; ValueError naming every field at fault."""
    try:
        profile = PatientProfile.model_validate(value)
    except ValidationError as error:
        raise ValueError(validation_message(error)) from None
    problems = profile_problems(profile, kb)
    if problems:
        raise ValueError("; ".join(problems))
    return profile


def read_plan(path: Path, kb: KnowledgeBase) -> TreatmentPlan:
    """A plan as an agent writes it, from a file; ValueError naming the file when it holds none."""
    try:
        return plan_from(_text(path), kb)
    except ValueError as error:
        raise ValueError(f"{path.name}: {error}") from None


def plan_from(text: str, kb: KnowledgeBase) -> TreatmentPlan:
    """The plan of an agent's reply; ValueError saying why none can be read, or that it gives no drug."""
    reading = read_plan_reply(text, kb)
    if reading.plan is None:
        raise ValueError(f"no plan found: {reading.problem}")
    if not reading.plan.items:
        raise ValueError("the plan gives no drug: there is nothing to check")
    return reading.plan


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"not UTF-8 text (byte {error.start:,}: {error.reason})") from None


def check_plan(
    profile: PatientProfile, plan: TreatmentPlan, kb: KnowledgeBase, conditions: Iterable[str] = ()
) -> PlanCheck:
    """The critic's verdict on `plan` for this patient, with what each item resolved to."""
    unknown = [name for name in conditions if kb.condition(name) is None]
    if unknown:
        raise ValueError(f"unknown KB condition(s): {', '.join(unknown)}")
    found = critique(plan, profile_facts(profile, conditions), kb)
    unchecked = {v.drug for v in found.violations if v.severity == "unverified"}
    items = []
    for item in plan.items:
        ingredients = tuple(
            CheckedIngredient(generic=name, daily=daily, unit=unit)
            for name, daily, unit in ingredient_doses(item, profile, kb)
        )
        checked = bool(ingredients) and not ({item.drug, *(i.generic for i in ingredients)} & unchecked)
        items.append(CheckedItem(drug=item.drug, ingredients=ingredients, checked=checked))
    return PlanCheck(verdict=found.verdict, items=tuple(items), violations=found.violations)


def check_batch(lines: Iterable[str], kb: KnowledgeBase) -> Iterator[dict[str, Any]]:
    """One result per non-blank line of JSON Lines, each `{"id", "profile", "plan"}` (the plan a list of
    items, an object with a "plan", or an agent's reply as a string; `conditions` optional): `{"id",
    "verdict", "items", "violations"}`, or `{"line", "id", "verdict": "error", "error"}` for a line that
    cannot be checked."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        case_id = None
        try:
            try:
                case = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"not JSON: {error}") from None
            if not isinstance(case, dict):
                raise ValueError('the line is not a JSON object {"id": ..., "profile": {...}, "plan": [...]}')
            case_id = case.get("id")
            missing = [key for key in ("profile", "plan") if key not in case]
            if missing:
                raise ValueError(f"no {' and no '.join(missing)}")
            plan = case["plan"]
            profile = profile_from(case["profile"], kb)
            result = check_plan(
                profile, plan_from(plan if isinstance(plan, str) else json.dumps(plan), kb), kb,
                _conditions(case.get("conditions", [])),
            )  # fmt: skip
        except (ValueError, RecursionError) as error:
            message = "nesting too deep to read" if isinstance(error, RecursionError) else str(error)
            yield {"line": number, "id": case_id, "verdict": "error", "error": message}
            continue
        yield {"id": case_id, **result.model_dump(mode="json")}


def _conditions(value: Any) -> list[str]:
    if not (isinstance(value, list) and all(isinstance(name, str) for name in value)):
        raise ValueError("conditions: a list of KB condition ids")
    return value
