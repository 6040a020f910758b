"""The score step of the consultation benchmark: an episode's messages -> its scores.

The templates and revealed AIUs were recorded by the simulator as it answered; the differential is the
agent's last diagnosis reply, parsed (metrics.py), the plan its last treatment reply (treatment.py), and
each follow-up's answer is the reply the episode kept: its last one, a re-ask's reply replacing the reply it
re-asked, as for the differential and the plan. That reply is what the FQR judge grades.
Every reply is read through reading.py: a parser that raises on one leaves it unparseable, the error kept in
SCORES' `parse_errors`, and the episode is scored (unread output scores the worst); only a failed call, the
agent's or the judge's, leaves an episode unscored. The only model called here is the FQR judge (judge.py),
through the ledger.
"""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tasks.benchmarks.consult.case import ConsultCase
from tasks.benchmarks.consult.composite import composite
from tasks.benchmarks.consult.contracts import PLAN_ITEM, PRIMARY_METRICS, SECONDARY_METRICS
from tasks.benchmarks.consult.critic import Critique, critique, patient_facts
from tasks.benchmarks.consult.episode import Episode, FollowUpTurn, HistoryTurn, TreatmentPlan
from tasks.benchmarks.consult.inquiry.policy import InquiryPolicy, load_policy
from tasks.benchmarks.consult.judge import Call, FollowUpJudge, Judgement, default_judge, judge_follow_ups
from tasks.benchmarks.consult.kb.loading import KnowledgeBase, load_kb
from tasks.benchmarks.consult.metrics import score_diagnosis, score_history
from tasks.benchmarks.consult.metrics_plan import (
    FollowUpStep,
    follow_up_steps,
    score_follow_up,
    score_treatment,
)
from tasks.benchmarks.consult.reading import ReadReply, read_differential, read_plan, reads_as_plan_attempt
from tasks.evals.config import TruncatedAnswers
from tasks.evals.job_state import job_result
from tasks.llm.call import complete, counting_outcomes
from tasks.llm.ledger import CallLedger, CallRecord
from tasks.llm.request import ChatRequest


class ScoreJob(BaseModel, frozen=True):
    """What scoring an episode needs besides its messages."""

    run_id: str
    model: str
    case: ConsultCase
    epoch: int
    kb_version: int = 1
    policy_version: str = "v1"
    gamma: float = 0.95
    diagnosis_match_threshold: float = 90.0
    judge: FollowUpJudge = Field(default_factory=default_judge)
    truncated: TruncatedAnswers = "judge"  # a follow-up answer cut at max_tokens (ConsultConfig.truncated)


def score_episode(job: ScoreJob, solved: list[dict[str, Any]], ledger_dir: Path) -> list[dict[str, Any]]:
    """The episode's messages → its SCORES row; the judge's calls go to the ledger."""
    ledger = CallLedger(ledger_dir)
    kb, policy = load_kb(job.kb_version), load_policy(job.policy_version)

    def judge(request: ChatRequest) -> CallRecord:
        return complete(request, job.judge.options, ledger)

    with counting_outcomes() as outcomes:
        row = episode_scores(job, solved, kb, policy, judge)
    return job_result([row], outcomes)


