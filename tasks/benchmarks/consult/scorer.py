"""The score step of the consultation benchmark: an episode's messages -> its history and diagnosis scores.

No model is called: the templates and revealed AIUs were recorded by the simulator as it answered, and the
differential is the agent's last diagnosis reply, parsed (metrics.py).
"""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel

from tasks.benchmarks.consult.case import ConsultCase
from tasks.benchmarks.consult.contracts import DIAGNOSIS_METRICS, HISTORY_METRICS, SECONDARY_METRICS
from tasks.benchmarks.consult.episode import Episode, HistoryTurn
from tasks.benchmarks.consult.inquiry.policy import InquiryPolicy, load_policy
from tasks.benchmarks.consult.kb.loading import KnowledgeBase, load_kb
from tasks.benchmarks.consult.metrics import parse_differential, score_diagnosis, score_history


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


@task(name="score-episode", cache_policy=NO_CACHE, task_run_name="score {job.model}/{job.case.case_id}")
def score_episode(job: ScoreJob, solved: list[dict[str, Any]], ledger_dir: Path) -> list[dict[str, Any]]:
    """The episode's messages → its SCORES row."""
    return [episode_scores(job, solved, load_kb(job.kb_version), load_policy(job.policy_version))]


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
        if m["role"] == "patient" and m["turn"] > 0
    )
    diagnosis = [m for m in messages if m["role"] == "agent" and m["stage"] == "diagnosis"]
    differential = parse_differential(diagnosis[-1]["text"] or "", kb, threshold) if diagnosis else None
    return Episode(
        case_id=case.case_id,
        turns=turns,
        differential=differential or (),
        diagnosis_parse="ok" if differential is not None else "unparseable",
    )


def episode_scores(
    job: ScoreJob, messages: Sequence[dict[str, Any]], kb: KnowledgeBase, policy: InquiryPolicy
) -> dict[str, Any]:
    """The SCORES row of one episode; a failed call leaves it unscored (a re-run finishes it)."""
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
    history = score_history(case, episode, kb, policy, gamma=job.gamma)._asdict()
    diagnosis = score_diagnosis(case, episode)._asdict()
    scores = {**history, **diagnosis}
    return {
        **row,
        "status": "completed",
        "questions": len(episode.turns),
        "diagnosis_parse": episode.diagnosis_parse,
        "differential": [item.model_dump(exclude={"rationale"}) for item in episode.differential],
        **{name: scores[name] for name in (*HISTORY_METRICS, *DIAGNOSIS_METRICS, *SECONDARY_METRICS)},
    }
