"""oracle-data's two steps per case: the teacher writes each pair (one call per topic, through the ledger),
then each reply is validated. One Prefect task per case for each step, never one per call."""

from pathlib import Path
from typing import Any

from pydantic import BaseModel

# Imported for its side effect: the offline teacher is registered wherever these jobs run.
from tasks.benchmarks.snomed.oracle import offline_teacher  # noqa: F401
from tasks.benchmarks.snomed.oracle.topics import PairTopic
from tasks.benchmarks.snomed.oracle.validation import LeakNames, parse_teacher_reply, rejection
from tasks.benchmarks.snomed.patient import Disclosure
from tasks.benchmarks.snomed.solver import RoleSetup, call_columns
from tasks.evals.job_state import job_result
from tasks.llm.call import complete, counting_outcomes
from tasks.llm.ledger import CallLedger
from tasks.llm.request import ChatRequest


class TeacherCall(BaseModel, frozen=True):
    """One pair to write: its topic, the teacher's messages and the offline teacher's params (else none)."""

    topic: PairTopic
    messages: tuple[dict[str, str], ...]
    params: dict[str, Any] = {}


class PairsJob(BaseModel, frozen=True):
    """Every pair of one case: the unit of one Prefect task."""

    run_id: str
    teacher: RoleSetup
    case_id: str
    split: str
    calls: tuple[TeacherCall, ...]

    @property
    def label(self) -> str:
        return f"{self.teacher.spec.name}/{self.case_id}"

    @property
    def task_label(self) -> str:
        return self.label

    def request(self, call: TeacherCall) -> ChatRequest:
        return self.teacher.spec.request(
            list(call.messages),
            self.teacher.prompt_version,
            scope=f"snomed/oracle-teacher/{self.case_id}",
            extra_params=call.params,
        )


class ValidateJob(BaseModel, frozen=True):
    """What validating a case's pairs needs besides the replies: the disclosure, the names no answer may
    say (the run's whole vocabulary, the record's conditions and the negative topics among them; one object
    shared by every job of a run) and the topics."""

    run_id: str
    case_id: str
    disclosure: Disclosure
    leak_names: LeakNames
    topics: tuple[PairTopic, ...]


def _pair_key(job: PairsJob, index: int, topic: PairTopic) -> dict[str, Any]:
    return {
        "run_id": job.run_id,
        "model": job.teacher.spec.name,
        "case_id": job.case_id,
        "epoch": 0,
        "topic_index": index,
        "kind": topic.kind,
        "subject": topic.subject,
        "topic": topic.topic,
        "split": job.split,
    }


def write_pairs(job: PairsJob, ledger_dir: Path) -> list[dict[str, Any]]:
    """Ask the teacher for every pair of the case → one TEACHER_REPLIES row per pair."""
    ledger = CallLedger(ledger_dir)
    rows = []
    with counting_outcomes() as outcomes:
        for index, call in enumerate(job.calls):
            record = complete(job.request(call), job.teacher.options, ledger)
            rows.append({**_pair_key(job, index, call.topic), "text": record.text, **call_columns(record)})
    return job_result(rows, outcomes)


def validate_pairs(job: ValidateJob, solved: list[dict[str, Any]], ledger_dir: Path) -> list[dict[str, Any]]:
    """The case's teacher replies → one ORACLE_PAIRS row per pair: kept, rejected (why) or failed."""
    return [validated_pair(job, row) for row in solved]


def validated_pair(job: ValidateJob, reply: dict[str, Any]) -> dict[str, Any]:
    """One reply's pair and verdict (validation.rejection)."""
    key = {name: reply[name] for name in ("run_id", "model", "case_id", "epoch", "topic_index", "kind",
                                           "subject", "topic", "split")}  # fmt: skip
    if reply["status"] != "ok":
        return {**key, "status": "failed", "reason": None, "is_kept": None, "question": None, "answer": None}
    pair = parse_teacher_reply(reply["text"])
    reason = rejection(pair, job.topics[reply["topic_index"]].kind, job.disclosure, job.leak_names)
    return {
        **key,
        "status": "rejected" if reason else "kept",
        "reason": reason,
        "is_kept": reason is None,
        "question": pair.question if pair else None,
        "answer": pair.answer if pair else None,
    }
