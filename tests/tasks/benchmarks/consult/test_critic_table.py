"""The safety critic on real prescriptions: a given/expect table (critic_table.yaml) of patients and plans
as agents write them, each expectation resting on the source it names. Plans go through the agents'
parser, so names, salts, brands, combinations and every written dose form are part of what is tested."""

import json
from pathlib import Path

import pytest
import yaml

from tasks.benchmarks.consult.case import PatientProfile
from tasks.benchmarks.consult.critic import critique, profile_facts
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.treatment import parse_plan

CASES = yaml.safe_load((Path(__file__).parent / "critic_table.yaml").read_text(encoding="utf-8"))


def test_the_table_is_wide_enough_and_every_case_names_its_source():
    verdicts = [case["verdict"] for case in CASES]
    assert len(CASES) >= 80 and verdicts.count("pass") >= 20
    assert all(len(case["source"]) > 3 for case in CASES)
    assert len({case["name"] for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_the_critic_on_a_real_prescription(case):
    kb = load_kb()
    plan = parse_plan(json.dumps(case["plan"]), kb)
    assert plan is not None and len(plan.items) == len(case["plan"])
    facts = profile_facts(PatientProfile.model_validate(case["profile"]), case.get("conditions", ()))
    found = critique(plan, facts, kb)
    fired = {violation.kind for violation in found.violations}
    assert (found.verdict, set(case.get("fires", ())) - fired) == (case["verdict"], set()), found.violations
