"""The plan of one evaluation run: its id, its folder, and its jobs (what their solve and score steps get).

A benchmark's planner (tasks/benchmarks/<name>/) turns the settings into a `RunPlan`; the flow runs each job
(tasks/evals/jobs.py): the benchmark's solve step over `job.solve`, then its score step over `job.score` with
the solve output. A solve job names itself (`label`) and the Prefect task it shares with others
(`task_label`: a model's conditions of a thread, its epochs of a case).
"""

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel

from tasks.evals.config import EvaluationSettings, RunConfig

SolveJobT = TypeVar("SolveJobT", bound=BaseModel)
ScoreJobT = TypeVar("ScoreJobT", bound=BaseModel)


class Job(BaseModel, Generic[SolveJobT, ScoreJobT], frozen=True):
    """One unit of a run: the solve step's input, and the score step's input beside the solve output."""

    solve: SolveJobT
    score: ScoreJobT


class RunPlan(BaseModel, Generic[SolveJobT, ScoreJobT]):
    """Everything a run will do, decided before any call: the jobs and what the manifest records of them."""

    run_id: str
    run_dir: Path
    dataset_dir: Path
    dataset_fingerprint: str
    jobs: list[Job[SolveJobT, ScoreJobT]]
    prompts: dict[str, str] = {}  # sha256 of each prompt file used, by prompt version
    judge_rubric: str | None = None  # the version of the judge's rubric among `prompts`; None: no judge
    manifest_facts: dict[str, Any] = {}  # the benchmark's own manifest entries (models as sent, counts)
    notes: list[str] = []  # caveats for people reading the run's outputs

    @property
    def ledger_dir(self) -> Path:
        return self.run_dir / "ledger"


Planner = Callable[[EvaluationSettings], RunPlan[Any, Any]]


@task(name="plan-evaluation", cache_policy=NO_CACHE)
def plan_evaluation(planner: Planner, settings: EvaluationSettings) -> RunPlan[Any, Any]:
    """Dataset + config → the run's jobs, by the benchmark's planner (reads the dataset)."""
    return planner(settings)


def run_id_for(config: RunConfig, fingerprint: str) -> str:
    """Same config and dataset, same run id: a re-run into the same run directory rewrites the same rows."""
    settings = config.model_dump(mode="json", exclude=config.not_in_run_id())
    canonical = json.dumps({"config": settings, "dataset": fingerprint}, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]
