"""The SCORES row of a whole episode: the scripted agent of the solver tests prescribes amoxicillin, the
patient then remembers a penicillin allergy (the first plan is now unsafe) and the agent revises to
doxycycline; a question follows. A stub judge grades the first answer and gives no verdict on the second."""

from datetime import UTC, datetime

import pytest

from tasks.benchmarks.consult.case import FollowUp
from tasks.benchmarks.consult.contracts import PLAN_ITEM, SCORES
from tasks.benchmarks.consult.episode import PlanItem, TreatmentPlan
from tasks.benchmarks.consult.inquiry.policy import load_policy
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.metrics_plan import score_follow_up
from tasks.benchmarks.consult.scorer import ScoreJob, episode_scores, follow_up_turn, plan_rows
from tasks.benchmarks.consult.solver import run_episode
from tasks.llm.ledger import CallRecord
from tests.tasks.benchmarks.consult.critic_fixtures import KB as CRITIC_KB
from tests.tasks.benchmarks.consult.test_metrics_plan import CLARITHROMYCIN
from tests.tasks.benchmarks.consult.test_metrics_plan import case as plan_case
from tests.tasks.benchmarks.consult.test_metrics_plan import episode as plan_episode
from tests.tasks.benchmarks.consult.test_solver import (
    ALLERGY,
    ANSWER,
    BROKEN_PLAN,
    DOXYCYCLINE,
    FOLLOWED,
    QUESTION,
    job,
    scripted,
)

SCORE_JOB = ScoreJob(run_id="r1", model="doc", case=FOLLOWED, epoch=0)


def drug(name, dose, per_day):
    return {
        "drug": name,
        "generic": name,
        "dose": dose,
        "unit": "mg",
        "frequency_per_day": per_day,
        "days": 5.0,
        "route": "oral",
    }


def stub_judge(request, fail=False):
    now = datetime.now(UTC)
    allergy = ALLERGY in request.messages[1]["content"]
    text = '{"correct": true, "reason": "switches to a non-penicillin"}' if allergy else "Hmm."
    status = "failed" if fail else "ok"
    return CallRecord(
        key="j", model=request.model, status=status, text=text, error="503" if fail else None,
        error_kind="server_error" if fail else None, started_at=now, finished_at=now,
    )  # fmt: skip


def scores_row(judge=stub_judge):
    call, _ = scripted()
    return episode_scores(SCORE_JOB, run_episode(job(), call), load_kb(), load_policy(), judge)


def test_the_row_scores_all_four_stages_and_keeps_the_plan_and_follow_ups():
    row = scores_row()
    assert set(row) == set(SCORES.schema.names) - {"error", "error_class"}
    treatment_and_follow_up = {
        name: row[name]
        for name in (
            *("plan_parse", "plan", "plan_advice", "violations", "follow_ups"),
            *("judge_model", "rubric_version", "fqr_judged", "fqr_unparseable"),
            *("psc", "ddiv", "pcr", "fqr", "dcsr"),
            *("plan_completeness", "regimen_coverage", "dose_error_rate", "needless_churn", "composite"),
        )
    }
    assert treatment_and_follow_up == {
        "plan_parse": "ok",
        "plan": [drug("amoxicillin", 500.0, 3.0)],
        "plan_advice": "Rest and fluids.",
        "violations": [],  # the allergy comes later
        "follow_ups": [
            {
                "index": 0,
                "kind": "constraint",
                "text": ALLERGY,
                "constraint": "allergy:penicillins",
                "core": True,
                "answer": DOXYCYCLINE,  # the re-ask's reply, kept: the first did not parse
                "revision_parse": "ok",  # the re-ask's plan
                "revised_plan": [drug("doxycycline", 100.0, 1.0)],
                "plan_drugs": ["doxycycline"],
                "violations_after": [],
                "correct": True,
                "judge_status": "ok",
                "judge_reason": "switches to a non-penicillin",
            },
            {
                "index": 1,
                "kind": "question",
                "text": QUESTION,
                "constraint": None,
                "core": False,
                "answer": ANSWER,
                "revision_parse": "ok",
                "revised_plan": None,
                "plan_drugs": ["doxycycline"],
                "violations_after": [],
                "correct": None,
                "judge_status": "unparseable",
                "judge_reason": None,
            },
        ],
        "judge_model": "threadmed/consult-judge",
        "rubric_version": "judge_fqr_v1",
        "fqr_judged": 1,
        "fqr_unparseable": 1,
        "psc": 1.0,  # amoxicillin is safe for this patient before the allergy
        "ddiv": None,  # one drug, no current medication: no pair
        "pcr": 0.0,
        "fqr": 1.0,  # the only graded answer is correct; the ungraded one is left out
        # doxycycline keeps the allergy constraint but is no analgesic: bronchitis's regimen is unmet
        "dcsr": 0.0,
        "plan_completeness": 1.0,
        "regimen_coverage": 0.0,
        "dose_error_rate": 0.0,
        "needless_churn": 0.0,  # the question needed no change and got none
        # history (MNI-Comp 1, 1 - CPRw 1, IGE 1, Hit@1 0; no POVR) .75, diagnosis 1,
        # treatment (1 + 1) / 2, follow-up (1 + 0) / 2
        "composite": (0.75 + 1 + 1 + 0.5) / 4,
    }
    assert (row["status"], row["questions"], row["core_dx_f1"]) == ("completed", 1, 1.0)