def episode_from_messages(
    case: ConsultCase, messages: Sequence[dict[str, Any]], kb: KnowledgeBase, threshold: float
) -> Episode:
    """The episode as the metrics read it: each question with what the simulator recorded, and the dx."""
    questions = {m["turn"]: m["text"] for m in messages if m["role"] == "agent" and m["stage"] == "history"}
    turns = tuple(
        HistoryTurn(
            turn=m["turn"],
            question=questions[m["turn"]],
            template=m["template"],
            revealed=tuple(m["revealed"] or ()),
            deflected=bool(m["deflected"]),
        )
        for m in messages
        if m["role"] == "patient" and m["stage"] == "history" and m["turn"] > 0
    )
    replies = sorted((m for m in messages if m["role"] == "agent"), key=lambda m: m["turn"])
    diagnosis = [m for m in replies if m["stage"] == "diagnosis"]
    differential = (
        read_differential(diagnosis[-1]["text"] or "", kb, threshold, diagnosis[-1].get("finish_reason"))
        if diagnosis
        else ReadReply(None)
    )
    treatment = [m for m in replies if m["stage"] == "treatment"]
    plan = (
        read_plan(treatment[-1]["text"] or "", kb, treatment[-1].get("finish_reason"))
        if treatment
        else ReadReply(None)
    )
    answers: dict[int, list[dict[str, Any]]] = {}
    for m in replies:
        if m["stage"] == "follow_up":
            answers.setdefault(m["follow_up"], []).append(m)
    follow_ups: dict[int, tuple[FollowUpTurn, ReadReply[TreatmentPlan]]] = {}
    in_force = plan.value
    for index, texts in sorted(answers.items()):
        follow_ups[index] = follow_up_turn(index, texts, kb, in_force)
        in_force = follow_ups[index][0].plan_after(in_force)
    errors = [("diagnosis", differential.error), ("treatment", plan.error)]
    errors += [(f"follow-up {index}", revised.error) for index, (_, revised) in follow_ups.items()]
    return Episode(
        case_id=case.case_id,
        turns=turns,
        differential=differential.value or (),
        diagnosis_parse="ok" if differential.value is not None else "unparseable",
        plan=plan.value or TreatmentPlan(),
        plan_parse="ok" if plan.value is not None else "unparseable",
        follow_ups=tuple(turn for turn, _ in follow_ups.values()),
        parse_errors=tuple(f"{stage}: {error}" for stage, error in errors if error is not None),
    )


def follow_up_turn(
    index: int, replies: Sequence[dict[str, Any]], kb: KnowledgeBase, in_force: TreatmentPlan | None
) -> tuple[FollowUpTurn, ReadReply[TreatmentPlan]]:
    """A follow-up from the agent's replies to it (message rows): the answer, then the replies to any
    re-asks of a revision that did not parse. The answer revises the plan when it tries to give one; the
    last reply is kept, as the answer and as the one that holds that plan. Also how that plan was read."""
    kept = replies[-1]["text"] or ""
    cut = replies[-1].get("finish_reason") == "length"
    if not reads_as_plan_attempt(replies[0]["text"] or "", kb, in_force):
        return FollowUpTurn(index=index, answer=kept, cut=cut), ReadReply(None)
    revised = read_plan(kept, kb, replies[-1].get("finish_reason"))
    turn = FollowUpTurn(
        index=index,
        answer=kept,
        cut=cut,
        revised_plan=revised.value,
        revision_parse="ok" if revised.value is not None else "unparseable",
    )
    return turn, revised


