"""A job's one task: its solve step, then its score step over the solved rows; and the flow's collection of
every job's rows and failures."""

import pickle
from pathlib import Path
from typing import Any

import pytest
from prefect.states import Completed, Crashed, Failed, State
from pydantic import BaseModel

from tasks.evals.job_state import CALLS_FAILED
from tasks.evals.jobs import JobRows, StepRaised, job_outcomes, solve_and_score
from tasks.evals.outputs import JobFailure, JobOutcomes
from tasks.evals.plan import Job


class Step(BaseModel, frozen=True):
    """A step's input in a job (a thread to answer, its turns to judge)."""

    label: str


LEDGER = Path("ledger")
JOB = Job(solve=Step(label="thread-1"), score=Step(label="judge-1"))


def solve(job: Step, ledger_dir: Path) -> list[dict[str, Any]]:
    return [{"job": job.label, "ledger": str(ledger_dir), "turn": turn} for turn in (0, 1)]


def score(job: Step, solved: list[dict[str, Any]], ledger_dir: Path) -> list[dict[str, Any]]:
    return [{"job": job.label, "turn": row["turn"]} for row in solved]


def calls_failed(rows: list[dict[str, Any]], message: str) -> State:
    return Completed(name=CALLS_FAILED, message=message, data=rows)


def full_disk(**_: Any) -> list[dict[str, Any]]:
    raise OSError(28, "No space left on device")


SOLVED = [
    {"job": "thread-1", "ledger": "ledger", "turn": 0},
    {"job": "thread-1", "ledger": "ledger", "turn": 1},
]
SCORED = [{"job": "judge-1", "turn": 0}, {"job": "judge-1", "turn": 1}]


def test_a_job_is_solved_then_scored_over_its_solved_rows():
    assert solve_and_score(solve, score, JOB, LEDGER) == JobRows(SOLVED, SCORED)


def test_failed_calls_of_either_step_put_both_steps_rows_in_a_calls_failed_state_naming_the_step():
    def failing_solve(job: Step, ledger_dir: Path) -> State:
        return calls_failed(solve(job, ledger_dir), "1 of 2 calls failed")

    def failing_score(job: Step, solved: list[dict[str, Any]], ledger_dir: Path) -> State:
        return calls_failed(score(job, solved, ledger_dir), "2 of 2 calls failed")

    outcomes = [
        solve_and_score(failing_solve, score, JOB, LEDGER),
        solve_and_score(solve, failing_score, JOB, LEDGER),
        solve_and_score(failing_solve, failing_score, JOB, LEDGER),
    ]

    assert [(state.name, state.message, state.data) for state in outcomes] == [
        (CALLS_FAILED, "solve: 1 of 2 calls failed", JobRows(SOLVED, SCORED)),
        (CALLS_FAILED, "score: 2 of 2 calls failed", JobRows(SOLVED, SCORED)),
        (CALLS_FAILED, "solve: 1 of 2 calls failed; score: 2 of 2 calls failed", JobRows(SOLVED, SCORED)),
    ]


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        ((full_disk, score), ("solve", [], "OSError: [Errno 28] No space left on device")),
        ((solve, full_disk), ("score", SOLVED, "OSError: [Errno 28] No space left on device")),
    ],
)
def test_a_step_that_raises_is_named_with_the_rows_solved_before_it(steps, expected):
    with pytest.raises(StepRaised) as raised:
        solve_and_score(*steps, JOB, LEDGER)

    assert (raised.value.stage, raised.value.solved, raised.value.error) == expected
    assert str(raised.value) == f"{expected[0]}: {expected[2]}"
    assert isinstance(raised.value.__cause__, OSError)


def test_a_step_raised_pickles_whole_as_a_dask_worker_sends_it_back():
    sent = StepRaised("score", SOLVED, "OSError: [Errno 28] No space left on device")

    received = pickle.loads(pickle.dumps(sent))

    assert (received.stage, received.solved, received.error) == ("score", SOLVED, sent.error)


class EndedTask:
    """A job task's future that has ended in `state` (job_outcomes reads nothing else of it)."""

    def __init__(self, state: State) -> None:
        self.state = state

    def wait(self) -> None:
        pass

    def result(self) -> Any:
        return self.state.result()


def test_every_job_is_collected_with_the_solved_rows_of_a_scoring_that_raised_and_a_crash_named():
    scoring_raised = StepRaised("score", SOLVED, "OSError: [Errno 28] No space left on device")
    futures = [
        EndedTask(Completed(data=JobRows(SOLVED, SCORED))),
        EndedTask(calls_failed(JobRows(SOLVED, []), "score: 1 of 1 calls failed")),
        EndedTask(Failed(data=scoring_raised)),
        EndedTask(Failed(data=StepRaised("solve", [], "ValueError: bad case"))),
        EndedTask(Crashed(message="Worker tcp://10.0.0.7:4711 was lost")),
    ]

    outcomes = job_outcomes(["a", "b", "c", "d", "e"], futures)

    assert outcomes == JobOutcomes(
        solved_rows=SOLVED * 3,
        scored_rows=SCORED,
        failures=[
            JobFailure(job="c", stage="score", error="OSError: [Errno 28] No space left on device"),
            JobFailure(job="d", stage="solve", error="ValueError: bad case"),
            JobFailure(job="e", stage="job", error="CrashedRun: Worker tcp://10.0.0.7:4711 was lost"),
        ],
    )
