"""The safety critic as a whole: a safe plan, the order of its violations, unknown drugs, patient facts
from a case, constraints and regimens, and the shipped KB's first-line options.
"""

import json

import pytest

from tasks.benchmarks.consult.case import CaseAiu, ConsultCase, GoldDiagnosis, PatientProfile
from tasks.benchmarks.consult.critic import (
    Critique,
    PatientFacts,
    constraint_satisfied,
    critique,
    patient_facts,
    regimen_met,
    with_constraint,
)
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.treatment import parse_plan
from tests.tasks.benchmarks.consult.critic_fixtures import KB, facts, item, plan, violation


def test_a_safe_plan_has_no_violation():
    given = plan(item("paracetamol", 1, "g", 4, "PO"), item("amoxicillin", 500, "mg", 3, "oral"))
    assert critique(given, facts(), KB) == Critique(
        violations=(), drugs=2, pairs=1, interacting_pairs=0, conflicting_drugs=0
    )


def test_an_unknown_drug_is_unverified_and_not_counted_as_a_drug():
    found = critique(plan(item("unobtainium", generic=None), item("paracetamol")), facts(), KB)
    assert found == Critique(
        violations=(
            violation(
                "unverified",
                "unverified",
                "unobtainium",
                "drugs_v1: unread 'unobtainium'",
                "consultation KB v1",
                "'unobtainium': 'unobtainium' is no drug, salt, strength or form the knowledge base or the "
                "name library knows",
            ),
        ),
        drugs=1,
        pairs=0,
        interacting_pairs=0,
        conflicting_drugs=0,
        unread_items=1,  # its pairs with paracetamol, and its conflicts, unchecked
    )


def test_violations_come_drug_by_drug_then_pairs_then_unverified_items():
    given = plan(
        item("mystery", generic=None),
        item("ibuprofen", 400, "mg", 8),
        item("warfarin", 5, "mg", 1),
        item("ibuprofen", 400, "mg", 8),  # the same dose twice: each violation once
    )
    found = critique(given, facts(states=("pregnancy", "asthma_history"), allergies=("nsaids",)), KB)
    assert [(v.kind, v.drug) for v in found.violations] == [
        ("allergy", "ibuprofen"),
        ("contraindication", "ibuprofen"),
        ("pregnancy", "ibuprofen"),
        ("dose_above_maximum", "ibuprofen"),
        ("interaction", "ibuprofen"),
        ("unverified", "mystery"),
    ]
    assert (found.drugs, found.pairs, found.interacting_pairs, found.conflicting_drugs) == (2, 1, 1, 1)
    assert found.hard


def test_patient_facts_from_a_case():
    case = ConsultCase(
        case_id="c1",
        department="respiratory",
        opening="Hello.",
        profile=PatientProfile(age=40, sex="female", renal_impairment=True, allergies=("penicillins",)),
        gold=(
            GoldDiagnosis(condition_id="otitis", icd11="1A00", title="Otitis", severity=1),
            GoldDiagnosis(condition_id="asthma", icd11="CA23", title="Asthma", core=False, severity=2),
        ),
        aius=(
            CaseAiu(aiu_id="asthma_history", template="past_medical_history", value="2010"),
            CaseAiu(aiu_id="pregnancy", template="gynae_pregnancy", present=False),
        ),
        mni_target=(),
    )
    assert patient_facts(case) == PatientFacts(
        profile=case.profile,
        conditions=frozenset({"otitis", "asthma"}),
        states=frozenset({"asthma_history", "renal_impairment"}),
    )


@pytest.mark.parametrize(
    ("constraint", "expected"),
    [
        ("allergy:penicillins", facts(medications=("warfarin",), allergies=("penicillins",))),
        (
            "pregnancy",
            PatientFacts(
                profile=PatientProfile(age=30, sex="female", pregnant=True, medications=("warfarin",)),
                conditions=frozenset(),
                states=frozenset({"pregnancy"}),
            ),
        ),
        ("no_tablets", facts(medications=("warfarin",)).model_copy(update={"no_tablets": True})),
        # a brand names its generic
        (
            "cost:Calpol",
            facts(medications=("warfarin",)).model_copy(update={"unavailable": frozenset({"paracetamol"})}),
        ),
        (
            "takes:clarithromycin",
            facts(medications=("warfarin", "clarithromycin"), states=("current_medication",)),
        ),
    ],
)
def test_with_constraint(constraint, expected):
    assert with_constraint(facts(medications=("warfarin",)), constraint, KB) == expected


def test_a_constraint_that_makes_the_first_plan_unsafe():
    first = plan(item("ibuprofen", 400, "mg", 3))
    before = facts()
    after = with_constraint(before, "takes:warfarin", KB)
    assert (critique(first, before, KB).hard, critique(first, after, KB).hard) == (False, True)


@pytest.mark.parametrize("constraint", ["allergy", "cost:", "fear_of_needles", "pregnancy:yes"])
def test_an_unknown_constraint_is_an_error(constraint):
    with pytest.raises(ValueError, match="unknown constraint"):
        with_constraint(facts(), constraint, KB)


