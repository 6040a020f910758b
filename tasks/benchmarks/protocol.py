"""What a benchmark is: a frozen record of its pieces, in the spirit of inspect_ai's task/solver/scorer.

A run of any benchmark has one shape (flows/evaluate_models.py): `plan` turns the settings into jobs,
the `solve` task runs once per job (one case x model x condition or epoch; every call through the
ledger), the `score` task grades each solve output, the rows are written as the `tables`, then the
summary, the manifest and the `report`. Everything a benchmark owns lives in its folder
`tasks/benchmarks/<name>/`; `registry.py` lists the benchmarks.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import Task
from pydantic import BaseModel

from tasks.data.contracts import Contract
from tasks.evals.config import SampleSpec
from tasks.evals.estimate import JobEstimator
from tasks.evals.outputs import RunTables, Summarizer
from tasks.evals.plan import Planner


@dataclass(frozen=True)
class Benchmark:
    """One benchmark's pieces; the shared run machinery (tasks/evals/) calls nothing else of it."""

    name: str
    title: str
    # The run config: roles (model under test, judge, ...), conditions, sample, limits.
    config_model: type[BaseModel]
    # (dataset folder, sample spec) -> the cases of a run, in their seeded order.
    load_cases: Callable[[Path, SampleSpec], list[Any]]
    plan: Planner
    # solve(job=..., ledger_dir=...) -> rows of `tables.solved`, one Prefect task per job.
    solve: Task[..., list[dict[str, Any]]]
    # score(job=..., solved=<the solve rows>, ledger_dir=...) -> rows of `tables.scored`.
    score: Task[..., list[dict[str, Any]]]
    tables: RunTables
    # (run id, run folder, solve rows, score rows) -> the run's summary: counts, score, cost, failures.
    summarize: Summarizer
    # The dry run's walk of one job: counts the calls still to make into the tally.
    estimate_job: JobEstimator
    # (run folders, report folder or None for the default, report settings or None) -> the report folder.
    report: Callable[[list[str], str | None, Any], str]
    report_settings: type[BaseModel]
    contracts: tuple[Contract, ...]
    prompts_dir: Path
