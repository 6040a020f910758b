"""The solve step of the consultation benchmark: one Prefect task per (agent, case, epoch) runs an episode.

History taking: the agent (the model under test) asks one question per turn; the deterministic simulator
answers, recording the template each question matched and the AIUs it revealed; the agent ends the stage
with a `<Ready to diagnose>` line or at `max_questions`. Diagnosis: the agent is asked for its ranked
differential as JSON, re-asked a bounded number of times when it does not parse. Every agent call goes
through the shared call layer and ledger, keyed by case and epoch (`scope`, `epoch`); the simulator is
local and pure, so a re-run replays the same episode from the ledger.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel

# Imported for its side effect: the scripted reference agents are registered wherever this module's
# jobs run (a Dask worker imports this module when it unpickles them).
from tasks.benchmarks.consult import reference_agents  # noqa: F401
from tasks.benchmarks.consult.case import ConsultCase
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.metrics import is_ready, parse_differential
from tasks.benchmarks.consult.simulator import Simulator, default_space
from tasks.evals.config import ModelSpec
from tasks.llm.call import complete
from tasks.llm.ledger import CallLedger, CallRecord
from tasks.llm.request import CallOptions, ChatRequest

Messages = list[dict[str, str]]
Call = Callable[[ChatRequest], CallRecord]


class EpisodePrompts(BaseModel, frozen=True):
    """The rendered texts the episode sends (from the versioned prompt file)."""

    version: str
    system: str
    diagnosis: str
    reask: str


class SimulatorSettings(BaseModel, frozen=True):
    kb_version: int = 1
    catalogue_version: str = "v1"
    match_threshold: float = 0.3
    per_turn: int | None = None


class EpisodeJob(BaseModel, frozen=True):
    """One agent, one case, one epoch: the unit of one Prefect task."""

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
    forced: Messages = [{"role": "user", "content": job.prompts.diagnosis}]
    for attempt in range(job.max_reasks + 1):
        record = call(job.request(messages + forced))
        rows.append(_agent_row(job, turn + 1 + attempt, "diagnosis", record))
        if record.status != "ok":
            return rows
        text = record.text or ""
        if (
            parse_differential(text, load_kb(job.simulator.kb_version), job.diagnosis_match_threshold)
            is not None
        ):
            break
        forced += [{"role": "assistant", "content": text}, {"role": "user", "content": job.prompts.reask}]
    return rows


@task(name="run-episode", cache_policy=NO_CACHE, task_run_name="episode {job.label}")
def consult_episode(job: EpisodeJob, ledger_dir: Path) -> list[dict[str, Any]]:
    """Run the case's episode → one MESSAGES row per message; every agent call through the ledger."""
    ledger = CallLedger(ledger_dir)
    return run_episode(job, lambda request: complete(request, job.options, ledger))


def _agent_row(job: EpisodeJob, turn: int, stage: str, record: CallRecord) -> dict[str, Any]:
    return {
        **_row(job, turn, "agent", stage, record.text, status=record.status),
        "prompt_tokens": record.prompt_tokens,
        "completion_tokens": record.completion_tokens,
        "cost_usd": record.cost_usd,
        "latency_s": record.latency_s,
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
        "model": job.agent.name,
        "case_id": job.case.case_id,
        "epoch": job.epoch,
        "turn": turn,
        "role": role,
        "stage": stage,
        "text": text,
        **columns,
    }
