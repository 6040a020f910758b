"""Consultation safety critic: checks per second on generated plans, against the target of a whole run's
plans checked in well under a second per thousand episodes.

Every generated case of a fixed case set gets PLANS_PER_CASE seeded plans: the first-line options of its
core diagnoses as written (what a profile-blind agent prescribes), then plans of 1 to 3 KB drugs at doses
from a quarter to four times the usual, in the KB's unit or a convertible one (g, mg, microgram), now and
then by another route or naming a drug the KB does not know. `checks` times `critique` alone over every
plan. `episodes` times what scoring one episode asks of the critic: the first plan, then per scripted
constraint the facts updated, the next plan critiqued as the revision, the constraint and the core
diagnoses' regimens checked. `cold_index_ms` is the first check against a KB the critic has not indexed
yet. `parse_ms_per_plan` (apart, not in the target) is `parse_plan` on each plan rendered as JSON.
Name resolution on: the same plans written as agents write drugs (a brand or a salt of each drug, now and
then a combination product at a named strength) are parsed and critiqued, beside the baseline of the same
plans written with the KB's generic names; `library_load_s` is the name library's one-time load in a new
process (paid once per run, only when a name needs it).
Each phase is timed REPEATS times; the fastest run counts (the machine is shared).
"""

import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tasks.benchmarks.consult.case import ConsultCase
from tasks.benchmarks.consult.cases import CaseGenerationSettings, generate_cases
from tasks.benchmarks.consult.critic import (
    constraint_satisfied,
    critique,
    patient_facts,
    regimen_met,
    with_constraint,
)
from tasks.benchmarks.consult.episode import PlanItem, TreatmentPlan
from tasks.benchmarks.consult.kb.loading import KnowledgeBase, load_kb
from tasks.benchmarks.consult.treatment import parse_plan

CASES, SEED, PLANS_PER_CASE, REPEATS = 1000, 0, 10, 3
NAMED_CASES = 100  # cases whose plans are also written with real-world names
TARGET_MS_PER_1000_EPISODES = 1000.0
_SCALES = (0.25, 0.5, 1.0, 1.0, 1.0, 2.0, 4.0)
_ROUTES = ("oral", "topical", "inhaled", "nasal")
# A unit the KB's doses convert to, with the factor from the KB unit.
_CONVERSIONS = {
    "mg": (("g", 0.001), ("microgram", 1000.0)),
    "microgram": (("mg", 0.001),),
    "g": (("mg", 1000.0),),
}


def first_line_plan(case: ConsultCase, kb: KnowledgeBase) -> TreatmentPlan:
    options = [
        option
        for gold in case.core_gold
        if (condition := kb.condition(gold.condition_id)) is not None
        for option in condition.regimen.first_line[:1]
    ]
    return TreatmentPlan(
        items=tuple(
            PlanItem(drug=option.drug, generic=option.drug, dose=option.dose, unit=option.unit,
                     frequency_per_day=option.frequency_per_day, days=option.days, route=option.route)
            for option in options
        )
    )  # fmt: skip


def random_plan(kb: KnowledgeBase, rng: random.Random) -> TreatmentPlan:
    items = []
    for drug in rng.sample(kb.drugs, rng.randint(1, 3)):
        if rng.random() < 0.05:
            items.append(PlanItem(drug=f"unlisted {drug.name}", dose=1.0, unit="mg", frequency_per_day=1.0))
            continue
        dose, unit = drug.usual_dose.dose * rng.choice(_SCALES), drug.usual_dose.unit
        if unit in _CONVERSIONS and rng.random() < 0.3:
            unit, factor = rng.choice(_CONVERSIONS[unit])
            dose *= factor
        name = rng.choice((drug.name, *drug.brands))
        items.append(
            PlanItem(drug=name, generic=drug.name, dose=dose, unit=unit,
                     frequency_per_day=drug.usual_dose.frequency_per_day * rng.choice((1, 1, 2)), days=5.0,
                     route=rng.choice(_ROUTES) if rng.random() < 0.1 else drug.route)
        )  # fmt: skip
    return TreatmentPlan(items=tuple(items), advice="Rest.")


def generated_plans(cases: list[ConsultCase], kb: KnowledgeBase) -> list[list[TreatmentPlan]]:
    rng = random.Random(SEED)
    return [
        [first_line_plan(case, kb), *(random_plan(kb, rng) for _ in range(PLANS_PER_CASE - 1))]
        for case in cases
    ]


def check_plans(cases, plans, kb) -> int:
    checks = 0
    for case, case_plans in zip(cases, plans, strict=True):
        facts = patient_facts(case)
        for plan in case_plans:
            critique(plan, facts, kb)
            checks += 1
    return checks


def check_episodes(cases, plans, kb) -> int:
    """What scoring each case's episode asks of the critic; returns the number of critiques."""
    checks = 0
    for case, case_plans in zip(cases, plans, strict=True):
        facts = patient_facts(case)
        critique(case_plans[0], facts, kb)
        checks += 1
        constraints = [f.constraint for f in case.follow_ups if f.constraint is not None]
        for position, constraint in enumerate(constraints, start=1):
            facts = with_constraint(facts, constraint, kb)
            revised = case_plans[position % len(case_plans)]
            critique(revised, facts, kb)
            constraint_satisfied(revised, constraint, facts, kb)
            for gold in case.core_gold:
                condition = kb.condition(gold.condition_id)
                if condition is not None:
                    regimen_met(revised, condition, kb)
            checks += 1
    return checks


def fastest(run, *args) -> tuple[int, float]:
    """(the run's count, its fastest wall time in seconds over REPEATS runs)."""
    timings = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        count = run(*args)
        timings.append(time.perf_counter() - started)
    return count, min(timings)


