from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import BaseModel

from tasks.benchmarks.consult.contracts import PRIMARY_METRICS
from tasks.benchmarks.consult.summary import summarize
from tasks.evals.config import EvalConfig, ModelSpec
from tasks.evals.jobs import JobGroup, JobRows, StepRaised, solve_and_score_group
from tasks.evals.outputs import JobFailure
from tasks.evals.plan import Job, RunPlan
from tasks.evals.rejudge import ReplayedAnswers, SourceRun, judge_summary, replay_answers, replayed_plan


def message(case_id: str, status: str, cost_usd: float) -> dict:
    failed = status == "failed"
    return {"model": "m", "case_id": case_id, "epoch": 0, "status": status, "cost_usd": cost_usd,
            "error": "503" if failed else None,
            "error_class": "server_error" if failed else None}  # fmt: skip


def score(case_id: str, status: str, error_class: str | None = None) -> dict:
    metrics = dict.fromkeys(PRIMARY_METRICS, 0.5 if status == "completed" else None)
    return {"model": "m", "case_id": case_id, "epoch": 0, "status": status, "diagnosis_parse": "ok",
            "plan_parse": "ok", **metrics, "composite": 0.5 if status == "completed" else None,
            "error": "429" if error_class else None, "error_class": error_class}  # fmt: skip


def test_a_rejudge_counts_the_judges_calls_and_failures_and_not_the_replayed_answers():
    # c1 scored; c2's agent call failed in the source run (so did its score); c3's judge call failed now.
    messages = [message("c1", "ok", 0.25), message("c2", "failed", 0.5), message("c3", "ok", 0.25)]
    scores = [
        score("c1", "completed"),
        score("c2", "failed", "server_error"),
        score("c3", "failed", "rate_limit"),
    ]
    source = summarize("r1", Path("run"), messages, scores)
    assert (source.failed_calls, source.groups[0].cost_usd) == ({"server_error": 1, "rate_limit": 1}, 1.0)

    rejudged = judge_summary(summarize, "r2", Path("new"), messages, scores)
    assert (rejudged.failed_calls, rejudged.failure_examples) == ({"rate_limit": 1}, {"rate_limit": "429"})
    assert rejudged.groups[0].cost_usd == 0.0  # the answers were paid for by the source run
    assert rejudged.groups[0].counts == source.groups[0].counts


class ThreadJob(BaseModel, frozen=True):
    """A solve job of a toy benchmark: one thread answered by model m."""

    thread_id: str

    @property
    def label(self) -> str:
        return f"m/{self.thread_id}"

    @property
    def task_label(self) -> str:
        return self.label

    def row_key(self) -> dict[str, Any]:
        return {"model": "m", "thread_id": self.thread_id}


class GradeJob(BaseModel, frozen=True):
    thread_id: str


def toy_plan(settings: Any) -> RunPlan[ThreadJob, GradeJob]:
    jobs = [Job(solve=ThreadJob(thread_id=t), score=GradeJob(thread_id=t)) for t in ("t1", "t2", "t3", "t4")]
    return RunPlan(
        run_id="r2", run_dir=Path("new"), dataset_dir=Path("build"), dataset_fingerprint="fp", jobs=jobs
    )


def test_a_job_the_source_failed_to_answer_fails_in_the_rejudge_naming_the_sources_failure(tmp_path):
    """It was replayed with no rows: no judgment, no failure, and the re-judged run ended Completed."""
    # t1 answered; t2's solve raised in the source run and t4's task crashed (no rows); t3 has no turn to
    # answer (no rows, no failure); t1's scoring raised there, which kept its answers.
    pq.write_table(
        pa.Table.from_pylist([{"model": "m", "thread_id": "t1", "turn": 0, "run_id": "r1"}]),
        tmp_path / "responses.parquet",
    )
    failures = [
        JobFailure(job="m/t1", stage="score", error="KeyError: 'grade'"),
        JobFailure(job="m/t2", stage="solve", error="OSError: [Errno 28] No space left on device"),
        JobFailure(job="m/t4", stage="job", error="worker lost"),
    ]
    source = SourceRun(
        run_dir=tmp_path, run_id="r1", benchmark="toy", config={}, dataset_dir=Path("build"),
        dataset_fingerprint="fp", failed_jobs=failures,
    )  # fmt: skip
    bench = SimpleNamespace(plan=toy_plan, tables=SimpleNamespace(solved=[SimpleNamespace(name="responses")]))
    settings = SimpleNamespace(config=EvalConfig(models=[ModelSpec(model="openai/m")]))

    plan = replayed_plan(bench, ThreadJob.row_key, source, settings)

    after = f"finish that run (re-run its evaluate command into {tmp_path}), then re-judge it"
    unsolved = f"run r1 holds no answers of this job to re-judge ({failures[1].line()}): {after}"
    crashed = f"run r1 holds no answers of this job to re-judge ({failures[2].line()}): {after}"
    answer = {"model": "m", "thread_id": "t1", "turn": 0, "run_id": "r2"}
    assert [job.solve for job in plan.jobs] == [
        ReplayedAnswers(label="m/t1", task_label="m/t1", rows=[answer]),
        ReplayedAnswers(label="m/t2", task_label="m/t2", rows=[], missing=unsolved),
        ReplayedAnswers(label="m/t3", task_label="m/t3", rows=[]),
        ReplayedAnswers(label="m/t4", task_label="m/t4", rows=[], missing=crashed),
    ]

    def grade(job: GradeJob, solved: list[dict], ledger_dir: Path) -> list[dict]:
        return [{"thread_id": job.thread_id, "graded": len(solved)}]

    state = solve_and_score_group(replay_answers, grade, JobGroup("all", plan.jobs), tmp_path / "ledger")
    assert state.is_failed()
    raised = [result for result in state.data if isinstance(result, StepRaised)]
    assert [(error.stage, error.solved, error.error) for error in raised] == [
        ("solve", [], f"AnswersMissing: {unsolved}"),
        ("solve", [], f"AnswersMissing: {crashed}"),
    ]
    assert state.message == f"m/t2: solve: AnswersMissing: {unsolved}; m/t4: solve: AnswersMissing: {crashed}"
    assert [result for result in state.data if isinstance(result, JobRows)] == [
        JobRows([answer], [{"thread_id": "t1", "graded": 1}]),
        JobRows([], [{"thread_id": "t3", "graded": 0}]),
    ]
