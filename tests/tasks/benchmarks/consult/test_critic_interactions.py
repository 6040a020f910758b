"""The critic's interaction rules: drug pairs within the plan and with current medicines, class rules and
their near misses, as the shipped KB's lookup finds them.
"""

import pytest

from tasks.benchmarks.consult.critic import Critique, critique
from tasks.benchmarks.consult.kb.loading import KnowledgeBase, load_kb
from tasks.benchmarks.consult.kb.models import Contraindication, DrugClass, Interaction
from tests.tasks.benchmarks.consult.critic_fixtures import KB, facts, item, plan, violation


def test_severe_interaction_within_the_plan_is_hard():
    found = critique(plan(item("warfarin"), item("clarithromycin")), facts(), KB)
    assert found == Critique(
        violations=(
            violation(
                "interaction",
                "hard",
                "warfarin",
                "interaction warfarin / clarithromycin",
                "BNF warfarin",
                "severe: INR rises.",
                other="clarithromycin",
            ),
        ),
        drugs=2,
        pairs=1,
        interacting_pairs=1,
        conflicting_drugs=0,
    )


def test_class_interaction_with_a_current_medication_and_a_moderate_one():
    found = critique(plan(item("ibuprofen"), item("doxycycline")), facts(medications=("warfarin",)), KB)
    assert found == Critique(
        violations=(
            violation(
                "interaction",
                "hard",
                "ibuprofen",
                "interaction nsaids / anticoagulants",
                "BNF nsaids",
                "severe: Bleeding.",
                other="warfarin",
            ),
            violation(
                "interaction",
                "soft",
                "doxycycline",
                "interaction warfarin / doxycycline",
                "BNF warfarin",
                "moderate: INR may rise.",
                other="warfarin",
            ),
        ),
        drugs=2,
        pairs=3,
        interacting_pairs=1,
        conflicting_drugs=0,
    )


def test_pairs_wholly_within_current_medications_are_excluded():
    given = facts(medications=("warfarin", "clarithromycin"))
    assert critique(plan(item("paracetamol")), given, KB) == Critique(
        violations=(), drugs=1, pairs=2, interacting_pairs=0, conflicting_drugs=0
    )


def test_a_planned_drug_the_patient_already_takes_is_counted_once():
    given = facts(medications=("warfarin", "clarithromycin"))
    found = critique(plan(item("warfarin")), given, KB)
    assert (found.pairs, found.interacting_pairs) == (1, 1)


def test_interactions_agree_with_the_kb_lookup_for_every_pair_of_the_shipped_kb():
    kb = load_kb()
    disagreeing = []
    for first in kb.drugs:
        for second in kb.drugs:
            if first.name == second.name:
                continue
            expected = kb.interaction(first.name, second.name)
            found = critique(plan(item(first.name)), facts(medications=(second.name,)), kb).violations
            entries = [v.entry for v in found if v.kind == "interaction"]
            if entries != ([f"interaction {expected.a} / {expected.b}"] if expected else []):
                disagreeing.append((first.name, second.name, entries))
    assert disagreeing == []


def shipped_interactions(*planned, medications=()):
    """(severity, drug, other, entry, source) of the interaction violations of a plan for a 30-year-old,
    against the shipped KB."""
    found = critique(plan(*(item(name) for name in planned)), facts(medications=medications), load_kb())
    return [
        (v.severity, v.drug, v.other, v.entry, v.source) for v in found.violations if v.kind == "interaction"
    ]


WARFARIN, METHOTREXATE, LITHIUM = (
    "BNF: interactions of warfarin", "BNF: interactions of methotrexate", "BNF: interactions of lithium"
)  # fmt: skip
CKS_NSAIDS = "; NICE CKS: NSAIDs - prescribing issues"
STATINS = (
    "MHRA Drug Safety Update August 2012 (statins and CYP3A4 inhibitors); BNF: interactions of atorvastatin"
)
QT = (
    "BNF: QT-interval prolongation; MHRA Drug Safety Update December 2011 (citalopram with other "
    "QT-prolonging drugs)"
)
SEROTONIN = "BNF: interactions of SSRIs and tramadol (serotonin syndrome)"
TENDONS = "MHRA Drug Safety Update March 2019 (fluoroquinolones: disabling side effects); BNF: quinolones"
STRONG_CYP3A4 = "interaction statins / strong_cyp3a4_inhibitors"


