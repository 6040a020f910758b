"""The solve step of the SNOMED benchmark: one Prefect task per (clinician, case, epoch) runs an interview.

Every call of both roles goes through the shared call layer and ledger, keyed with its role and case
(`scope`) and its epoch, so a re-run resumes exactly and repeated epochs at temperature > 0 are real
samples. The rows are the interview's messages (CONVERSATIONS); a failed call is a row too, so the score
step and the summary can say what failed.
"""

from pathlib import Path
from typing import Any

from pydantic import BaseModel

# Imported for its side effect: the offline clinicians and patient are registered wherever this module's
# jobs run (a Dask worker imports this module when it unpickles them).
from tasks.benchmarks.snomed import offline_models  # noqa: F401
from tasks.benchmarks.snomed.case import Case
from tasks.benchmarks.snomed.interview import (
    Interview,
    InterviewPrompts,
    InterviewSettings,
    Messages,
    Reply,
    Role,
    Turn,
    run_interview,
)
from tasks.evals.config import ModelSpec
from tasks.evals.job_state import job_result
from tasks.llm.call import complete, counting_outcomes
from tasks.llm.ledger import CallLedger, CallRecord
from tasks.llm.request import CallOptions, ChatRequest


class RoleSetup(BaseModel, frozen=True):
    """How one role's calls are made: its model, call options, prompt version and per-case params."""

    spec: ModelSpec
    options: CallOptions
    prompt_version: str
    params: dict[str, Any] = {}  # sent on top of the spec's params (the offline patient's record)


class InterviewJob(BaseModel, frozen=True):
    """One clinician, one case, one epoch; a clinician's epochs of a case share one Prefect task."""

    run_id: str
    clinician: RoleSetup
    patient: RoleSetup
    prompts: InterviewPrompts
    settings: InterviewSettings
    case: Case
    epoch: int

    @property
    def label(self) -> str:
        return f"{self.clinician.spec.name}/{self.case.case_id}/epoch {self.epoch}"

    @property
    def task_label(self) -> str:
        return f"{self.clinician.spec.name}/{self.case.case_id}"

    def setup(self, role: Role) -> RoleSetup:
        return self.clinician if role == "clinician" else self.patient

    def request(self, role: Role, messages: Messages) -> ChatRequest:
        """The request `role` makes for `messages`: keyed by role, case and epoch besides what is sent."""
        setup = self.setup(role)
        # The case is in the scope: two cases' first questions are the same messages, yet separate samples.
        scope, params = f"snomed/{role}/{self.case.case_id}", setup.params
        return setup.spec.request(
            messages, setup.prompt_version, scope=scope, epoch=self.epoch, extra_params=params
        )


def interview_turns(job: InterviewJob, call: Any) -> tuple[Interview, list[tuple[Role, CallRecord]]]:
    """Run the job's interview with `call(role, request) -> CallRecord`; the interview and every call made."""
    calls: list[tuple[Role, CallRecord]] = []

    def ask(role: Role, messages: Messages) -> Reply:
        record = call(role, job.request(role, messages))
        calls.append((role, record))
        if record.status != "ok":
            return Reply(None, record.key, record.error)
        return Reply(record.text or "", record.key, cut=record.finish_reason == "length")

    return run_interview(job.case, job.prompts, ask, job.settings), calls


def interview_case(job: InterviewJob, ledger_dir: Path) -> list[dict[str, Any]]:
    """Interview the case's patient → one CONVERSATIONS row per message, plus the failed call if any."""
    ledger = CallLedger(ledger_dir)
    with counting_outcomes() as outcomes:
        interview, calls = interview_turns(
            job, lambda role, request: complete(request, job.setup(role).options, ledger)
        )
    return job_result(interview_rows(job, interview, calls), outcomes)


def interview_rows(
    job: InterviewJob, interview: Interview, calls: list[tuple[Role, CallRecord]]
) -> list[dict[str, Any]]:
    """The CONVERSATIONS rows of an interview: one per message in order, then the failed call if any."""
    records = {record.key: record for _, record in calls}
    turns = enumerate(interview.turns)
    rows = [message_row(job, index, turn, records.get(turn.call_key)) for index, turn in turns]
    if interview.status == "failed":
        role, record = calls[-1]
        rows.append(failed_row(job, interview, role, record))
    return rows


def message_row(job: InterviewJob, index: int, turn: Turn, record: CallRecord | None) -> dict[str, Any]:
    """A CONVERSATIONS row for the `index`-th message; a scripted message has no call record."""
    row = {
        **_interview_key(job),
        "message": index,
        "turn": turn.turn,
        "role": turn.role,
        "sent_to": turn.sent_to,
        "text": turn.text,
        "leaked_codes": list(turn.leaked),
        "status": "scripted",
    }
    if record is None:
        return row
    return {**row, **call_columns(record), "speaker": job.setup(record_role(turn)).spec.name}


def record_role(turn: Turn) -> Role:
    """The role whose call made a message (only the roles' replies are calls)."""
    if turn.role not in ("clinician", "patient"):
        raise ValueError(f"a {turn.role} message is scripted, not a call")
    return turn.role


def failed_row(job: InterviewJob, interview: Interview, role: Role, record: CallRecord) -> dict[str, Any]:
    """The failed call that ended an interview, numbered as the message it should have been."""
    last = interview.turns[-1]
    # A patient answers in its question's turn, a clinician asked for its final answer in the request's;
    # else a clinician speaks in the next turn.
    turn = last.turn if role == "patient" or last.role == "instruction" else last.turn + 1
    return {
        **_interview_key(job),
        "message": len(interview.turns),
        "turn": turn,
        "role": role,
        "speaker": job.setup(role).spec.name,
        "text": None,
        "leaked_codes": [],
        **call_columns(record),
    }


def call_columns(record: CallRecord) -> dict[str, Any]:
    return {
        "status": record.status,
        "prompt_tokens": record.prompt_tokens,
        "completion_tokens": record.completion_tokens,
        "cost_usd": record.cost_usd,
        "latency_s": record.latency_s,
        "finish_reason": record.finish_reason,
        "attempts": record.attempts,
        "error": record.error,
        "error_class": record.error_kind,
        "call_key": record.key,
    }


def _interview_key(job: InterviewJob) -> dict[str, Any]:
    return {
        "run_id": job.run_id,
        "model": job.clinician.spec.name,
        "case_id": job.case.case_id,
        "epoch": job.epoch,
    }
