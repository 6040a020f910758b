"""The FQR judge: is the agent's answer to each scripted follow-up intent-matched and correct?

Judging is part of the score step (generation and judging kept apart): one judge call per answered
follow-up, through the call layer and the run's ledger, keyed by case, epoch and follow-up index, so a
re-run replays every verdict already given. The judge sees the case's core diagnoses and their regimen
advice, the plan in force when the patient spoke (the first plan, or the last revision before; "no plan
could be read" when that plan did not parse, `FollowUpTurn.plan_after`), the follow-up and the answer,
through a versioned rubric (prompts/judge_fqr_v1.txt, its `reask` section asked when a reply holds no
valid verdict). Parsing is the shared tolerant one (tasks/evals/verdicts.py)
on the scale `{"correct": true | false}`; a reply with no valid verdict after `max_reasks` re-asks is
'unparseable': excluded from FQR and counted, never scored as wrong. A failed call is 'failed': the
episode's SCORES row fails, and a re-run finishes it. An answer cut at max_tokens is judged as given, or,
when the config says `truncated: mark`, not judged: 'truncated', excluded from FQR and counted.
A judge reply cut at the judge's own max_tokens holds no verdict, whatever it reads as (its reason, or a
second verdict, was cut off): it is re-asked as any other, and after the last re-ask it is 'judge_cut',
excluded from FQR and counted apart (`n_judge_cut`).
"""

import json
from collections.abc import Callable, Iterable
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from tasks.benchmarks.consult.case import ConsultCase, FollowUp
from tasks.benchmarks.consult.config import JUDGE_RUBRIC, OFFLINE_JUDGE
from tasks.benchmarks.consult.episode import Episode, TreatmentPlan
from tasks.benchmarks.consult.kb.loading import KnowledgeBase, load_kb
from tasks.evals.config import JudgeSpec, TruncatedAnswers
from tasks.evals.verdicts import JUDGE_CUT, Verdict, boolean_scale, read_verdict
from tasks.llm.ledger import CallRecord
from tasks.llm.prompts import PromptTemplate, load_prompt
from tasks.llm.request import CallOptions, ChatRequest

Call = Callable[[ChatRequest], CallRecord]
# The rubric's field and its words for the grades (judge_fqr_v1: "It is correct (true)", "not correct").
FQR_SCALE = boolean_scale("correct", {"correct": True, "incorrect": False})


class FollowUpJudge(BaseModel, frozen=True):
    """The judge of a score job: its model, how it is called, its rubric (with the `reask` section)."""

    spec: JudgeSpec
    options: CallOptions
    rubric: PromptTemplate

    def request(self, job: "JudgedJob", index: int, messages: list[dict[str, str]]) -> ChatRequest:
        """The request's epoch is the episode's (its answers differ by epoch), so the judge's own repeat
        index (`spec.epoch`) goes in the scope, from 1 on: epoch 0 keeps every key recorded before it."""
        scope = f"consult/judge/{job.case.case_id}/{index}"
        if self.spec.epoch:
            scope += f"/judge-epoch-{self.spec.epoch}"
        return self.spec.request(messages, self.rubric.version, scope=scope, epoch=job.epoch)


class JudgedJob(Protocol):
    """What judging an episode reads of its score job (scorer.ScoreJob), named here so that the judge does
    not import the scorer that imports it."""

    @property
    def case(self) -> ConsultCase: ...
    @property
    def epoch(self) -> int: ...
    @property
    def kb_version(self) -> int: ...
    @property
    def judge(self) -> FollowUpJudge: ...
    @property
    def truncated(self) -> TruncatedAnswers: ...


def default_judge() -> FollowUpJudge:
    """The offline judge with the default rubric: a score job's judge unless its plan names another."""
    return FollowUpJudge(
        spec=OFFLINE_JUDGE,
        options=CallOptions(provider=OFFLINE_JUDGE.provider_name),
        rubric=load_prompt(JUDGE_RUBRIC),
    )


