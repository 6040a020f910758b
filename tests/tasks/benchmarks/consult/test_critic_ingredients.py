"""Plans as agents write them, read by parse_plan against the shipped KB: brands, salts and combination
products resolve to their ingredients, and each ingredient is checked (allergies, dose totals,
interactions, drugs the KB lacks).
"""

import json

import pytest

from tasks.benchmarks.consult.critic import Critique, allergy_problem, critique, drug_problem
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.treatment import parse_plan
from tests.tasks.benchmarks.consult.critic_fixtures import facts, violation


# Plans as agents write them, read by parse_plan and checked against the shipped KB: names resolve to
# their ingredients (brands, salts, combination products) and each ingredient is checked.
def shipped(*entries, **profile):
    kb = load_kb()
    return critique(parse_plan(json.dumps(entries), kb), facts(age=40, **profile), kb)


def test_co_amoxiclav_for_a_penicillin_allergy_is_an_allergy_to_its_amoxicillin():
    found = shipped({"drug": "co-amoxiclav 500/125", "dose": 1, "unit": "tablet", "frequency_per_day": 3},
                    allergies=("penicillins",))  # fmt: skip
    assert found == Critique(
        violations=(
            violation(
                "allergy", "hard", "amoxicillin", "drug amoxicillin: allergy_class penicillins",
                "BNF: amoxicillin", "amoxicillin is in the penicillins class the patient is allergic to",
            ),
        ),
        drugs=2,
        pairs=1,
        interacting_pairs=0,
        conflicting_drugs=1,
    )  # fmt: skip


def test_co_codamol_and_paracetamol_sum_into_one_paracetamol_daily_total():
    found = shipped(
        {"drug": "co-codamol", "dose": 2, "unit": "tablets", "frequency_per_day": "qds"},
        {"drug": "paracetamol", "dose": "1 g", "frequency_per_day": 4},
    )
    # Every co-codamol has 500 mg paracetamol a tablet: 4 x 1000 mg + 4 x 1 g = 8 g a day. Its codeine (8, 15
    # or 30 mg a tablet) is unknown without a strength: unverified, never fine.
    assert [(v.kind, v.severity, v.drug, v.entry, v.detail) for v in found.violations] == [
        ("dose_unreadable", "unverified", "codeine", "drug codeine: dose",
         "'co-codamol': dose: how much codeine is in 2 tablets of co-codamol is not known: name the "
         "product's strength"),
        ("dose_above_maximum", "hard", "paracetamol", "drug paracetamol: max_daily.adult",
         "4 x 1000 mg + 4 x 1 g = 8000 mg a day > 4000 mg"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        # 3 tablets of 30/500 four times a day: codeine 360 mg > 240 mg, paracetamol 6 g > 4 g.
        ({"drug": "co-codamol 30/500", "dose": 3, "unit": "tablets", "frequency_per_day": 4},
         [("dose_above_maximum", "codeine"), ("dose_above_maximum", "paracetamol")]),
        # 2 tablets of Nurofen Plus six times a day: ibuprofen 2400 mg is the maximum, codeine 153.6 mg.
        ({"drug": "Nurofen Plus", "dose": 2, "unit": "tablets", "frequency_per_day": 6}, []),
        # co-amoxiclav 1250 mg is two 500/125 tablets: amoxicillin 3 g a day, clavulanic acid 750 mg > 375 mg.
        ({"drug": "co-amoxiclav 500/125", "dose": 1250, "unit": "mg", "frequency_per_day": 3},
         [("dose_above_maximum", "clavulanic acid")]),
        # co-amoxiclav 625 mg is one tablet: both ingredients within their maxima.
        ({"drug": "co-amoxiclav", "dose": "625 mg", "frequency_per_day": 3}, []),
        ({"drug": "co-codamol 30/500", "dose": 2, "unit": "tablets", "frequency_per_day": 4}, []),
    ],
)  # fmt: skip
def test_a_combination_dose_is_each_ingredients_amount_when_the_product_fixes_it(entry, expected):
    assert [(v.kind, v.drug) for v in shipped(entry).violations] == expected


def test_naproxen_sodium_with_warfarin_is_the_nsaid_anticoagulant_interaction():
    found = shipped({"drug": "naproxen sodium", "dose": 500, "unit": "mg", "frequency_per_day": 2},
                    medications=("warfarin sodium",))  # fmt: skip
    assert found.violations == (
        violation(
            "interaction", "hard", "naproxen", "interaction nsaids / anticoagulants",
            "BNF: interactions of warfarin",
            "severe: Anti-inflammatories add to the anticoagulant's bleeding risk, especially from the gut.",
            other="warfarin",
        ),
    )  # fmt: skip


def test_klacid_with_simvastatin_is_the_clarithromycin_simvastatin_interaction():
    found = shipped(
        {"drug": "Klacid", "dose": 500, "unit": "mg", "frequency_per_day": 2},
        {"drug": "simvastatin", "dose": 40, "unit": "mg", "frequency_per_day": 1},
    )
    assert [(v.kind, v.drug, v.other, v.entry) for v in found.violations] == [
        ("interaction", "clarithromycin", "simvastatin", "interaction clarithromycin / simvastatin"),
    ]