def episode_scores(
    job: ScoreJob, messages: Sequence[dict[str, Any]], kb: KnowledgeBase, policy: InquiryPolicy, judge: Call
) -> dict[str, Any]:
    """The SCORES row of one episode; a failed call, the agent's or the judge's, leaves it unscored (a
    re-run finishes it). `judge` makes the FQR judge's calls."""
    case = job.case
    row: dict[str, Any] = {
        "run_id": job.run_id,
        "model": job.model,
        "case_id": case.case_id,
        "epoch": job.epoch,
        "department": case.department,
        "difficulty": case.difficulty,
        "gold": [g.model_dump(include={"condition_id", "title", "core", "severity"}) for g in case.gold],
        "mni_target": list(case.mni_target),
    }
    failed = next((m for m in messages if m["status"] == "failed"), None)
    if failed is not None:
        return {**row, "status": "failed", "error": failed["error"], "error_class": failed["error_class"]}
    episode = episode_from_messages(case, messages, kb, job.diagnosis_match_threshold)
    records: list[CallRecord] = []
    judgements = judge_follow_ups(job, case, episode, lambda request: _kept(records, judge(request)))
    row |= judge_usage(records)
    if (failed_judgement := next((j for j in judgements if j.status == "failed"), None)) is not None:
        return {**row, **judge_failure(failed_judgement)}
    scores = {
        **score_history(case, episode, kb, policy, gamma=job.gamma)._asdict(),
        **score_diagnosis(case, episode)._asdict(),
        **score_treatment(case, episode, kb)._asdict(),
        **score_follow_up(case, episode, judgements, kb)._asdict(),
        "questions": len(episode.turns),
    }
    plan = episode.first_plan
    graded = {judgement.index: judgement for judgement in judgements}
    return {
        **row,
        "status": "completed",
        "diagnosis_parse": episode.diagnosis_parse,
        "differential": [item.model_dump(exclude={"rationale"}) for item in episode.differential],
        "plan_parse": episode.plan_parse,
        "plan": None if plan is None else plan_rows(plan),
        "plan_advice": None if plan is None else plan.advice,
        "violations": None if plan is None else violation_rows(critique(plan, patient_facts(case), kb)),
        "follow_ups": [
            follow_up_row(step, step.turn, graded.get(step.index))
            for step in follow_up_steps(case, episode, kb)
            if step.turn is not None
        ],
        "revisions_unparseable": episode.revisions_unparseable,
        "parse_errors": list(episode.parse_errors),
        "judge_model": job.judge.spec.model,
        "rubric_version": job.judge.rubric.version,
        **{
            name: scores[name]
            for name in ("fqr_judged", "fqr_unparseable", *PRIMARY_METRICS, *SECONDARY_METRICS)
        },
        "composite": composite(scores).score,
    }


def judge_usage(records: Sequence[CallRecord]) -> dict[str, Any]:
    """The judge's calls of an episode as SCORES counts them: calls, tokens, dollars."""
    return {
        "judge_calls": len(records),
        "judge_prompt_tokens": sum(record.prompt_tokens for record in records),
        "judge_completion_tokens": sum(record.completion_tokens for record in records),
        "judge_cost_usd": sum(record.cost_usd for record in records),
    }


def _kept(records: list[CallRecord], record: CallRecord) -> CallRecord:
    records.append(record)
    return record


_PLAN_FIELDS = frozenset(PLAN_ITEM.names)


def plan_rows(plan: TreatmentPlan) -> list[dict[str, Any]]:
    """A plan's items as SCORES stores them: the contract's fields (PLAN_ITEM), not what the parser read
    besides (strength, as needed, unreadable text)."""
    return [item.model_dump(include=_PLAN_FIELDS) for item in plan.items]


def violation_rows(found: Critique) -> list[dict[str, Any]]:
    return [violation.model_dump() for violation in found.violations]


def follow_up_row(step: FollowUpStep, turn: FollowUpTurn, judgement: Judgement | None) -> dict[str, Any]:
    """An answered follow-up as SCORES stores it: what was said, the revision, the critic after, the grade;
    the plan in force and the critic's findings are null when no plan in force could be read."""
    return {
        "index": step.index,
        **step.follow_up.model_dump(include={"kind", "text", "constraint", "core"}),
        "answer": turn.answer,
        "revision_parse": turn.revision_parse,
        "revised_plan": None if turn.revised_plan is None else plan_rows(turn.revised_plan),
        "plan_drugs": None if step.plan is None else list(step.plan.generics),
        "violations_after": None if step.critique is None else violation_rows(step.critique),
        "correct": None if judgement is None else judgement.correct,
        "judge_status": None if judgement is None else judgement.status,
        "judge_reason": None if judgement is None else judgement.reason,
    }


def judge_failure(judgement: Judgement) -> dict[str, Any]:
    """The columns of a SCORES row left unscored by a failed judge call."""
    return {"status": "failed", "error": judgement.error, "error_class": judgement.error_class}