@pytest.mark.parametrize(
    ("planned", "severity", "entry", "source"),
    [
        (("naproxen", "warfarin"), "hard", "interaction nsaids / anticoagulants", WARFARIN),
        (("atorvastatin", "clarithromycin"), "hard", STRONG_CYP3A4, STATINS),
        (("simvastatin", "itraconazole"), "hard", STRONG_CYP3A4, STATINS),
        # a drug pair is looked up before the class pair
        (("simvastatin", "clarithromycin"), "hard", "interaction clarithromycin / simvastatin",
         "BNF: interactions of simvastatin; MHRA Drug Safety Update 2012"),
        (("ibuprofen", "ramipril"), "soft", "interaction nsaids / ace_inhibitors",
         "BNF: interactions of NSAIDs (ACE inhibitors)" + CKS_NSAIDS),
        (("diclofenac", "losartan"), "soft", "interaction nsaids / arbs",
         "BNF: interactions of NSAIDs (angiotensin II receptor antagonists)" + CKS_NSAIDS),
        (("naproxen", "prednisolone"), "soft", "interaction nsaids / oral_corticosteroids",
         "BNF: interactions of corticosteroids (NSAIDs)" + CKS_NSAIDS),
        (("ibuprofen", "naproxen"), "hard", "interaction nsaids / nsaids",
         "BNF: non-steroidal anti-inflammatory drugs (avoid giving two together)"),
        (("methotrexate", "amoxicillin"), "hard", "interaction antimetabolites / penicillins", METHOTREXATE),
        (("methotrexate", "diclofenac"), "hard", "interaction nsaids / antimetabolites", METHOTREXATE),
        (("methotrexate", "trimethoprim"), "hard", "interaction trimethoprim / methotrexate", METHOTREXATE),
        (("levofloxacin", "prednisolone"), "hard", "interaction quinolones / oral_corticosteroids", TENDONS),
        (("sertraline", "tramadol"), "hard", "interaction serotonergic / serotonergic", SEROTONIN),
        (("fluoxetine", "amitriptyline"), "hard", "interaction serotonergic / serotonergic", SEROTONIN),
        (("azithromycin", "ondansetron"), "hard", "interaction qt_prolonging / qt_prolonging", QT),
        (("ciprofloxacin", "clarithromycin"), "hard", "interaction qt_prolonging / qt_prolonging", QT),
        (("lisinopril", "losartan"), "hard", "interaction ace_inhibitors / arbs",
         "MHRA Drug Safety Update June 2014 (dual renin-angiotensin system blockade)"),
        (("lithium", "ibuprofen"), "hard", "interaction lithium_salts / nsaids", LITHIUM),
        (("doxycycline", "isotretinoin"), "hard", "interaction tetracyclines / oral_retinoids",
         "BNF: interactions of isotretinoin"),
    ],
)  # fmt: skip
def test_each_class_rule_fires_for_a_pair(planned, severity, entry, source):
    assert shipped_interactions(*planned) == [(severity, *planned, entry, source)]


@pytest.mark.parametrize(
    "planned",
    [
        ("paracetamol", "ramipril"),  # no NSAID
        ("paracetamol", "warfarin"),  # a caution pair of drug-interaction-mcp: left out
        ("atorvastatin", "azithromycin"),  # azithromycin is no strong CYP3A4 inhibitor
        ("atorvastatin", "amoxicillin"),
        ("ciprofloxacin", "hydrocortisone"),  # a topical steroid, not a systemic one
        ("methotrexate", "cefalexin"),  # no penicillin
        ("sertraline", "paracetamol"),  # one serotonergic drug
        ("citalopram", "amoxicillin"),  # one QT-prolonging drug
        ("amlodipine", "bisoprolol"),  # drug-interaction-mcp's beta-blocker pair is with rate-limiting ones
        ("lisinopril", "amlodipine"),
    ],
)
def test_a_class_rule_does_not_fire_for_a_near_miss(planned):
    assert shipped_interactions(*planned) == []


def test_a_class_rule_fires_with_a_current_medication_written_as_a_brand():
    assert shipped_interactions("clarithromycin", medications=("Lipitor",)) == [
        ("hard", "clarithromycin", "atorvastatin", STRONG_CYP3A4, STATINS)
    ]


def test_a_class_rule_and_a_contraindication_match_a_drug_by_its_further_classes():
    tagged = KB.drugs[5].model_copy(update={"classes": ("strong_inhibitors",)})  # clarithromycin
    kb = KnowledgeBase(
        **{
            **dict(KB),
            "drug_classes": (*KB.drug_classes, DrugClass(id="strong_inhibitors", title="x", source="BNF")),
            "drugs": (*KB.drugs[:5], tagged, *KB.drugs[6:]),
            "interactions": (
                Interaction(a="statins", b="strong_inhibitors", scope="class", effect="Myopathy.",
                            source="BNF"),
            ),
            "contraindications": (
                Contraindication(drug_class="strong_inhibitors", aiu="pregnancy", level="relative",
                                 reason="r", source="BNF"),
            ),
        }
    )  # fmt: skip
    found = critique(plan(item("clarithromycin"), item("simvastatin")), facts(pregnant=True), kb)
    assert [(v.kind, v.severity, v.drug, v.entry) for v in found.violations] == [
        ("contraindication", "soft", "clarithromycin", "contraindication strong_inhibitors / pregnancy"),
        ("pregnancy", "soft", "simvastatin", "drug simvastatin: pregnancy"),
        ("interaction", "hard", "clarithromycin", "interaction statins / strong_inhibitors"),
    ]


def test_a_class_paired_with_itself_needs_two_different_drugs_of_it():
    kb = KnowledgeBase(
        **{**dict(KB), "interactions": (
            Interaction(a="nsaids", b="nsaids", scope="class", effect="Two NSAIDs.", source="BNF"),
        )}
    )  # fmt: skip
    assert critique(plan(item("ibuprofen"), item("ibuprofen")), facts(), kb).violations == ()
