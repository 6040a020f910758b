"""One Prefect task per job: it solves the job, then scores what it solved; and the flow's collection of
every job's rows and failures.

One task run per job rather than one per step: every task run costs the Prefect server a recording of its
states (about 16 ms of its CPU on the reference machine, 50 to an insert; 58 ms one by one) and the
workers a pass through Prefect's task engine. With the two steps in one task, the Dask evaluation benchmark
used a sixth less CPU and wall time (tests/perf/README.md). A step that raises is named by the exception
the task raises (`StepRaised`), so the summary still says which step failed, and a job whose scoring raised
keeps its solved rows.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.futures import PrefectFuture
from prefect.states import Completed, State

from tasks.evals.job_state import CALLS_FAILED, rows_of
from tasks.evals.outputs import JobFailure, JobOutcomes
from tasks.evals.plan import Job

Rows = list[dict[str, Any]]
# A benchmark's step: solve(job=..., ledger_dir=...) or score(job=..., solved=..., ledger_dir=...) -> its
# rows, in a CallsFailed state when calls of the job failed (tasks/evals/job_state.py).
Step = Callable[..., Rows | State]


class JobRows(NamedTuple):
    """What a job's task returns: the rows its solve step returned, and those of its score step."""

    solved: list[dict[str, Any]]
    scored: list[dict[str, Any]]


class StepRaised(Exception):
    """A step of the job raised: which one, the rows solved before it (none if solving raised) and the error
    as `Type: message`. Its arguments are all it holds, so it pickles whole (a Dask worker sends it back)."""

    def __init__(self, stage: str, solved: list[dict[str, Any]], error: str) -> None:
        super().__init__(stage, solved, error)
        self.stage, self.solved, self.error = stage, solved, error

    def __str__(self) -> str:
        return f"{self.stage}: {self.error}"


def solve_and_score(solve: Step, score: Step, job: Job[Any, Any], ledger_dir: Path) -> JobRows | State:
    """Solve `job`, then score its solved rows: both steps' rows, in a CallsFailed state (whose message
    names each step's failed calls) when calls of either failed. A step that raises raises `StepRaised`."""
    solved = _step("solve", [], solve, job=job.solve, ledger_dir=ledger_dir)
    solved_rows = rows_of(solved)
    scored = _step("score", solved_rows, score, job=job.score, solved=solved_rows, ledger_dir=ledger_dir)
    rows = JobRows(solved_rows, rows_of(scored))
    results = {"solve": solved, "score": scored}
    failed = [f"{stage}: {result.message}" for stage, result in results.items() if isinstance(result, State)]
    return Completed(name=CALLS_FAILED, message="; ".join(failed), data=rows) if failed else rows


def _step(stage: str, solved_before: Rows, step: Step, **arguments: Any) -> Rows | State:
    try:
        return step(**arguments)
    except Exception as error:
        raise StepRaised(stage, solved_before, f"{type(error).__name__}: {error}") from error


@task(name="evaluate-job", cache_policy=NO_CACHE, task_run_name="{job.solve.label}")
def evaluate_job(solve: Step, score: Step, job: Job[Any, Any], ledger_dir: Path) -> JobRows | State:
    """One job of a run, solved then scored (`solve_and_score`); every call goes through the ledger."""
    return solve_and_score(solve, score, job, ledger_dir)


def job_outcomes(labels: list[str], futures: list[PrefectFuture]) -> JobOutcomes:
    """Wait for every job's task; one that raised is a `JobFailure` (its solved rows kept when scoring
    raised), others' rows are kept."""
    outcomes = JobOutcomes([], [], [])
    for label, future in zip(labels, futures, strict=True):
        future.wait()
        state = future.state
        if state.is_completed():
            rows = future.result()
            outcomes.solved_rows.extend(rows.solved)
            outcomes.scored_rows.extend(rows.scored)
            continue
        raised = state.result(raise_on_failure=False) if state.is_final() else None
        if isinstance(raised, StepRaised):
            outcomes.solved_rows.extend(raised.solved)
            outcomes.failures.append(JobFailure(job=label, stage=raised.stage, error=raised.error))
        else:  # the task ended without a step raising: crashed or cancelled
            outcomes.failures.append(JobFailure(job=label, stage="job", error=_ended(state, raised)))
    return outcomes


def _ended(state: State, raised: Any) -> str:
    """How a job's task ended that no step raised in: the exception, or the state's own message."""
    if isinstance(raised, BaseException):
        return f"{type(raised).__name__}: {raised}"
    return state.message or state.name or str(state.type)
