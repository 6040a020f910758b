"""The critic's profile rules: allergies and cross-reactivity, contraindications with a condition or a
state, pregnancy and lactation, age bands, minimum ages, renal and hepatic bands; on the test KB and the
shipped one.
"""

import pytest

from tasks.benchmarks.consult.critic import Critique, allergy_problem, critique, resolve_allergy
from tasks.benchmarks.consult.kb.loading import load_kb
from tests.tasks.benchmarks.consult.critic_fixtures import KB, facts, item, plan, violation


@pytest.mark.parametrize(
    ("allergies", "planned", "expected"),
    [
        (
            ("nsaids",),
            "ibuprofen",
            (
                "allergy",
                "drug ibuprofen: allergy_class nsaids",
                "label ibuprofen",
                "ibuprofen is in the nsaids class the patient is allergic to",
            ),
        ),
        # a drug's allergy class, not its class: aspirin is an antiplatelet that nsaid allergy covers
        (
            ("nsaids",),
            "aspirin",
            (
                "allergy",
                "drug aspirin: allergy_class nsaids",
                "label aspirin",
                "aspirin is in the nsaids class the patient is allergic to",
            ),
        ),
        (
            ("antiplatelets",),
            "aspirin",
            (
                "allergy",
                "drug aspirin: drug_class antiplatelets",
                "label aspirin",
                "aspirin is in the antiplatelets class the patient is allergic to",
            ),
        ),
        (
            ("amoxicillin",),
            "amoxicillin",
            ("allergy", "drug amoxicillin", "label amoxicillin", "the patient is allergic to amoxicillin"),
        ),
        # an allergy to one penicillin is an allergy to the class
        (
            ("amoxicillin",),
            "cefalexin",
            (
                "cross_reactivity",
                "drug amoxicillin: cross_reactive cephalosporins",
                "label amoxicillin",
                "cefalexin (cephalosporins) cross-reacts with the patient's penicillins allergy",
            ),
        ),
        # read both ways: amoxicillin's entry makes penicillins unsafe for a cephalosporin allergy
        (
            ("cephalosporins",),
            "amoxicillin",
            (
                "cross_reactivity",
                "drug amoxicillin: cross_reactive cephalosporins",
                "label amoxicillin",
                "amoxicillin (penicillins) cross-reacts with the patient's cephalosporins allergy",
            ),
        ),
        # the planned drug's own entry names the allergy class
        (
            ("antiplatelets",),
            "ibuprofen",
            (
                "cross_reactivity",
                "drug ibuprofen: cross_reactive antiplatelets",
                "label ibuprofen",
                "ibuprofen (nsaids) cross-reacts with the patient's antiplatelets allergy",
            ),
        ),
    ],
)
def test_allergy_and_cross_reactivity_are_hard_profile_conflicts(allergies, planned, expected):
    kind, entry, source, detail = expected
    assert critique(plan(item(planned)), facts(allergies=allergies), KB) == Critique(
        violations=(violation(kind, "hard", planned, entry, source, detail),),
        drugs=1,
        pairs=0,
        interacting_pairs=0,
        conflicting_drugs=1,
    )


@pytest.mark.parametrize("allergies", [("macrolides",), ("clarithromycin",), ("latex",)])
def test_an_allergy_to_an_unrelated_class_or_drug_does_not_fire(allergies):
    assert critique(plan(item("amoxicillin")), facts(allergies=allergies), KB).violations == ()


def test_absolute_contraindication_with_a_condition_is_hard():
    found = critique(plan(item("aspirin")), facts(conditions=("chickenpox",)), KB)
    assert found.violations == (
        violation(
            "contraindication",
            "hard",
            "aspirin",
            "contraindication aspirin / chickenpox",
            "BNF aspirin",
            "absolute: Reye's syndrome.",
        ),
    )
    assert found.conflicting_drugs == 0  # a contraindication is not a profile conflict


def test_relative_contraindication_with_a_state_is_soft():
    found = critique(plan(item("ibuprofen")), facts(states=("asthma_history",)), KB)
    assert found.violations == (
        violation(
            "contraindication",
            "soft",
            "ibuprofen",
            "contraindication nsaids / asthma_history",
            "BNF nsaids",
            "relative: Bronchospasm.",
        ),
    )
    assert not found.hard


def test_a_contraindication_does_not_fire_without_its_condition_or_state():
    given = facts(conditions=("otitis",), states=("cough",))
    assert critique(plan(item("aspirin"), item("ibuprofen")), given, KB).violations == ()


def test_pregnancy_conflict_is_soft_beside_an_absolute_contraindication():
    found = critique(plan(item("simvastatin"), item("paracetamol")), facts(states=("pregnancy",)), KB)
    assert found == Critique(
        violations=(
            violation(
                "contraindication",
                "hard",
                "simvastatin",
                "contraindication statins / pregnancy",
                "BNF statins",
                "absolute: Anomalies.",
            ),
            violation(
                "pregnancy",
                "soft",
                "simvastatin",
                "drug simvastatin: pregnancy",
                "label simvastatin",
                "simvastatin is to be avoided in pregnancy",
            ),
        ),
        drugs=2,
        pairs=1,
        interacting_pairs=0,
        conflicting_drugs=1,
    )