@pytest.mark.parametrize(
    ("constraint", "given", "expected"),
    [
        ("allergy:penicillins", plan(item("clarithromycin")), True),
        ("allergy:penicillins", plan(item("amoxicillin")), False),
        ("allergy:penicillins", plan(item("cefalexin")), False),  # cross-reactive class
        ("allergy:amoxicillin", plan(item("cefalexin")), False),
        ("pregnancy", plan(item("paracetamol")), True),
        ("pregnancy", plan(item("ibuprofen")), False),  # to avoid in pregnancy
        ("pregnancy", plan(item("paracetamol"), item("simvastatin")), False),
        ("no_tablets", plan(item("salbutamol", route="inhaled")), True),
        ("no_tablets", plan(item("oral rehydration salts", 1, "sachet", 5, "oral")), True),
        ("no_tablets", plan(item("paracetamol", 240, "mg", 4, "oral")), False),
        ("no_tablets", plan(item("paracetamol", 10, "ml", 4, "oral")), True),
        ("no_tablets", plan(item("paracetamol oral suspension", generic="paracetamol")), True),
        ("no_tablets", plan(item("paracetamol")), False),  # the KB's route: oral
        # a solid form named beside a liquid one is swallowed, or not known not to be; a dissolved one is not
        (
            "no_tablets",
            plan(item("ibuprofen liquid capsules", 400, "mg", 3, "oral", generic="ibuprofen")),
            False,
        ),
        (
            "no_tablets",
            plan(item("ibuprofen oral suspension", 2, "tablets", 3, "oral", generic="ibuprofen")),
            False,
        ),
        (
            "no_tablets",
            plan(item("amoxicillin syrup", 1, "capsule", 3, "oral", generic="amoxicillin")),
            False,
        ),
        (
            "no_tablets",
            plan(item("amoxicillin dispersible tablets", 500, "mg", 3, "oral", generic="amoxicillin")),
            True,
        ),
        # a route written but not read may be a tablet's, whatever the unit says
        ("no_tablets", plan(item("amoxicillin", 500, "mg", 3, "oral tablet")), False),
        ("no_tablets", plan(item("paracetamol", 10, "ml", 4, "swallowed whole")), False),
        ("cost:amoxicillin", plan(item("clarithromycin")), True),
        ("cost:Calpol", plan(item("paracetamol")), False),
        ("takes:warfarin", plan(item("paracetamol")), True),
        ("takes:warfarin", plan(item("doxycycline")), True),  # moderate only
        ("takes:warfarin", plan(item("ibuprofen")), False),  # class pair
        ("takes:clarithromycin", plan(item("warfarin")), False),
        # a combination product: each ingredient (ibuprofen, codeine) against the plan
        ("takes:Nurofen Plus", plan(item("warfarin")), False),
        ("takes:Nurofen Plus", plan(item("paracetamol")), True),
        # a real drug the KB lacks: no interaction of it is known, so none is ruled out
        ("takes:ticagrelor", plan(item("paracetamol")), False),
    ],
)
def test_constraint_satisfied(constraint, given, expected):
    assert constraint_satisfied(given, constraint, facts(), KB) is expected


@pytest.mark.parametrize(
    ("condition_id", "given", "expected"),
    [
        ("otitis", plan(item("amoxicillin")), True),
        ("otitis", plan(item("paracetamol"), item("clarithromycin")), True),  # an alternative class
        ("otitis", plan(item("paracetamol")), False),
        ("otitis", plan(item("amoxil", generic=None)), False),  # unmatched names count for nothing
        # a drug named to say it is not given: the words saying so are not read, so the item gives nothing
        ("otitis", plan(item("no amoxicillin", generic="amoxicillin")), False),
        ("otitis", plan(item("amoxicillin - do not give", generic="amoxicillin")), False),
        ("colic", plan(), True),  # no classes expected
    ],
)
def test_regimen_met(condition_id, given, expected):
    assert regimen_met(given, KB.condition(condition_id), KB) is expected


@pytest.mark.parametrize(
    "written", ["no amoxicillin", "not amoxicillin", "avoid amoxicillin", "amoxicillin - do not give",
                "amoxicillin (not needed)", "stop amoxicillin", "without amoxicillin"],
)  # fmt: skip
def test_a_drug_written_as_not_given_meets_no_regimen(written):
    # NICE NG91 (acute otitis media): amoxicillin first line; an item saying it is not given treats nothing
    kb = load_kb()
    given = parse_plan(json.dumps([{"drug": written, "dose": "500 mg", "frequency": "tds"}]), kb)
    assert given is not None and given.generics == ("amoxicillin",)
    otitis = kb.condition("acute_otitis_media")
    assert otitis is not None and "penicillins" in otitis.regimen.drug_classes
    assert regimen_met(given, otitis, kb) is False


def test_every_first_line_option_of_the_shipped_kb_passes_for_a_plain_patient_of_its_band():
    kb = load_kb()
    ages = {"child": 6, "adult": 30, "older": 70}  # the child of 20 kg: its doses are checked by weight
    failing = [
        (condition.id, option.drug, critique(plan(item(option.drug, option.dose, option.unit,
                                                       option.frequency_per_day, option.route)),
                                             facts(age=ages[option.age_band],
                                                   weight_kg=20 if option.age_band == "child" else None),
                                             kb).violations)
        for condition in kb.conditions
        for option in condition.regimen.first_line
    ]  # fmt: skip
    assert [found for found in failing if found[2]] == []


def test_a_cost_constraint_on_a_combination_is_broken_by_the_same_product_under_a_brand():
    kb = load_kb()
    plans = [parse_plan(json.dumps([{"drug": name}]), kb) for name in ("Augmentin", "Amoxil")]
    assert [constraint_satisfied(given, "cost:co-amoxiclav", facts(), kb) for given in plans] == [False, True]