def test_an_ingredient_is_checked_against_the_patients_combination_medicine():
    # Augmentin holds amoxicillin: an allergy written as the brand Amoxil fires on the planned co-amoxiclav,
    # and the ibuprofen of Nurofen Plus meets the patient's warfarin. A tablet of Augmentin with no strength
    # holds 250, 500 or 875 mg of amoxicillin: its dose is unverified.
    found = shipped(
        {"drug": "Augmentin", "dose": 1, "unit": "tablet", "frequency_per_day": 3},
        {"drug": "Nurofen Plus", "dose": 2, "unit": "tablets", "frequency_per_day": 3},
        allergies=("Amoxil",),
        medications=("Coumadin",),
    )
    assert [(v.kind, v.drug, v.other) for v in found.violations] == [
        ("allergy", "amoxicillin", None),
        ("dose_unreadable", "amoxicillin", None),
        ("interaction", "ibuprofen", "warfarin"),
    ]
    assert (found.drugs, found.pairs) == (4, 6 + 4)


def test_an_item_holding_a_drug_the_kb_lacks_is_unverified_and_its_kb_ingredients_still_checked():
    found = shipped({"drug": "Daktacort", "dose": 1, "unit": "application", "frequency_per_day": 2},
                    allergies=("hydrocortisone",))  # fmt: skip
    assert [(v.kind, v.severity, v.drug, v.entry, v.detail) for v in found.violations] == [
        ("allergy", "hard", "hydrocortisone", "drug hydrocortisone",
         "the patient is allergic to hydrocortisone"),
        ("unverified", "unverified", "Daktacort", "drugs_v1: no miconazole",
         "'Daktacort': it also holds miconazole, which the knowledge base lacks: checked only in part"),
    ]  # fmt: skip
    assert found.unverified


@pytest.mark.parametrize(
    ("entries", "medications", "allergies", "unread"),
    [
        ([{"drug": "warfarin"}, {"drug": "clarithromycin"}], (), (), (0, 0, 0)),
        ([{"drug": "warfarin"}, {"drug": "zzzomycin"}], (), (), (1, 0, 0)),  # a word read as nothing
        ([{"drug": "Valium"}], ("warfarin",), (), (1, 0, 0)),  # a drug the KB lacks
        # a key no field is read from, holding a drug: the item's drug is not all that is given
        ([{"drug": "paracetamol", "dose": "1 g", "frequency": "qds", "with": "warfarin 5 mg od"}], (), (),
         (1, 0, 0)),
        ([{"drug": "paracetamol", "dose": "1 g", "frequency": "a few"}], (), (), (1, 0, 0)),  # a field
        ([{"drug": "paracetamol"}], ("Valium",), (), (0, 1, 0)),  # a current medicine the KB lacks
        ([{"drug": "paracetamol"}], (), ("Valium",), (0, 0, 1)),  # an allergy to a drug the KB lacks
        ([{"drug": "zzzomycin"}], ("Valium",), ("Valium",), (1, 0, 0)),  # beside no planned KB drug
    ],
)  # fmt: skip
def test_an_item_a_current_medicine_or_an_allergy_not_wholly_read_is_counted(
    entries, medications, allergies, unread
):
    found = shipped(*entries, medications=medications, allergies=allergies)
    assert (found.unread_items, found.unread_medicines, found.unread_allergies) == unread


@pytest.mark.parametrize(
    ("entries", "medications", "allergies", "unchecked"),
    [
        ([{"drug": "paracetamol"}], (), (), (False, False)),
        ([{"drug": "paracetamol"}, {"drug": "dicloxacillin"}], (), ("penicillin",), (True, True)),
        ([{"drug": "paracetamol"}], ("Valium",), (), (True, False)),  # its interactions only
        ([{"drug": "paracetamol"}], (), ("Valium",), (False, True)),  # its cross-reactions only
    ],
)
def test_what_was_not_read_leaves_the_pairs_or_the_profile_conflicts_unchecked(
    entries, medications, allergies, unchecked
):
    found = shipped(*entries, medications=medications, allergies=allergies)
    assert (found.pairs_unchecked, found.conflicts_unchecked) == unchecked


def test_a_drug_the_kb_lacks_is_named_in_the_unverified_detail():
    found = shipped({"drug": "Valium", "dose": 5, "unit": "mg", "frequency_per_day": 1})
    assert [(v.entry, v.detail) for v in found.violations] == [
        ("drugs_v1: no Diazepam", "'Valium': it is Diazepam, which the knowledge base lacks"),
    ]


def test_allergies_and_medicines_may_be_brands_salts_and_combinations():
    kb = load_kb()
    readable = ["Amoxil", "co-amoxiclav", "penicillins", "salbutamol sulphate", "Nurofen Plus"]
    assert [allergy_problem(name, kb) for name in readable] == [None] * 5
    assert [drug_problem(name, kb) for name in readable[:2] + readable[3:]] == [None] * 4
    # a real drug the KB lacks is read (plans for that patient are unverified); a word naming none is not
    assert drug_problem("Daktacort", kb) is None
    assert drug_problem("Zzzocillin", kb) == (
        "'Zzzocillin' is not a drug (generic name, brand, salt, spelling or combination product) of the KB "
        "(tasks/benchmarks/consult/kb/data/drugs_v1.yaml), did you mean 'amoxicillin'?"
    )