@pytest.mark.parametrize(
    ("given", "planned", "expected"),
    [
        (
            facts(states=("breastfeeding",)),
            "aspirin",
            violation(
                "lactation",
                "soft",
                "aspirin",
                "drug aspirin: lactation",
                "label aspirin",
                "aspirin is to be avoided while breastfeeding",
            ),
        ),
        (
            facts(states=("renal_impairment",)),
            "ibuprofen",
            violation(
                "renal", "soft", "ibuprofen", "drug ibuprofen: renal", "label ibuprofen", "Avoid if possible."
            ),
        ),
        (
            facts(states=("hepatic_impairment",)),
            "paracetamol",
            violation(
                "hepatic",
                "soft",
                "paracetamol",
                "drug paracetamol: hepatic",
                "label paracetamol",
                "Max 3 g a day.",
            ),
        ),
        # the profile flag without its state counts as well
        (
            facts(pregnant=True),
            "ibuprofen",
            violation(
                "pregnancy",
                "soft",
                "ibuprofen",
                "drug ibuprofen: pregnancy",
                "label ibuprofen",
                "ibuprofen is to be avoided in pregnancy",
            ),
        ),
    ],
)
def test_profile_conflicts_are_soft(given, planned, expected):
    assert critique(plan(item(planned)), given, KB) == Critique(
        violations=(expected,), drugs=1, pairs=0, interacting_pairs=0, conflicting_drugs=1
    )


def test_a_drug_with_no_maximum_for_the_age_band_is_a_soft_conflict_and_its_dose_unchecked():
    """Found by the property tests: amitriptyline 4 g a day for a newborn passed, as the KB gives it no
    child maximum and only the soft age-band conflict fired."""
    assert critique(plan(item("aspirin")), facts(age=6), KB).violations == (
        violation("age_band", "soft", "aspirin", "drug aspirin: max_daily.child", "label aspirin",
                  "aspirin has no maximum daily dose for the child age band: not for this patient"),
        violation("dose_unreadable", "unverified", "aspirin", "drug aspirin: max_daily.child",
                  "label aspirin",
                  "the KB gives aspirin no maximum for the child age band: the dose is not checked"),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("given", "planned"),
    [
        (facts(states=("breastfeeding",)), "ibuprofen"),  # compatible in lactation
        (facts(states=("renal_impairment", "hepatic_impairment")), "amoxicillin"),  # no renal or hepatic note
        (facts(age=11, weight_kg=40), "ibuprofen"),  # has a child maximum: 30 mg/kg is 1200 mg, exactly
    ],
)
def test_profile_conflicts_that_must_not_fire(given, planned):
    assert critique(plan(item(planned)), given, KB).violations == ()


def shipped_profile_violations(planned, **profile):
    found = critique(plan(item(planned)), facts(**profile), load_kb())
    return [(v.kind, v.severity, v.entry, v.detail) for v in found.violations if v.kind != "interaction"]


def must_not(drug, kind="pregnancy", during="in pregnancy"):
    return [(kind, "hard", f"drug {drug}: {kind}", f"{drug} must not be given {during}")]


@pytest.mark.parametrize(
    ("planned", "profile", "expected"),
    [
        ("methotrexate", {"pregnant": True}, must_not("methotrexate")),
        ("isotretinoin", {"pregnant": True}, must_not("isotretinoin")),
        ("warfarin", {"pregnant": True}, must_not("warfarin")),
        ("losartan", {"pregnant": True}, must_not("losartan")),
        ("methotrexate", {"breastfeeding": True},
         must_not("methotrexate", "lactation", "while breastfeeding")),
        # avoid stays soft
        ("doxycycline", {"breastfeeding": True},
         [("lactation", "soft", "drug doxycycline: lactation",
           "doxycycline is to be avoided while breastfeeding")]),
        ("aspirin", {"age": 12},
         [("minimum_age", "hard", "drug aspirin: min_age", "aspirin is not for a patient under 16 (aged 12): "
           "Reye's syndrome risk (only on a specialist's advice)")]),
        ("aspirin", {"age": 16}, []),
        ("paracetamol", {"pregnant": True, "breastfeeding": True}, []),
    ],
)  # fmt: skip
def test_contraindicated_in_pregnancy_or_lactation_and_under_the_minimum_age_are_hard(
    planned, profile, expected
):
    assert shipped_profile_violations(planned, **profile) == expected