class Judgement(BaseModel, frozen=True, extra="forbid"):
    """The verdict on one follow-up answer (`index` in the case's script)."""

    index: int
    # truncated: the answer cut at max_tokens, not asked; judge_cut: the judge's last reply cut at its own
    status: Literal["ok", "unparseable", "judge_cut", "failed", "truncated"]
    correct: bool | None = None
    reason: str | None = None
    call_key: str | None = None
    error: str | None = None  # failed: the provider's error, as the ledger recorded it
    error_class: str | None = None


def render_judge_messages(
    rubric: PromptTemplate,
    case: ConsultCase,
    kb: KnowledgeBase,
    plan: TreatmentPlan | None,
    follow_up: FollowUp,
    answer: str,
) -> list[dict[str, str]]:
    """The rubric filled for one follow-up; `plan` None: the agent gave no plan that could be read."""
    conditions = [kb.condition(gold.condition_id) for gold in case.core_gold]
    values = {
        "diagnoses": "\n".join(gold.title for gold in case.core_gold),
        "advice": "\n".join(f"{c.title}: {c.regimen.advice}" for c in conditions if c is not None),
        "plan": plan_text(plan),
        "follow_up": follow_up.text,
        "answer": answer,
    }
    return [
        {"role": "system", "content": rubric.render("system", **values)},
        {"role": "user", "content": rubric.render("user", **values)},
    ]


def plan_text(plan: TreatmentPlan | None) -> str:
    """A plan as the judge reads it: its items as JSON, then its advice."""
    if plan is None:
        return "(no plan could be read)"
    # What the agent wrote: no KB name, no parser bookkeeping; a strength or "as needed" only when read.
    items = [
        item.model_dump(exclude={"generic", "ingredients", "unreadable"}, exclude_defaults=True)
        for item in plan.items
    ]
    return "\n".join(part for part in (json.dumps(items), plan.advice) if part)


def judge_follow_ups(
    job: JudgedJob, case: ConsultCase, episode: Episode, call: Call
) -> tuple[Judgement, ...]:
    """One judgement per answered follow-up of `episode`, each judged with the plan in force before it
    (none that can be read after a revision that did not parse, as the metrics have it); an answer cut at
    max_tokens is judged as given, or left 'truncated' when the job says `truncated: mark`."""
    kb = load_kb(job.kb_version)
    plan = episode.first_plan
    judgements = []
    for turn in episode.follow_ups:
        if turn.cut and job.truncated == "mark":
            judgements.append(Judgement(index=turn.index, status="truncated"))
        else:
            messages = render_judge_messages(
                job.judge.rubric, case, kb, plan, case.follow_ups[turn.index], turn.answer
            )
            judgements.append(judge_answer(job, turn.index, messages, turn.answer, call))
        plan = turn.plan_after(plan)
    return tuple(judgements)


def judge_answer(
    job: JudgedJob, index: int, messages: list[dict[str, str]], answer: str, call: Call
) -> Judgement:
    """Ask the judge about `answer`, re-asking (its own reply shown) while the reply holds no valid verdict
    (a verdict quoted from the answer is none: `read_verdict`)."""
    judge = job.judge
    for _ in range(judge.spec.max_reasks + 1):
        record = call(judge.request(job, index, messages))
        if record.status != "ok":
            return Judgement(
                index=index, status="failed", call_key=record.key, error=record.error,
                error_class=record.error_kind,
            )  # fmt: skip
        verdict = read_verdict(record.text, FQR_SCALE, record.finish_reason, graded=answer)
        if isinstance(verdict, Verdict):
            return Judgement(
                index=index, status="ok", correct=verdict.grade, reason=verdict.reason, call_key=record.key
            )
        messages = [
            *messages,
            {"role": "assistant", "content": record.text or ""},
            {"role": "user", "content": judge.rubric.render("reask")},
        ]
    return Judgement(index=index, status=verdict.status, call_key=record.key)


def n_judge_cut(follow_ups: Iterable[dict[str, Any]] | None) -> int:
    """The follow-ups of a SCORES row whose grade is missing because the judge's last reply was cut at its
    max_tokens: the number the report and the run summary both show."""
    return sum(turn["judge_status"] == JUDGE_CUT for turn in follow_ups or ())
