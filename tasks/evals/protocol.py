"""What a benchmark is: a frozen record of its pieces, in the spirit of inspect_ai's task/solver/scorer.

A run of any benchmark has one shape (flows/evaluation.py): `plan` turns the settings into jobs (one case x
model x condition or epoch), one Prefect task per group of them (a model's conditions or epochs of one case;
tasks/evals/jobs.py) runs `solve` on each (every call through the ledger), then `score` on what it solved, the
rows are written as the `tables`, then the summary, the manifest and the `report`. Everything a benchmark
owns lives in its folder `tasks/benchmarks/<name>/`, its warehouse too; `tasks/benchmarks/registry.py` lists
the benchmarks.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from prefect import Task
from pydantic import BaseModel

from tasks.data.contracts import Contract
from tasks.data.sources import BenchmarkWarehouse
from tasks.evals.card import BenchmarkCard
from tasks.evals.config import RunConfig, SampleSpec
from tasks.evals.estimate import EstimateTally, JobEstimator
from tasks.evals.jobs import Step
from tasks.evals.outputs import RunTables, Summarizer
from tasks.evals.plan import Planner
from tasks.export.samples import ExportedRun
from tasks.llm.ledger import CallLedger
from tasks.report.compare import ComparisonSource
from tasks.report.files import default_report_dir

ReportFunction = Callable[[list[str], str | None, Any], str]


class Rejudging(NamedTuple):
    """What grading a stored run's answers again with another judge needs (tasks/evals/rejudge.py)."""

    # A solve job -> the columns and values that mark its rows in the solved table (model, thread, ...).
    solved_key: Callable[[Any], dict[str, Any]]
    # The dry run's walk of one score job over given solve rows: counts its judge calls still to make.
    estimate_scoring: Callable[[Any, list[dict[str, Any]], CallLedger, EstimateTally], None]
    # Its input folder -> the fingerprint a run's manifest records of it: a re-judge checks the folder is
    # the one the answers were given for before it says what it will do.
    fingerprint: Callable[[Path], str]


@dataclass(frozen=True)
class Benchmark:
    """One benchmark's pieces; the shared run machinery (tasks/evals/) calls nothing else of it."""

    # Its name, title, config and input checks: what a command needs before it plans (tasks/evals/card.py).
    card: BenchmarkCard
    # (dataset folder, sample spec) -> the cases of a run, in their seeded order.
    load_cases: Callable[[Path, SampleSpec], list[Any]]
    plan: Planner
    # solve(job=..., ledger_dir=...) -> rows of `tables.solved` (in a CallsFailed state if calls failed).
    solve: Step
    # score(job=..., solved=<the solve rows>, ledger_dir=...) -> rows of `tables.scored` (likewise).
    score: Step
    tables: RunTables
    # (run id, run folder, solve rows, score rows) -> the run's summary: counts, score, cost, failures.
    summarize: Summarizer
    # The dry run's walk of one job: counts the calls still to make into the tally.
    estimate_job: JobEstimator
    # (run folders, report folder or None for the default, report settings or None) -> the report folder.
    report: ReportFunction
    report_settings: type[BaseModel]
    contracts: tuple[Contract, ...]
    prompts_dir: Path
    # How its stored runs are re-judged; None: it has no judge to replace.
    rejudging: Rejudging | None = None
    # The SQL that builds its dataset from the sources, declared in its folder; None: its cases are not
    # built in the warehouse.
    warehouse: BenchmarkWarehouse | None = None
    # How its runs are compared model against model (`threadmed compare`); None: not supported.
    comparison: ComparisonSource | None = None
    # A finished run folder -> its samples, for `threadmed export` (tasks/export/); None: not exported.
    export: Callable[[Path], ExportedRun] | None = None

    @property
    def name(self) -> str:
        return self.card.name

    @property
    def title(self) -> str:
        return self.card.title

    @property
    def config_model(self) -> type[RunConfig]:
        return self.card.config_model

    @property
    def check_inputs(self) -> Callable[[Path], None] | None:
        return self.card.check_inputs

    @property
    def check_sample(self) -> Callable[[Path, RunConfig], None] | None:
        return self.card.check_sample


def published_report(
    build: Task[..., str], publish: Task[..., Any], settings_model: type[BaseModel]
) -> ReportFunction:
    """A benchmark's `report`: build the report folder (default: tasks/report/files.py), then publish its
    Prefect artifacts; settings None are the benchmark's defaults."""

    def report(run_dirs: list[str], out_dir: str | None, settings: Any) -> str:
        report_dir = build(
            run_dirs=run_dirs,
            out_dir=out_dir or default_report_dir(run_dirs),
            settings=settings or settings_model(),
        )
        publish(report_dir=report_dir)
        return report_dir

    return report