@pytest.mark.parametrize(
    ("allergy", "planned", "entry"),
    [
        ("penicillin", "amoxicillin", "drug amoxicillin: allergy_class penicillins"),
        ("Penicillins", "flucloxacillin", "drug flucloxacillin: allergy_class penicillins"),
        ("NSAIDs", "naproxen", "drug naproxen: allergy_class nsaids"),
        ("anti-inflammatories", "diclofenac", "drug diclofenac: allergy_class nsaids"),
        ("aspirin", "ibuprofen", "drug ibuprofen: allergy_class nsaids"),  # aspirin's allergy class
        ("Nurofen", "naproxen", "drug naproxen: allergy_class nsaids"),  # a brand
        ("opiates", "tramadol", "drug tramadol: allergy_class opioids"),
        ("fluoroquinolone", "levofloxacin", "drug levofloxacin: allergy_class quinolones"),
        ("SSRIs", "citalopram", "drug citalopram: drug_class ssris"),
    ],
)
def test_an_allergy_written_as_a_drug_a_class_or_a_lay_term_is_hard(allergy, planned, entry):
    found = critique(plan(item(planned)), facts(allergies=(allergy,)), load_kb())
    assert [(v.kind, v.severity, v.entry) for v in found.violations] == [("allergy", "hard", entry)]


@pytest.mark.parametrize(
    ("allergy", "planned"),
    [
        ("penicillin", "clarithromycin"),
        ("sulfa", "trimethoprim"),  # trimethoprim is no sulfonamide
        ("aspirin", "paracetamol"),
        ("SSRIs", "tramadol"),  # serotonergic, not an SSRI
    ],
)
def test_an_allergy_term_does_not_fire_for_an_unrelated_drug(allergy, planned):
    assert critique(plan(item(planned)), facts(allergies=(allergy,)), load_kb()).violations == ()


def test_allergies_resolve_to_drugs_and_classes_or_to_nothing():
    kb = load_kb()
    assert [resolve_allergy(allergy, kb) for allergy in ("sulfa", "Sulphonamides", "Klaricid", "latex")] == [
        ((), ("sulfonamides",)),
        ((), ("sulfonamides",)),
        (("clarithromycin",), ("macrolides",)),
        ((), ()),
    ]
    assert allergy_problem("penicillin", kb) is None
    assert allergy_problem("latex", kb) == (
        "'latex' is not a drug (generic name, brand, salt, spelling or combination product), a drug class "
        "or a term for one of the KB "
        "(tasks/benchmarks/consult/kb/data/drugs_v1.yaml)"
    )


METFORMIN_RENAL = "Review dose if eGFR under 45; avoid if under 30."
METFORMIN_LACTIC = ("contraindication", "soft", "contraindication metformin / renal_impairment",
                    "relative: Lactic acidosis risk; stop if eGFR is under 30.")  # fmt: skip
NSAID_HEPATIC = "Avoid in severe hepatic impairment."


@pytest.mark.parametrize(
    ("planned", "profile", "expected"),
    [
        ("metformin", {"egfr": 25}, [METFORMIN_LACTIC, (
            "renal", "hard", "drug metformin: renal_avoid_below",
            f"metformin must not be given under eGFR 30 (the patient's: 25): {METFORMIN_RENAL}")]),
        # above the drug's limit: the impairment's soft note, as with the flag alone
        ("metformin", {"egfr": 40},
         [METFORMIN_LACTIC, ("renal", "soft", "drug metformin: renal", METFORMIN_RENAL)]),
        # an impairment without its band: a limit it may be past is not verified, never passed
        ("metformin", {"renal_impairment": True}, [METFORMIN_LACTIC, (
            "renal", "unverified", "drug metformin: renal_avoid_below",
            "metformin must not be given under eGFR 30, and the patient's eGFR is not recorded")]),
        ("metformin", {"hepatic_impairment": True}, [(
            "hepatic", "hard", "drug metformin: hepatic_avoid_from",
            "metformin must not be given in mild hepatic impairment: Avoid (risk of lactic acidosis).")]),
        ("ibuprofen", {"hepatic_impairment": True}, [(
            "hepatic", "unverified", "drug ibuprofen: hepatic_avoid_from",
            "ibuprofen must not be given from severe hepatic impairment, and its severity is not recorded")]),
        ("amoxicillin", {"hepatic_impairment": True}, []),
        ("metformin", {"egfr": 75}, []),
        ("ibuprofen", {"hepatic_severity": "severe"}, [(
            "hepatic", "hard", "drug ibuprofen: hepatic_avoid_from",
            f"ibuprofen must not be given in severe hepatic impairment: {NSAID_HEPATIC}")]),
        ("ibuprofen", {"hepatic_severity": "moderate"},
         [("hepatic", "soft", "drug ibuprofen: hepatic", NSAID_HEPATIC)]),
        ("metformin", {"hepatic_severity": "mild"}, [(
            "hepatic", "hard", "drug metformin: hepatic_avoid_from",
            "metformin must not be given in mild hepatic impairment: Avoid (risk of lactic acidosis).")]),
        ("amoxicillin", {"hepatic_severity": "severe"}, []),
    ],
)  # fmt: skip
def test_a_renal_or_hepatic_band_past_the_drugs_limit_is_hard(planned, profile, expected):
    assert shipped_profile_violations(planned, **profile) == expected
