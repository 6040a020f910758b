"""A group's one task: each job's solve step, then its score step over the solved rows; and the flow's
collection of every job's rows and failures."""

import logging
import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prefect.states import Completed, Crashed, Failed, State
from pydantic import BaseModel

from tasks.evals.job_state import CALLS_FAILED
from tasks.evals.jobs import (
    JobGroup,
    JobRows,
    StepRaised,
    job_groups,
    job_outcomes,
    solve_and_score,
    solve_and_score_group,
)
from tasks.evals.outputs import JobFailure, JobOutcomes
from tasks.evals.plan import Job


class Step(BaseModel, frozen=True):
    """A step's input in a job (a thread to answer, its turns to judge) and the task it shares."""

    label: str
    task_label: str = "model/thread-1"


LEDGER = Path("ledger")
JOB = Job(solve=Step(label="thread-1"), score=Step(label="judge-1"))


def job(label: str, task_label: str) -> Job[Step, Step]:
    return Job(solve=Step(label=label, task_label=task_label), score=Step(label=f"judge {label}"))


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


def test_jobs_are_grouped_by_their_task_label_in_the_order_first_seen():
    jobs = [job("m1/own/t1", "m1/t1"), job("m1/oracle/t1", "m1/t1"), job("m2/own/t1", "m2/t1")]
    late = job("m1/own/t2", "m1/t2")

    assert job_groups([*jobs, late, job("m2/oracle/t1", "m2/t1")]) == [
        JobGroup("m1/t1", jobs[:2]),
        JobGroup("m2/t1", [jobs[2], job("m2/oracle/t1", "m2/t1")]),
        JobGroup("m1/t2", [late]),
    ]


@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 5)), max_size=30))
def test_every_job_is_in_exactly_one_group_of_its_task_label_in_its_order(labelled):
    jobs = [job(f"{task}/{n}/{i}", task) for i, (task, n) in enumerate(labelled)]

    groups = job_groups(jobs)

    assert [member for group in groups for member in group.jobs] == sorted(
        jobs, key=lambda member: [group.label for group in groups].index(member.solve.task_label)
    )
    assert all({member.solve.task_label for member in group.jobs} == {group.label} for group in groups)
    assert len({group.label for group in groups}) == len(groups)


def test_a_group_runs_every_job_though_one_raises_and_ends_failed_naming_it(caplog):
    def solve_or_raise(job: Step, ledger_dir: Path) -> list[dict[str, Any]]:
        if job.label == "t1/own":
            raise ValueError("bad case")
        return solve(job, ledger_dir)

    group = JobGroup("t1", [job("t1/own", "t1"), job("t1/oracle", "t1")])

    with caplog.at_level(logging.ERROR, logger="tasks.evals.jobs"):
        state = solve_and_score_group(solve_or_raise, score, group, LEDGER)

    raised, done = state.data
    [logged] = caplog.records
    assert (logged.getMessage(), logged.exc_info[1].args) == (
        "t1/own: solve: ValueError: bad case",
        ("bad case",),
    )
    assert (state.type, state.message) == (Failed().type, "t1/own: solve: ValueError: bad case")
    assert (type(raised), raised.stage, raised.solved, raised.error) == (
        StepRaised,
        "solve",
        [],
        "ValueError: bad case",
    )
    assert done == JobRows(
        solve(Step(label="t1/oracle"), LEDGER),
        score(Step(label="judge t1/oracle"), solve(Step(label="t1/oracle"), LEDGER), LEDGER),
    )


def test_a_group_whose_calls_failed_in_one_job_is_calls_failed_naming_the_job_and_its_step():
    def failing_score(
        job: Step, solved: list[dict[str, Any]], ledger_dir: Path
    ) -> list[dict[str, Any]] | State:
        rows = score(job, solved, ledger_dir)
        return calls_failed(rows, "1 of 2 calls failed") if job.label == "judge t1/oracle" else rows

    group = JobGroup("t1", [job("t1/own", "t1"), job("t1/oracle", "t1")])
    plain = solve_and_score_group(solve, score, group, LEDGER)

    state = solve_and_score_group(solve, failing_score, group, LEDGER)

    assert (state.name, state.message, state.data) == (
        CALLS_FAILED,
        "t1/oracle: score: 1 of 2 calls failed",
        plain,
    )
    assert [type(result) for result in plain] == [JobRows, JobRows]


class EndedTask:
    """A group task's future that has ended in `state` (job_outcomes reads nothing else of it)."""

    def __init__(self, state: State) -> None:
        self.state = state

    def wait(self) -> None:
        pass


def test_every_job_is_collected_with_the_solved_rows_of_a_scoring_that_raised_and_a_crash_named():
    scoring_raised = StepRaised("score", SOLVED, "OSError: [Errno 28] No space left on device")
    groups = [
        JobGroup("m/t1", [job("a", "m/t1"), job("b", "m/t1")]),
        JobGroup("m/t2", [job("c", "m/t2"), job("d", "m/t2")]),
        JobGroup("m/t3", [job("e", "m/t3"), job("f", "m/t3")]),
    ]
    futures = [
        EndedTask(
            calls_failed([JobRows(SOLVED, SCORED), JobRows(SOLVED, [])], "b: score: 1 of 1 calls failed")
        ),
        EndedTask(Failed(data=[scoring_raised, StepRaised("solve", [], "ValueError: bad case")])),
        EndedTask(Crashed(message="Worker tcp://10.0.0.7:4711 was lost")),
    ]

    outcomes = job_outcomes(groups, futures)

    assert outcomes == JobOutcomes(
        solved_rows=SOLVED * 3,
        scored_rows=SCORED,
        failures=[
            JobFailure(job="c", stage="score", error="OSError: [Errno 28] No space left on device"),
            JobFailure(job="d", stage="solve", error="ValueError: bad case"),
            JobFailure(job="e", stage="job", error="CrashedRun: Worker tcp://10.0.0.7:4711 was lost"),
            JobFailure(job="f", stage="job", error="CrashedRun: Worker tcp://10.0.0.7:4711 was lost"),
        ],
    )


def test_tasks_read_as_they_end_are_collected_in_the_groups_order_each_group_handed_on_as_read():
    groups = [JobGroup("m/t1", [job("a", "m/t1")]), JobGroup("m/t2", [job("b", "m/t2")])]
    first_rows = [{"job": "a", "turn": 0}]
    second_rows = [{"job": "b", "turn": 0}]
    futures = [
        EndedTask(Completed(data=[JobRows(first_rows, [])])),
        EndedTask(Completed(data=[JobRows(second_rows, [])])),
    ]
    handed_on = []

    outcomes = job_outcomes(groups, futures, ended=reversed(futures), then=handed_on.append)

    assert outcomes == JobOutcomes(solved_rows=first_rows + second_rows, scored_rows=[], failures=[])
    assert handed_on == [groups[1], groups[0]]
