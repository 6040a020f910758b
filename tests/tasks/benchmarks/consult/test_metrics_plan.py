"""The treatment and follow-up metrics on hand-made episodes over the critic tests' tiny KB (otitis expects
a penicillin or a macrolide; colic expects no drug)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.benchmarks.consult.case import CaseAiu, ConsultCase, FollowUp, GoldDiagnosis, PatientProfile
from tasks.benchmarks.consult.composite import stage_score
from tasks.benchmarks.consult.contracts import TREATMENT_METRICS
from tasks.benchmarks.consult.episode import Episode, FollowUpTurn, PlanItem, TreatmentPlan
from tasks.benchmarks.consult.judge import Judgement
from tasks.benchmarks.consult.metrics_plan import (
    FollowUpScores,
    TreatmentScores,
    follow_up_steps,
    score_follow_up,
    score_treatment,
)
from tests.tasks.benchmarks.consult.critic_fixtures import KB


def case(condition="otitis", follow_ups=(), **profile):
    return ConsultCase(
        case_id="c1",
        department="ent",
        opening="My ear hurts.",
        profile=PatientProfile(age=30, sex="male", **profile),
        gold=(GoldDiagnosis(condition_id=condition, icd11="1A00", title=condition, severity=1),),
        aius=(CaseAiu(aiu_id="cough", template="respiratory"),),
        mni_target=("cough",),
        follow_ups=follow_ups,
    )


def drug(name, dose=None, unit="mg", per_day=None, days=5.0, route="oral", generic=...):
    return PlanItem(
        drug=name,
        generic=name if generic is ... else generic,
        dose=dose,
        unit=unit,
        frequency_per_day=per_day,
        days=days,
        route=route,
    )


AMOXICILLIN = drug("amoxicillin", 500, per_day=3)
CLARITHROMYCIN = drug("clarithromycin", 500, per_day=2)
PARACETAMOL = drug("paracetamol", 1000, per_day=4)


def episode(*items, parse="ok", follow_ups=()):
    return Episode(
        case_id="c1",
        turns=(),
        plan=TreatmentPlan(items=items),
        plan_parse=parse,
        follow_ups=follow_ups,
    )


def test_a_safe_plan():
    given = episode(AMOXICILLIN, PARACETAMOL.model_copy(update={"days": None}))
    assert score_treatment(case(), given, KB) == TreatmentScores(
        psc=1.0,
        ddiv=0.0,  # 0 of 1 pair (amoxicillin, paracetamol)
        pcr=0.0,  # 0 of 2 drugs
        plan_completeness=0.5,  # paracetamol has no days
        regimen_coverage=1.0,  # otitis: a penicillin
        dose_error_rate=0.0,
    )


def test_an_unsafe_plan_allergy_interactions_and_overdose():
    # allergic to penicillins, takes warfarin; ibuprofen 4 x 800 mg = 3200 mg a day > 2400 mg
    given = episode(AMOXICILLIN, CLARITHROMYCIN, drug("ibuprofen", 800, per_day=4))
    assert score_treatment(case(allergies=("penicillins",), medications=("warfarin",)), given, KB) == (
        TreatmentScores(
            psc=0.0,
            # 3 pairs in the plan + 3 with warfarin; severe: clarithromycin / warfarin, nsaids / warfarin
            ddiv=2 / 6,
            pcr=1 / 3,  # amoxicillin: the allergy
            plan_completeness=1.0,
            regimen_coverage=1.0,
            dose_error_rate=1 / 3,  # ibuprofen
        )
    )


def test_a_once_weekly_drug_given_daily_is_a_dose_error_and_an_unreadable_dose_fails_psc_only():
    # methotrexate 7.5 mg daily: 52.5 mg a week, and a once-weekly drug given every day
    weekly_daily = episode(AMOXICILLIN, drug("methotrexate", 7.5, per_day=1))
    assert score_treatment(case(), weekly_daily, KB) == TreatmentScores(
        psc=0.0, ddiv=0.0, pcr=0.0, plan_completeness=1.0, regimen_coverage=1.0, dose_error_rate=1 / 2
    )
    unreadable = episode(AMOXICILLIN, drug("paracetamol", 1000, unit="furlongs", per_day=4))
    assert score_treatment(case(), unreadable, KB) == TreatmentScores(
        psc=0.0, ddiv=0.0, pcr=0.0, plan_completeness=1.0, regimen_coverage=1.0, dose_error_rate=0.0
    )


@pytest.mark.parametrize("condition", ["otitis", "colic"])
@pytest.mark.parametrize("written", [(), (AMOXICILLIN,)])
def test_a_plan_that_did_not_parse_scores_the_worst_of_every_metric_whatever_it_held(condition, written):
    # Never as an empty plan: for colic (no drug expected) an empty plan is safe, an unread one never is.
    given = episode(*written, parse="unparseable")
    assert score_treatment(case(condition), given, KB) == TreatmentScores(
        psc=0.0, ddiv=1.0, pcr=1.0, plan_completeness=0.0, regimen_coverage=0.0, dose_error_rate=1.0
    )
    assert stage_score(score_treatment(case(condition), given, KB)._asdict(), TREATMENT_METRICS) == 0.0


def test_a_drug_the_critic_cannot_read_scores_the_worst_ddiv_and_pcr_never_above_a_read_interaction():
    warfarin = drug("warfarin", 5, per_day=1)
    read = score_treatment(case(), episode(warfarin, CLARITHROMYCIN), KB)
    unread = score_treatment(case(), episode(warfarin, drug("zzzomycin", 500, per_day=2, generic=None)), KB)
    # warfarin and zzzomycin: no pair checked, and zzzomycin may be any drug, conflicting or not
    assert unread == TreatmentScores(
        psc=0.0, ddiv=1.0, pcr=1.0, plan_completeness=1.0, regimen_coverage=0.0, dose_error_rate=0.0
    )
    assert stage_score(unread._asdict(), TREATMENT_METRICS) <= stage_score(read._asdict(), TREATMENT_METRICS)


# With the drug of an item not wholly read, every pair and every conflict of the plan is unchecked.
UNREAD_ITEMS = [
    # a real drug the KB lacks: dicloxacillin is a penicillin (BNF: penicillins; name library)
    drug("dicloxacillin", 500, per_day=4, generic=None),
    # a key no field is read from: the warfarin in it may be given (BNF: interactions of warfarin)
    PARACETAMOL.model_copy(update={"unreadable": (("with", "'with' is not a plan item field"),)}),
]


@pytest.mark.parametrize("unread", UNREAD_ITEMS, ids=["drug the KB lacks", "key not read"])
def test_an_item_not_wholly_read_scores_the_worst_ddiv_and_pcr(unread):
    # for a patient allergic to penicillins, beside clarithromycin (which interacts with warfarin)
    scores = score_treatment(case(allergies=("penicillins",)), episode(CLARITHROMYCIN, unread), KB)
    assert (scores.psc, scores.ddiv, scores.pcr) == (0.0, 1.0, 1.0)


def test_an_allergy_to_a_drug_the_kb_lacks_scores_the_worst_pcr_and_leaves_ddiv():
    # cefatrizine, a cephalosporin the KB lacks: whether the planned drugs cross-react is not known
    scores = score_treatment(case(allergies=("cefatrizine",)), episode(AMOXICILLIN, PARACETAMOL), KB)
    assert (scores.psc, scores.ddiv, scores.pcr) == (0.0, 0.0, 1.0)


@given(
    st.lists(st.sampled_from([AMOXICILLIN, CLARITHROMYCIN, PARACETAMOL, drug("warfarin", 5, per_day=1)])),
    st.sampled_from(UNREAD_ITEMS),
    st.integers(min_value=0),
    st.sampled_from([(), ("penicillins",), ("warfarin",)]),
)
def test_an_item_not_wholly_read_always_scores_the_worst_ddiv_and_pcr(read, unread, position, names):
    items = [*read[: position % (len(read) + 1)], unread, *read[position % (len(read) + 1) :]]
    scores = score_treatment(case(allergies=names, medications=names), episode(*items), KB)
    assert (scores.ddiv, scores.pcr) == (1.0, 1.0)


@pytest.mark.parametrize(
    ("condition", "given", "psc", "ddiv_and_pcr", "regimen_coverage"),
    [
        # otitis untreated is not safe
        ("otitis", episode(), 0.0, None, 0.0),
        # a drug the critic cannot check vouches for nothing, nor for the drugs it may hold
        ("otitis", episode(drug("zzzcillin", 1, per_day=1, generic=None)), 0.0, 1.0, 0.0),
        # colic expects no drug: advice alone is safe; no regimen to cover
        ("colic", episode(), 1.0, None, None),
    ],
)
def test_a_plan_without_known_drugs(condition, given, psc, ddiv_and_pcr, regimen_coverage):
    completeness = 1.0 if given.plan.items else None  # zzzcillin's fields are all there
    assert score_treatment(case(condition), given, KB) == TreatmentScores(
        psc=psc,
        ddiv=ddiv_and_pcr,
        pcr=ddiv_and_pcr,
        plan_completeness=completeness,
        regimen_coverage=regimen_coverage,
        dose_error_rate=None,
    )


SCRIPT = (
    FollowUp(
        kind="constraint", text="I'm allergic to penicillin.", constraint="allergy:penicillins", core=True
    ),
    FollowUp(kind="question", text="How do I take it?"),
    FollowUp(kind="constraint", text="I take doxycycline.", constraint="takes:doxycycline"),
)


def turn(index, revised=None, parse="ok"):
    plan = None if revised is None else TreatmentPlan(items=revised)
    return FollowUpTurn(index=index, answer="...", revised_plan=plan, revision_parse=parse)


def judged(index, correct):
    return Judgement(index=index, status="ok", correct=correct, reason="r")


def test_an_agent_that_adapts():
    given = episode(AMOXICILLIN, follow_ups=(turn(0, (CLARITHROMYCIN,)), turn(1), turn(2)))
    judgements = (judged(0, True), judged(1, False), Judgement(index=2, status="unparseable"))
    assert score_follow_up(case(follow_ups=SCRIPT), given, judgements, KB) == FollowUpScores(
        fqr=2 / 3,  # core 0 correct (2) over 0 and 1 graded (2 + 1); 2 unparseable: left out
        # clarithromycin: no penicillin, no severe DDI with doxycycline, passes the critic, a macrolide
        dcsr=1.0,
        needless_churn=0.0,  # 1 (a question) and 2 (already satisfied) needed no change; none made
        fqr_judged=2,
        fqr_unparseable=1,
    )


def test_an_agent_that_never_revises():
    given = episode(AMOXICILLIN, follow_ups=(turn(0), turn(1), turn(2)))
    judgements = (judged(0, True), judged(1, True), judged(2, True))
    assert score_follow_up(case(follow_ups=SCRIPT), given, judgements, KB) == FollowUpScores(
        fqr=1.0,  # (2 + 1 + 1) / 4
        dcsr=0.0,  # amoxicillin breaks the allergy constraint
        # 2 is satisfied (no DDI) but the plan already fails the critic (the allergy): it needed a change;
        # only the question needed none
        needless_churn=0.0,
        fqr_judged=3,
        fqr_unparseable=0,
    )


def test_an_agent_that_churns():
    given = episode(
        AMOXICILLIN,
        follow_ups=(
            turn(0, (CLARITHROMYCIN,)),
            turn(1, (CLARITHROMYCIN, PARACETAMOL)),  # a question, answered with a new drug
            turn(2, (CLARITHROMYCIN,)),  # doxycycline does not interact: no change was needed
        ),
    )
    scores = score_follow_up(case(follow_ups=SCRIPT), given, (), KB)
    assert scores == FollowUpScores(fqr=None, dcsr=1.0, needless_churn=1.0, fqr_judged=0, fqr_unparseable=0)


def test_a_last_revision_that_did_not_parse_leaves_no_plan_to_satisfy_the_constraints():
    given = episode(
        AMOXICILLIN,
        follow_ups=(
            turn(0, (CLARITHROMYCIN,)),  # satisfies every constraint
            turn(1),
            turn(2, parse="unparseable"),  # no change was needed: an unread revision may have made any
        ),
    )
    steps = follow_up_steps(case(follow_ups=SCRIPT), given, KB)
    assert [(step.plan and step.plan.generics, step.critique is None) for step in steps] == [
        (("clarithromycin",), False),
        (("clarithromycin",), False),
        (None, True),
    ]
    scores = score_follow_up(case(follow_ups=SCRIPT), given, (), KB)
    assert scores == FollowUpScores(fqr=None, dcsr=0.0, needless_churn=0.5, fqr_judged=0, fqr_unparseable=0)


def test_a_revision_that_parses_after_one_that_did_not_is_in_force_again():
    given = episode(
        AMOXICILLIN, follow_ups=(turn(0, parse="unparseable"), turn(1), turn(2, (CLARITHROMYCIN,)))
    )
    steps = follow_up_steps(case(follow_ups=SCRIPT), given, KB)
    assert [step.plan and step.plan.generics for step in steps] == [None, None, ("clarithromycin",)]
    # the question (1) needed a change: no plan in force could be read; 2 changed it from unread
    assert [step.change_needed for step in steps] == [True, True, True]
    assert score_follow_up(case(follow_ups=SCRIPT), given, (), KB).dcsr == 1.0


@pytest.mark.parametrize("condition", ["otitis", "colic"])
def test_a_first_plan_that_did_not_parse_and_was_never_revised_satisfies_no_constraint(condition):
    # Before: scored as an empty plan, so colic (no drug expected) had DCSR 1 from nothing read.
    given = episode(parse="unparseable", follow_ups=(turn(0), turn(1), turn(2)))
    scores = score_follow_up(case(condition, follow_ups=SCRIPT), given, (), KB)
    assert scores == FollowUpScores(fqr=None, dcsr=0.0, needless_churn=None, fqr_judged=0, fqr_unparseable=0)


@pytest.mark.parametrize(("condition", "dcsr"), [("otitis", 0.0), ("colic", 1.0)])
def test_an_empty_plan_keeps_to_the_constraints_only_where_no_drug_is_expected(condition, dcsr):
    # colic: advice alone is the treatment, and no constraint bears on a drug; otitis is left untreated
    given = episode(follow_ups=(turn(0), turn(1), turn(2)))
    scores = score_follow_up(case(condition, follow_ups=SCRIPT), given, (), KB)
    assert scores.dcsr == dcsr


def test_a_final_plan_with_an_item_the_critic_cannot_check_fails_dcsr_as_it_fails_psc():
    unknown = drug("zzzcillin", 1, per_day=1, generic=None)
    given = episode(AMOXICILLIN, follow_ups=(turn(0, (CLARITHROMYCIN, unknown)), turn(1), turn(2)))
    [*_, final] = follow_up_steps(case(follow_ups=SCRIPT), given, KB)
    assert (final.critique.hard, final.critique.unverified) == (False, True)
    assert score_follow_up(case(follow_ups=SCRIPT), given, (), KB).dcsr == 0.0


def test_a_dose_change_alone_is_not_churn():
    given = episode(AMOXICILLIN, follow_ups=(turn(0, (AMOXICILLIN.model_copy(update={"dose": 250.0}),)),))
    script = (FollowUp(kind="question", text="Is it safe?"),)
    scores = score_follow_up(case(follow_ups=script), given, (judged(0, False),), KB)
    # no constraint: DCSR undefined
    assert scores == FollowUpScores(fqr=0.0, dcsr=None, needless_churn=0.0, fqr_judged=1, fqr_unparseable=0)


def test_adding_a_drug_the_kb_does_not_name_is_churn_and_its_spelling_alone_is_not():
    unknown = PlanItem(drug="Zyqlorex", dose=10.0, unit="mg", frequency_per_day=1.0)
    script = (FollowUp(kind="question", text="Is it safe?"),)
    added = episode(AMOXICILLIN, follow_ups=(turn(0, (AMOXICILLIN, unknown)),))
    assert score_follow_up(case(follow_ups=script), added, (), KB).needless_churn == 1.0
    kept = episode(AMOXICILLIN, follow_ups=(turn(0, (AMOXICILLIN, unknown)), turn(1, (AMOXICILLIN,
                   unknown.model_copy(update={"drug": " zyqlorex "})))))  # fmt: skip
    steps = follow_up_steps(case(follow_ups=(*script, *script)), kept, KB)
    assert [step.plan.generics for step in steps] == [("amoxicillin",), ("amoxicillin",)]
    assert score_follow_up(case(follow_ups=(*script, *script)), kept, (), KB).needless_churn == 0.5


def test_a_constraint_that_makes_the_first_plan_unsafe_is_traced():
    given = episode(CLARITHROMYCIN, follow_ups=(turn(0),))
    script = (FollowUp(kind="constraint", text="I take warfarin.", constraint="takes:warfarin"),)
    [step] = follow_up_steps(case(follow_ups=script), given, KB)
    assert (step.change_needed, step.plan.generics, step.facts.profile.medications) == (
        True,
        ("clarithromycin",),
        ("warfarin",),
    )
    assert [(v.kind, v.drug, v.other) for v in step.critique.violations] == [
        ("interaction", "clarithromycin", "warfarin")
    ]
    assert score_follow_up(case(follow_ups=script), given, (), KB).dcsr == 0.0


PLAN_ITEMS = st.lists(
    st.sampled_from([AMOXICILLIN, CLARITHROMYCIN, PARACETAMOL, drug("ibuprofen", 800, per_day=4)]), max_size=3
)


@given(st.sampled_from(["otitis", "colic"]), PLAN_ITEMS, PLAN_ITEMS)
def test_what_was_not_read_never_scores_above_what_was(condition, first, revised):
    # Whatever the agent wrote, its stage scores cannot rise because a plan or revision could not be read.
    scripted = case(condition, follow_ups=SCRIPT)
    treatment = {
        parse: stage_score(
            score_treatment(scripted, episode(*first, parse=parse), KB)._asdict(), TREATMENT_METRICS
        )
        for parse in ("ok", "unparseable")
    }
    assert treatment["unparseable"] == 0.0 <= treatment["ok"]
    dcsr = {
        parse: score_follow_up(
            scripted,
            episode(
                *first,
                follow_ups=(turn(0), turn(1), turn(2, tuple(revised) if parse == "ok" else None, parse)),
            ),
            (),
            KB,
        ).dcsr
        for parse in ("ok", "unparseable")
    }
    assert dcsr["unparseable"] == 0.0 <= dcsr["ok"]