def test_a_failed_judge_call_leaves_the_row_unscored():
    row = scores_row(lambda request: stub_judge(request, fail=True))
    assert (row["status"], row["error"], row.get("psc")) == ("failed", "503", None)


def test_the_judge_grades_the_revision_the_re_ask_kept_not_the_reply_that_did_not_parse():
    graded = []

    def judge(request):
        graded.append(request.messages[1]["content"])  # the rubric filled for one follow-up
        return stub_judge(request)

    scores_row(judge)
    # follow-up 0 (the revision), then follow-up 1 twice (the stub's "Hmm." is re-asked)
    assert [(DOXYCYCLINE in text, BROKEN_PLAN in text) for text in graded] == [
        (True, False), (False, False), (False, False)
    ]  # fmt: skip


def priced_judge(request, fail=False):
    record = stub_judge(request, fail)
    return record.model_copy(
        update={"prompt_tokens": 40, "completion_tokens": 5, "input_cost_usd": 0.01, "output_cost_usd": 0.002}
    )


def test_the_row_counts_every_judge_call_re_asks_and_failures_included():
    # The allergy follow-up is graded at once; the question's "Hmm." is re-asked once, then left ungraded.
    row = scores_row(priced_judge)
    assert {name: row[name] for name in row if name.startswith("judge_") and name != "judge_model"} == {
        "judge_calls": 3,
        "judge_prompt_tokens": 120,
        "judge_completion_tokens": 15,
        "judge_cost_usd": pytest.approx(0.036),
    }
    failed = scores_row(lambda request: priced_judge(request, fail=True))
    assert (failed["status"], failed["judge_calls"], failed["judge_cost_usd"]) == (
        "failed", 2, pytest.approx(0.024)
    )  # fmt: skip


def test_a_follow_up_answer_cut_at_max_tokens_is_left_ungraded_when_the_config_marks_it():
    call, _ = scripted()
    messages = [
        {**m, "finish_reason": "length"}
        if (m["role"], m["stage"], m.get("follow_up")) == ("agent", "follow_up", 1)
        else m
        for m in run_episode(job(), call)
    ]
    marking = SCORE_JOB.model_copy(update={"truncated": "mark"})
    row = episode_scores(marking, messages, load_kb(), load_policy(), stub_judge)
    assert [(f["index"], f["answer"], f["judge_status"]) for f in row["follow_ups"]] == [
        (0, DOXYCYCLINE, "ok"),
        (1, ANSWER, "truncated"),
    ]
    # one judge call (follow-up 0); the cut answer is neither graded nor counted as an unparseable grade
    assert (row["judge_calls"], row["fqr_judged"], row["fqr_unparseable"], row["fqr"]) == (1, 1, 0, 1.0)
    judged = episode_scores(SCORE_JOB, messages, load_kb(), load_policy(), stub_judge)
    assert [f["judge_status"] for f in judged["follow_ups"]] == ["ok", "unparseable"]  # judged as given


def test_plan_rows_keep_the_contract_fields_and_leave_the_parsers_extras_out():
    given = TreatmentPlan(
        items=(
            PlanItem(drug="paracetamol 500 mg tablets", generic="paracetamol", dose=2, unit="tablets",
                     frequency_per_day=4, strength=500, strength_unit="mg", as_needed=True,
                     unreadable=(("days", "a while"),)),
        )
    )  # fmt: skip
    assert plan_rows(given) == [
        {"drug": "paracetamol 500 mg tablets", "generic": "paracetamol", "dose": 2.0, "unit": "tablets",
         "frequency_per_day": 4.0, "days": None, "route": None},
    ]  # fmt: skip
    assert list(plan_rows(given)[0]) == PLAN_ITEM.names


def test_plan_rows_keep_the_contracts_fields_and_leave_the_ingredients_out():
    # Runs scored before name resolution stay readable: the PLAN_ITEM contract has no ingredients column.
    plan = TreatmentPlan(items=(PlanItem(drug="co-codamol", ingredients=("codeine", "paracetamol"), dose=2),))
    assert plan_rows(plan) == [
        {"drug": "co-codamol", "generic": None, "dose": 2.0, "unit": None, "frequency_per_day": None,
         "days": None, "route": None},
    ]  # fmt: skip


PENICILLIN_ALLERGY = (
    FollowUp(
        kind="constraint", text="I'm allergic to penicillin.", constraint="allergy:penicillins", core=True
    ),
)


@pytest.mark.parametrize(
    "answer",
    [
        "Stop the clarithromycin and take amoxicillin 500 mg three times a day for 5 days instead.",
        '{"plan": "amoxicillin 500 mg oral three times daily for 5 days"}',
        '{"medications": ["amoxicillin 500 mg tds"], "advice": "rest"}',
        "| drug | dose |\n|---|---|\n| amoxicillin | 500 mg tds |",
    ],
)
def test_a_revision_the_plan_reader_cannot_read_never_counts_as_keeping_the_plan(answer):
    # It switches to a penicillin: read as no attempt, the old plan was credited with DCSR 1 and no churn.
    in_force = TreatmentPlan(items=(CLARITHROMYCIN,))
    turn, _ = follow_up_turn(0, [{"text": answer, "finish_reason": "stop"}], CRITIC_KB, in_force)
    episode = plan_episode(CLARITHROMYCIN, follow_ups=(turn,))
    scored = score_follow_up(plan_case(follow_ups=PENICILLIN_ALLERGY), episode, (), CRITIC_KB)
    assert (turn.revision_parse, scored.dcsr, scored.needless_churn) == ("unparseable", 0.0, 1.0)
