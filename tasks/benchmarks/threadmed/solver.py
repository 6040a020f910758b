"""Multi-turn inference: ask a thread's turns in order, in the baseline or the oracle condition.

baseline: the messages of turn t are q0, a0', ..., q(t-1), a(t-1)', qt with the model's own answers a'.
oracle:   turns >= 1 only, with every earlier assistant message the physician's real answer.

A failed baseline turn ends its thread: later turns would be asked with a history that does not exist,
so they are reported as not run. Oracle turns do not depend on the model's answers and are all asked.
"""

from pathlib import Path
from typing import Any

from pydantic import BaseModel

# Imported for its side effect: the offline models are registered wherever this module's jobs run
# (a Dask worker imports this module when it unpickles them).
from tasks.benchmarks.threadmed import baselines  # noqa: F401
from tasks.benchmarks.threadmed.cases import ThreadCase
from tasks.evals.config import Condition, ModelSpec
from tasks.evals.dialogue import Exchange, Reply, run_dialogue, scripted
from tasks.evals.job_state import job_result
from tasks.llm.call import complete, counting_outcomes
from tasks.llm.ledger import CallLedger, CallRecord
from tasks.llm.request import CallOptions


class InferenceJob(BaseModel, frozen=True):
    """One model, one condition, one thread; a model's conditions of a thread share one Prefect task."""

    run_id: str
    model: ModelSpec
    options: CallOptions
    condition: Condition
    thread: ThreadCase

    @property
    def turns(self) -> range:
        return range(1 if self.condition == "oracle" else 0, len(self.thread.questions))

    @property
    def label(self) -> str:
        return f"{self.model.name}/{self.condition}/{self.thread.thread_id}"

    @property
    def task_label(self) -> str:
        return f"{self.model.name}/{self.thread.thread_id}"

    def row_key(self) -> dict[str, Any]:
        """The columns and values that mark this job's RESPONSES rows."""
        return {"model": self.model.name, "condition": self.condition, "thread_id": self.thread.thread_id}


def ask_turns(job: InferenceJob, reply: Reply) -> list[Exchange]:
    """The job's turns asked in order, with the history its condition prescribes (tasks/evals/dialogue.py)."""
    given = job.thread.answers if job.condition == "oracle" else None
    return run_dialogue(job.turns, scripted(job.thread.questions), reply, given_replies=given)


def answer_thread(job: InferenceJob, ledger_dir: Path) -> list[dict[str, Any]]:
    """Ask the job's turns in order → one response row per turn; every call goes through the ledger."""
    ledger = CallLedger(ledger_dir)

    def answer(messages: list[dict[str, str]]) -> CallRecord:
        return complete(job.model.request(messages), job.options, ledger)

    with counting_outcomes() as outcomes:
        exchanges = ask_turns(job, answer)
    rows = [response_row(job, turn, record) for turn, record in exchanges if record is not None]
    failed = [turn for turn, record in exchanges if record is not None and record.status != "ok"]
    if failed and job.condition == "baseline":
        rows += [not_run_row(job, later, failed_turn=failed[0]) for later in job.turns if later > failed[0]]
    return job_result(rows, outcomes)


def response_row(job: InferenceJob, turn: int, record: CallRecord) -> dict[str, Any]:
    """A RESPONSES row for one answered (or failed) turn."""
    return {
        **_row_key(job, turn),
        "status": record.status,
        "response": record.text,
        "finish_reason": record.finish_reason,
        "prompt_tokens": record.prompt_tokens,
        "completion_tokens": record.completion_tokens,
        "cost_usd": record.cost_usd,
        "input_cost_usd": record.input_cost_usd,
        "output_cost_usd": record.output_cost_usd,
        "latency_s": record.latency_s,
        "attempts": record.attempts,
        "error": record.error,
        "error_class": record.error_kind,
        "provider_response_id": record.response_id,
        "call_key": record.key,
        "started_at": record.started_at,
        "finished_at": record.finished_at,
    }


def not_run_row(job: InferenceJob, turn: int, *, failed_turn: int) -> dict[str, Any]:
    """A RESPONSES row for a turn that was not asked because an earlier turn of its thread failed."""
    return {
        **_row_key(job, turn),
        "status": "not_run",
        "attempts": 0,
        "error": f"not run: turn {failed_turn} failed and this turn's history needs its answer",
    }


def _row_key(job: InferenceJob, turn: int) -> dict[str, Any]:
    return {"run_id": job.run_id, **job.row_key(), "turn": turn}
