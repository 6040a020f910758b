"""The solve step of the consultation benchmark: one Prefect task per (agent, case, epoch) runs an episode.

History taking: the agent (the model under test) asks one question per turn; the deterministic simulator
answers, recording the template each question matched and the AIUs it revealed; the agent ends the stage
with the `<Ready to diagnose>` marker anywhere in a reply (`is_ready`) or at `max_questions`. Diagnosis:
the agent is asked for its ranked differential as JSON; treatment: for its plan (a JSON list of drugs, then
advice); each is re-asked up to `max_reasks` times while it does not parse, then left unparseable.
Follow-up: the patient raises each of the case's scripted follow-ups in turn, in the conversation; an
answer that tries to revise the plan (`is_plan_attempt`) but does not parse is re-asked the same way.
Replies are read as the scorer reads them (reading.py): a reader that raises leaves the reply unparseable
and the episode goes on; only a failed call ends it. Every agent call goes through the shared call layer
and ledger, keyed by case and epoch (`scope`, `epoch`); the simulator and the follow-up script are local
and pure, so a re-run replays the same episode from the ledger.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

# Imported for its side effect: the scripted reference agents are registered wherever this module's
# jobs run (a Dask worker imports this module when it unpickles them).
from tasks.benchmarks.consult import reference_agents  # noqa: F401
from tasks.benchmarks.consult.case import ConsultCase
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.metrics import is_ready
from tasks.benchmarks.consult.reading import read_differential, read_plan, reads_as_plan_attempt
from tasks.benchmarks.consult.simulator import Simulator, default_space
from tasks.evals.config import ModelSpec
from tasks.evals.job_state import job_result
from tasks.llm.call import complete, counting_outcomes
from tasks.llm.ledger import CallLedger, CallRecord
from tasks.llm.prompts import PromptTemplate
from tasks.llm.request import CallOptions, ChatRequest

Messages = list[dict[str, str]]
Call = Callable[[ChatRequest], CallRecord]


class EpisodePrompts(BaseModel, frozen=True):
    """The rendered texts the episode sends (from the versioned prompt file)."""

    version: str
    system: str
    diagnosis: str
    reask: str
    treatment: str
    treatment_reask: str
    revision_reask: str

    @classmethod
    def from_template(cls, prompt: PromptTemplate) -> "EpisodePrompts":
        sections = ("system", "diagnosis", "reask", "treatment", "treatment_reask", "revision_reask")
        return cls(version=prompt.version, **{name: prompt.render(name) for name in sections})


class SimulatorSettings(BaseModel, frozen=True):
    kb_version: int = 1
    catalogue_version: str = "v1"
    match_threshold: float = 0.3
    per_turn: int | None = None


class EpisodeJob(BaseModel, frozen=True):
    """One agent, one case, one epoch; an agent's epochs of a case share one Prefect task."""

    run_id: str
    agent: ModelSpec
    options: CallOptions
    prompts: EpisodePrompts
    simulator: SimulatorSettings
    max_questions: int
    max_reasks: int
    diagnosis_match_threshold: float
    case: ConsultCase
    epoch: int

    @property
    def label(self) -> str:
        return f"{self.agent.name}/{self.case.case_id}/epoch {self.epoch}"

    @property
    def task_label(self) -> str:
        return f"{self.agent.name}/{self.case.case_id}"

    def row_key(self) -> dict[str, Any]:
        """The columns and values that mark this job's MESSAGES rows."""
        return {"model": self.agent.name, "case_id": self.case.case_id, "epoch": self.epoch}

    def request(self, messages: Messages) -> ChatRequest:
        scope = f"consult/agent/{self.case.case_id}"  # two cases' first turns are the same messages
        return self.agent.request(messages, self.prompts.version, scope=scope, epoch=self.epoch)


def simulator_for(job: EpisodeJob) -> Simulator:
    """A fresh simulator for the job's case; the KB and template space are built once per process."""
    settings = job.simulator
    space = default_space(settings.catalogue_version, settings.match_threshold)
    return Simulator(job.case, load_kb(settings.kb_version), space, per_turn=settings.per_turn)


