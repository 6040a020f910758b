"""One treatment plan checked by the safety critic for one patient, for people (`consult check-plan`).

The profile is a case file's `profile` (case.py `PatientProfile`), checked against the KB as a case's is;
the plan is what an agent writes (a JSON list of items with a `"drug"` key, or `{"plan": [...], "advice":
...}`), read by the agents' own parser. The result lists each item's KB ingredients with their daily
amounts, and every violation with its severity, rule and source.
"""

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ValidationError

from tasks.benchmarks.consult.case import PatientProfile
from tasks.benchmarks.consult.cases.case_set import profile_problems
from tasks.benchmarks.consult.critic import Violation, critique, ingredient_doses, profile_facts
from tasks.benchmarks.consult.episode import TreatmentPlan
from tasks.benchmarks.consult.kb.loading import KnowledgeBase
from tasks.benchmarks.consult.treatment import parse_plan
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


def read_profile(path: Path, kb: KnowledgeBase) -> PatientProfile:
    """A patient profile from a YAML or JSON file; ValueError naming the file and every field at fault."""
    try:
        profile = PatientProfile.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except yaml.YAMLError as error:
        raise ValueError(f"{path.name}: not valid YAML or JSON: {error}") from None
    except ValidationError as error:
        raise ValueError(f"{path.name}: {validation_message(error)}") from None
    problems = profile_problems(profile, kb)
    if problems:
        raise ValueError(f"{path.name}: {'; '.join(problems)}")
    return profile


def read_plan(path: Path, kb: KnowledgeBase) -> TreatmentPlan:
    """A plan as an agent writes it, from a file; ValueError when it holds none."""
    plan = parse_plan(path.read_text(encoding="utf-8"), kb)
    if plan is None or not plan.items:
        raise ValueError(
            f'{path.name}: no plan found: expected a JSON list of items each with a "drug" (and dose, unit, '
            'frequency_per_day, days, route), or {"plan": [...], "advice": "..."}'
        )
    return plan


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
