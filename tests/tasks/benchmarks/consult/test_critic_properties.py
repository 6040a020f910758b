"""The safety critic's invariants over generated plans and patients, through the agents' own plan reader and
the shipped KB: a pass means every item was wholly read and within its limits; more drug or more often never
makes a plan safer; another name for the same drug never changes the verdict; no input raises."""

import json
import math

from hypothesis import assume, given
from hypothesis import strategies as st

from tasks.benchmarks.consult.case import PatientProfile
from tasks.benchmarks.consult.critic import Critique, critique, profile_facts
from tasks.benchmarks.consult.dose_check import ingredient_doses, plan_parts
from tasks.benchmarks.consult.episode import TreatmentPlan
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.kb.resolve import resolve_drug
from tasks.benchmarks.consult.treatment import read_plan_reply

KB = load_kb()
FIRST_LINE = [option for condition in KB.conditions for option in condition.regimen.first_line]
GENERICS = sorted(drug.name for drug in KB.drugs)


def _same_drug_names() -> dict[str, list[str]]:
    """Every other name the critic reads as the same one drug, no salt to convert and no strength in it."""
    names: dict[str, list[str]] = {}
    for drug in KB.drugs:
        for name in (*drug.brands, *drug.spellings):
            resolution = resolve_drug(KB, name)
            if (
                resolution.complete
                and resolution.drugs == (drug.name,)
                and all(ingredient.salt is None for ingredient in resolution.ingredients)
                and not any(character.isdigit() for character in name)
            ):
                names.setdefault(drug.name, []).append(name)
    return names


SAME_DRUG = _same_drug_names()

units = st.sampled_from(["mg", "g", "microgram", "tablets", "ml", "puffs", "sachet", "application"])
frequencies = st.one_of(
    st.integers(min_value=1, max_value=8),
    st.sampled_from(
        ["od", "bd", "tds", "qds", "every 4 hours", "once weekly", "as needed, max 4 a day", "1/7"]
    ),
)


@st.composite
def entries(draw):
    """A plan entry as an agent writes it: a first-line option as the KB gives it, or one varied."""
    option = draw(st.sampled_from(FIRST_LINE))
    entry = {
        "drug": draw(st.one_of(st.just(option.drug), st.sampled_from(GENERICS))),
        "dose": option.dose,
        "unit": option.unit,
        "frequency_per_day": option.frequency_per_day,
        "route": option.route,
    }
    if draw(st.booleans()):
        entry["dose"] = draw(st.floats(min_value=0.01, max_value=5000, allow_nan=False))
        entry["unit"] = draw(units)
    if draw(st.booleans()):
        entry["frequency_per_day"] = draw(frequencies)
    return entry


profiles = st.builds(
    PatientProfile,
    age=st.integers(min_value=0, max_value=100),
    sex=st.just("female"),
    pregnant=st.booleans(),
    allergies=st.lists(st.sampled_from(["penicillin", "NSAIDs", "sulfa", "clarithromycin"]), max_size=1),
    medications=st.lists(
        st.sampled_from(["warfarin", "simvastatin", "co-codamol", "lisinopril"]), max_size=2
    ),
)
plans = st.lists(entries(), min_size=1, max_size=3)
# Plans and patients a pass is likely for: the KB's own options, as written, for adults.
likely_passes = st.lists(
    st.sampled_from(FIRST_LINE).map(lambda option: option.model_dump(exclude={"days", "age_band"})),
    min_size=1,
    max_size=2,
)
adults = st.builds(PatientProfile, age=st.integers(min_value=18, max_value=90), sex=st.just("female"))


def verdict(entries_: list[dict], profile: PatientProfile) -> Critique:
    reading = read_plan_reply(json.dumps(entries_), KB)
    assert reading.plan is not None, reading.problem
    return critique(reading.plan, profile_facts(profile), KB)


@given(st.one_of(plans, likely_passes), st.one_of(profiles, adults))
def test_a_pass_means_every_item_was_wholly_read_and_within_its_daily_maximum(entries_, profile):
    found = verdict(entries_, profile)
    assume(found.verdict == "pass")
    plan = read_plan_reply(json.dumps(entries_), KB).plan
    totals: dict[str, float] = {}
    for item in plan.items:
        resolution, parts = plan_parts(item, KB)
        assert resolution.complete and item.dose is not None and item.frequency_per_day is not None
        assert all(not part.unreadable for part in parts)
        for name, daily, _ in ingredient_doses(item, profile, KB):
            assert daily is not None and math.isfinite(daily)
            totals[name] = totals.get(name, 0.0) + daily
    for name, total in totals.items():
        drug = KB.drug(name)
        dosing = KB.dosing_of(name)
        if dosing is not None and dosing.weekly is not None:
            assert total * 7 <= dosing.weekly.maximum * (1 + 1e-9)
        elif profile.age_band != "child" or profile.weight_kg is None:
            limit = getattr(drug.max_daily, profile.age_band)
            assert limit is not None and total <= limit * (1 + 1e-9)


@given(plans, entries(), profiles)
def test_adding_an_item_never_makes_a_plan_pass(entries_, added, profile):
    before = verdict(entries_, profile).verdict
    assume(before != "pass")
    assert verdict([*entries_, added], profile).verdict != "pass"


@given(plans, profiles, st.integers(min_value=0, max_value=2), st.floats(min_value=1.01, max_value=20))
def test_raising_a_frequency_never_turns_a_fail_into_a_pass(entries_, profile, position, factor):
    assume(position < len(entries_) and isinstance(entries_[position]["frequency_per_day"], int | float))
    before = verdict(entries_, profile).verdict
    assume(before != "pass")
    raised = [dict(entry) for entry in entries_]
    raised[position]["frequency_per_day"] *= factor
    assert verdict(raised, profile).verdict != "pass"


@given(plans, profiles, st.integers(min_value=0, max_value=2), st.floats(min_value=1.01, max_value=20))
def test_raising_a_dose_never_turns_a_fail_into_a_pass_unless_it_was_too_low(
    entries_, profile, position, factor
):
    """The one exception is the spec's: a dose below half the usual is a hard fail a larger dose cures."""
    assume(position < len(entries_))
    before = verdict(entries_, profile)
    failing = [v for v in before.violations if v.severity != "soft"]
    assume(failing and not all(v.entry.endswith(": usual_dose") for v in failing))
    raised = [dict(entry) for entry in entries_]
    raised[position]["dose"] *= factor
    assert verdict(raised, profile).verdict != "pass"


@given(plans, profiles, st.data())
def test_another_name_for_the_same_drug_never_changes_the_verdict(entries_, profile, data):
    renamed = [dict(entry) for entry in entries_]
    for entry in renamed:
        generic = resolve_drug(KB, entry["drug"]).drugs
        if len(generic) == 1 and generic[0] in SAME_DRUG:
            entry["drug"] = data.draw(st.sampled_from(SAME_DRUG[generic[0]]))
    assert verdict(renamed, profile).verdict == verdict(entries_, profile).verdict


json_values = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["drug", "dose", "unit", "frequency_per_day", "frequency", "strength", "route"]),
            json_values,
        ),
        max_size=3,
    ),
    profiles,
)
def test_no_plan_an_agent_can_write_makes_the_critic_raise(entries_, profile):
    reading = read_plan_reply(json.dumps(entries_), KB)
    plan = reading.plan if reading.plan is not None else TreatmentPlan()
    found = critique(plan, profile_facts(profile), KB)
    assert found.verdict in ("pass", "unsafe", "unverified")
    if found.verdict == "pass":
        assert all(item.unreadable == () for item in plan.items)
