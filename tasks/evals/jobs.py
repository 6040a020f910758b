"""One Prefect task per group of jobs (a model's conditions or epochs of one thread or case): it solves each
job, then scores what it solved; and the flow's collection of every job's rows and failures.

A task run costs the Prefect server a recording of its states (about 16 ms of its CPU on the reference
machine, 50 to an insert; three events a task run) and the workers a pass through Prefect's task engine. One
task run per job rather than one per step used a sixth less CPU and wall time in the Dask evaluation
benchmark; one per group rather than one per job (ThreadMed's two conditions of a thread in one task run:
1,200 task runs, not 2,400) a fifth less CPU again (tests/perf/README.md). A step that raises is named by
`StepRaised`, kept as the job's result: the group's other jobs still run, the summary says which step
failed, and a job whose scoring raised keeps its solved rows; the task then ends Failed.
"""

import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NamedTuple

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.futures import PrefectFuture
from prefect.states import Completed, Failed, State

from tasks.evals.job_state import CALLS_FAILED, rows_of
from tasks.evals.outputs import JobFailure, JobOutcomes
from tasks.evals.plan import Job

logger = logging.getLogger(__name__)

Rows = list[dict[str, Any]]
# A benchmark's step: solve(job=..., ledger_dir=...) or score(job=..., solved=..., ledger_dir=...) -> its
# rows, in a CallsFailed state when calls of the job failed (tasks/evals/job_state.py).
Step = Callable[..., Rows | State]


class JobRows(NamedTuple):
    """What a job returns to its group's task: the rows its solve step returned, and its score step's."""

    solved: list[dict[str, Any]]
    scored: list[dict[str, Any]]


class JobGroup(NamedTuple):
    """The jobs of one task run, run one after another: those whose solve jobs share a `task_label`."""

    label: str
    jobs: list[Job[Any, Any]]


def job_groups(jobs: list[Job[Any, Any]]) -> list[JobGroup]:
    """The run's jobs grouped by their solve job's `task_label`, groups and jobs in the order first seen."""
    groups: dict[str, list[Job[Any, Any]]] = {}
    for job in jobs:
        groups.setdefault(job.solve.task_label, []).append(job)
    return [JobGroup(label, members) for label, members in groups.items()]


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


# A job's result in its group's task: its rows, or the step that raised.
JobResult = JobRows | StepRaised


def solve_and_score_group(
    solve: Step, score: Step, group: JobGroup, ledger_dir: Path
) -> list[JobResult] | State:
    """Each job of `group` solved then scored (`solve_and_score`): their results in order, in a Failed state
    when a step of one raised, else in a CallsFailed state when calls of one failed, the message naming the
    job of each."""
    results: list[JobResult] = []
    raised, calls_failed = [], []
    for job in group.jobs:
        try:
            outcome = solve_and_score(solve, score, job, ledger_dir)
        except StepRaised as error:  # logged with its traceback, as Prefect logs a task that raises
            logger.error("%s: %s", job.solve.label, error, exc_info=error.__cause__)
            results.append(error)
            raised.append(f"{job.solve.label}: {error}")
            continue
        if isinstance(outcome, State):
            calls_failed.append(f"{job.solve.label}: {outcome.message}")
            outcome = outcome.data
        results.append(outcome)
    if raised:
        return Failed(message="; ".join(raised), data=results)
    if calls_failed:
        return Completed(name=CALLS_FAILED, message="; ".join(calls_failed), data=results)
    return results


@task(name="evaluate-jobs", cache_policy=NO_CACHE, task_run_name="{group.label}")
def evaluate_jobs(solve: Step, score: Step, group: JobGroup, ledger_dir: Path) -> list[JobResult] | State:
    """One group of a run's jobs, each solved then scored (`solve_and_score_group`); every call goes through
    the ledger."""
    return solve_and_score_group(solve, score, group, ledger_dir)


def job_outcomes(
    groups: list[JobGroup],
    futures: list[PrefectFuture],
    ended: Iterable[PrefectFuture] | None = None,
    then: Callable[[JobGroup], None] | None = None,
) -> JobOutcomes:
    """Wait for every group's task; a job whose step raised is a `JobFailure` (its solved rows kept when
    scoring raised), as is every job of a task that ended without returning (crashed, cancelled); others'
    rows are kept, in the groups' order.

    Each task's result is read as `ended` gives its future (`follow_progress`: as the tasks end; by default
    in the groups' order): reading one is a round trip to Prefect's event loop (1.7 ms on the reference
    machine), made while the other tasks run, not for all of them after the last one. `then` is given each
    group once its task's result is read.
    """
    position = {id(future): index for index, future in enumerate(futures)}
    read = {}
    for future in futures if ended is None else ended:
        index = position[id(future)]
        read[index] = _final(future)
        if then is not None:
            then(groups[index])
    outcomes = JobOutcomes([], [], [])
    for index, group in enumerate(groups):
        state, results = read[index]
        labels = [job.solve.label for job in group.jobs]
        if not isinstance(results, list):  # the task ended without returning its jobs' results
            error = _ended(state, results)
            outcomes.failures.extend(JobFailure(job=label, stage="job", error=error) for label in labels)
            continue
        for label, result in zip(labels, results, strict=True):
            if isinstance(result, StepRaised):
                outcomes.solved_rows.extend(result.solved)
                outcomes.failures.append(JobFailure(job=label, stage=result.stage, error=result.error))
            else:
                outcomes.solved_rows.extend(result.solved)
                outcomes.scored_rows.extend(result.scored)
    return outcomes


def _final(future: PrefectFuture) -> tuple[State, Any]:
    """A group task's final state, and what it returned (None if it did not end)."""
    future.wait()
    state = future.state
    return state, state.result(raise_on_failure=False) if state.is_final() else None


def _ended(state: State, raised: Any) -> str:
    """How a task ended that did not return its jobs' results: the exception, or the state's own message."""
    if isinstance(raised, BaseException):
        return f"{type(raised).__name__}: {raised}"
    return state.message or state.name or str(state.type)