def run_episode(job: EpisodeJob, call: Call) -> list[dict[str, Any]]:
    """The episode's MESSAGES rows; it stops at the first failed call (that call is the last row)."""
    simulator = simulator_for(job)
    kb = load_kb(job.simulator.kb_version)
    messages: Messages = [
        {"role": "system", "content": job.prompts.system},
        {"role": "user", "content": job.case.opening},
    ]
    rows = [_row(job, 0, "patient", "history", job.case.opening, status="simulated")]
    turn = 0
    for turn in range(1, job.max_questions + 1):
        record = call(job.request(messages))
        rows.append(_agent_row(job, turn, "history", record))
        if record.status != "ok":
            return rows
        question = record.text or ""
        messages.append({"role": "assistant", "content": question})
        if is_ready(question):
            break
        reply = simulator.answer(question)
        messages.append({"role": "user", "content": reply.text})
        rows.append(
            _row(job, turn, "patient", "history", reply.text, status="simulated", template=reply.template,
                 revealed=list(reply.revealed), deflected=reply.deflected)
        )  # fmt: skip
    else:
        turn = job.max_questions
    talk = _Conversation(job, call, messages, rows, turn)
    prompts = job.prompts

    def differential_parses(text: str) -> bool:  # as `plan_parses`: the last row's finish reason counts
        differential = read_differential(text, kb, job.diagnosis_match_threshold, rows[-1]["finish_reason"])
        return differential.value is not None

    def plan_parses(text: str) -> bool:  # `text` is the reply of the last row, whose finish reason counts
        return read_plan(text, kb, rows[-1]["finish_reason"]).value is not None

    for prompt, reask, stage, parses in (
        (prompts.diagnosis, prompts.reask, "diagnosis", differential_parses),
        (prompts.treatment, prompts.treatment_reask, "treatment", plan_parses),
    ):
        if talk.reask_until(talk.ask(prompt, stage), reask, stage, parses) is None:
            return rows
    # The plan in force, read as the scorer reads it: an answer naming a drug it does not hold revises it.
    plan = read_plan(rows[-1]["text"] or "", kb, rows[-1]["finish_reason"]).value
    for index, follow_up in enumerate(job.case.follow_ups):
        talk.turn += 1
        rows.append(_row(job, talk.turn, "patient", "follow_up", follow_up.text, status="simulated",
                         follow_up=index))  # fmt: skip
        answer = talk.ask(follow_up.text, "follow_up", index, new_turn=False)
        if answer is not None and reads_as_plan_attempt(answer, kb, plan):
            answer = talk.reask_until(answer, prompts.revision_reask, "follow_up", plan_parses, index)
            plan = None if answer is None else read_plan(answer, kb, rows[-1]["finish_reason"]).value
        if answer is None:
            return rows
    return rows


@dataclass
class _Conversation:
    """The episode after the history: each request is the whole conversation so far plus one user message,
    and each reply joins it; every agent reply is a MESSAGES row on its own turn unless told otherwise."""

    job: EpisodeJob
    call: Call
    messages: Messages
    rows: list[dict[str, Any]]
    turn: int

    def ask(
        self, prompt: str, stage: str, follow_up: int | None = None, *, new_turn: bool = True
    ) -> str | None:
        """The agent's reply to `prompt`; None when the call failed."""
        if new_turn:
            self.turn += 1
        self.messages.append({"role": "user", "content": prompt})
        record = self.call(self.job.request(self.messages))
        self.rows.append(_agent_row(self.job, self.turn, stage, record, follow_up))
        if record.status != "ok":
            return None
        text = record.text or ""
        self.messages.append({"role": "assistant", "content": text})
        return text

    def reask_until(
        self,
        text: str | None,
        reask: str,
        stage: str,
        parses: Callable[[str], bool],
        follow_up: int | None = None,
    ) -> str | None:
        """The last reply once `text` parses or `max_reasks` re-asks are spent; None when a call failed."""
        for _ in range(self.job.max_reasks):
            if text is None or parses(text):
                break
            text = self.ask(reask, stage, follow_up)
        return text


def consult_episode(job: EpisodeJob, ledger_dir: Path) -> list[dict[str, Any]]:
    """Run the case's episode → one MESSAGES row per message; every agent call through the ledger."""
    ledger = CallLedger(ledger_dir)
    with counting_outcomes() as outcomes:
        rows = run_episode(job, lambda request: complete(request, job.options, ledger))
    return job_result(rows, outcomes)


def _agent_row(
    job: EpisodeJob, turn: int, stage: str, record: CallRecord, follow_up: int | None = None
) -> dict[str, Any]:
    return {
        **_row(job, turn, "agent", stage, record.text, status=record.status, follow_up=follow_up),
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


def _row(
    job: EpisodeJob, turn: int, role: str, stage: str, text: str | None, **columns: Any
) -> dict[str, Any]:
    return {
        "run_id": job.run_id,
        **job.row_key(),
        "turn": turn,
        "role": role,
        "stage": stage,
        "text": text,
        **columns,
    }