def render_row(item: PlanItem) -> dict[str, Any]:
    return item.model_dump(exclude={"generic", "ingredients"}, exclude_none=True)


def render(plan: TreatmentPlan) -> str:
    rows = [render_row(item) for item in plan.items]
    return f"Here is my plan:\n```json\n{json.dumps(rows)}\n```\nRest and drink fluids."


_SALTS = ("sodium", "hydrochloride", "sulfate", "trihydrate")
_LIBRARY_LOAD = (
    "import time; from tasks.benchmarks.consult.kb.resolve import library_matches; t = time.perf_counter(); "
    "library_matches('albuterol'); print(time.perf_counter() - t)"
)


def as_written(plan: TreatmentPlan, kb: KnowledgeBase, rng: random.Random) -> str:
    """The plan as JSON with each drug as agents write it: a brand, else the generic with a salt; one plan
    in ten gains a combination product at a named strength."""
    rows = []
    for item in plan.items:
        drug = kb.drug(item.generic or "")
        name = item.drug
        if drug is not None:
            name = rng.choice(drug.brands) if drug.brands else f"{drug.name} {rng.choice(_SALTS)}"
        rows.append({**render_row(item), "drug": name})
    if kb.products and rng.random() < 0.1:
        product = rng.choice(kb.products)
        label = f" {product.label(product.variants[0])}" if product.variants else ""
        rows.append({"drug": product.name + label, "dose": 1, "unit": "tablet", "frequency_per_day": 3})
    return json.dumps(rows)


def parse_and_check(cases, texts, kb) -> int:
    for case, case_texts in zip(cases, texts, strict=True):
        facts = patient_facts(case)
        for text in case_texts:
            critique(parse_plan(text, kb) or TreatmentPlan(), facts, kb)
    return sum(map(len, texts))


def library_load_s() -> float:
    found = subprocess.run([sys.executable, "-c", _LIBRARY_LOAD], capture_output=True, text=True, check=True)
    return float(found.stdout)


def main(out_dir: Path) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    kb = load_kb()
    cases = generate_cases(kb, CaseGenerationSettings(n=CASES, seed=SEED))
    plans = generated_plans(cases, kb)
    fresh = kb.model_copy()  # another object: the critic indexes it anew
    started = time.perf_counter()
    critique(plans[0][0], patient_facts(cases[0]), fresh)
    cold_index_ms = 1000 * (time.perf_counter() - started)
    checks, checks_s = fastest(check_plans, cases, plans, kb)
    episode_checks, episodes_s = fastest(check_episodes, cases, plans, kb)
    texts = [render(plan) for case_plans in plans[:100] for plan in case_plans]
    started = time.perf_counter()
    for text in texts:
        parse_plan(text, kb)
    parse_s = time.perf_counter() - started
    rng = random.Random(SEED)
    some = cases[:NAMED_CASES]
    generic_texts = [
        [json.dumps([render_row(item) for item in plan.items]) for plan in p] for p in plans[:NAMED_CASES]
    ]
    named_texts = [[as_written(plan, kb, rng) for plan in p] for p in plans[:NAMED_CASES]]
    parse_and_check(some, named_texts, kb)  # the library loads once, before the timing
    named, named_s = fastest(parse_and_check, some, named_texts, kb)
    _, generic_s = fastest(parse_and_check, some, generic_texts, kb)
    return {
        "cases": len(cases),
        "plans": checks,
        "target_ms_per_1000_episodes": TARGET_MS_PER_1000_EPISODES,
        "cold_index_ms": cold_index_ms,
        "checks_per_s": checks / checks_s,
        "us_per_check": 1e6 * checks_s / checks,
        "episodes": len(cases),
        "critiques_per_episode": episode_checks / len(cases),
        "ms_per_1000_episodes": 1000 * episodes_s * 1000 / len(cases),
        "parse_ms_per_plan": 1000 * parse_s / len(texts),
        "named_plans": named,
        "named_plans_per_s": named / named_s,
        "named_ms_per_1000_plans": 1000 * named_s * 1000 / named,
        "generic_ms_per_1000_plans": 1000 * generic_s * 1000 / named,
        "named_over_generic": named_s / generic_s,
        "library_load_s": library_load_s(),
    }


def summary_lines(results: dict[str, Any]) -> list[str]:
    target = results["target_ms_per_1000_episodes"]
    verdict = "met" if results["ms_per_1000_episodes"] < target else "MISSED"
    named_verdict = "met" if results["named_ms_per_1000_plans"] < target else "MISSED"
    return [
        f"{results['cases']} cases, {results['plans']:,} generated plans; first check on a new KB "
        f"{results['cold_index_ms']:.2f} ms (index build)",
        f"checks: {results['checks_per_s']:,.0f} plans/s, {results['us_per_check']:.1f} us a plan",
        f"episodes: {results['critiques_per_episode']:.2f} critiques each, "
        f"{results['ms_per_1000_episodes']:.1f} ms per 1,000 episodes (target < {target:.0f} ms: {verdict})",
        f"parse_plan (apart): {results['parse_ms_per_plan']:.3f} ms a plan",
        f"name resolution on: {results['named_plans']:,} plans written with brands, salts and combination "
        f"products parsed and checked at {results['named_plans_per_s']:,.0f} plans/s, "
        f"{results['named_ms_per_1000_plans']:.0f} ms per 1,000 (target < {target:.0f} ms: {named_verdict}); "
        f"x{results['named_over_generic']:.2f} the baseline of KB generic names "
        f"({results['generic_ms_per_1000_plans']:.0f} ms per 1,000)",
        f"name library: {results['library_load_s']:.1f} s to load, once per process and only when a name "
        "needs it",
    ]
