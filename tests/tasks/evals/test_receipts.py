import logging
import tempfile
from functools import partial
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.benchmarks.threadmed.plan import build_plan, estimate_job
from tasks.benchmarks.threadmed.scorer import judge_thread
from tasks.benchmarks.threadmed.solver import answer_thread
from tasks.evals import estimate
from tasks.evals.config import EvaluationSettings
from tasks.evals.estimate import RunReceipts, estimate_plan, record_receipts
from tasks.evals.receipts import RECEIPTS_DIR, JobDigests, ReceiptBook, estimator_name
from tasks.llm.ledger import CallLedger
from tests.eval_fixtures import OFFLINE, write_dataset

CONFIG = OFFLINE.model_copy(update={"conditions": ["baseline", "oracle"]})
walks: list[str] = []  # the label of each job `counting_estimate_job` walked


def counting_estimate_job(job, ledger, tally) -> None:
    walks.append(job.solve.label)
    estimate_job(job, ledger, tally)


def walked(plan):
    """The estimate of `plan` by walking every job, as with no receipt (the estimator has no name)."""
    return as_rows(estimate_plan(plan, partial(counting_estimate_job)))


def as_rows(estimates) -> list[tuple]:
    return [(e.model, e.role, e.mode, e.calls, e.cached, e.prompt_tokens, e.cost_usd) for e in estimates]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("build"))


@pytest.fixture(scope="module")
def every_call(dataset, tmp_path_factory) -> list:
    """Every call of the plan's jobs, made once by the offline models (the records, in the order made)."""
    run_dir = tmp_path_factory.mktemp("all")
    plan = build_plan(EvaluationSettings(dataset_dir=dataset, run_dir=run_dir, config=CONFIG))
    for job in plan.jobs:
        judge_thread(job.score, answer_thread(job.solve, plan.ledger_dir), plan.ledger_dir)
    return list(CallLedger(plan.ledger_dir).records())


def plan_in(dataset: Path, run_dir: Path):
    return build_plan(EvaluationSettings(dataset_dir=dataset, run_dir=run_dir, config=CONFIG))


def run_jobs(plan, jobs) -> None:
    for job in jobs:
        judge_thread(job.score, answer_thread(job.solve, plan.ledger_dir), plan.ledger_dir)


def test_a_dry_run_counts_the_jobs_done_whole_from_their_receipts_and_walks_only_the_others(
    dataset, tmp_path
):
    plan = plan_in(dataset, tmp_path)
    done, left = plan.jobs[:-1], plan.jobs[-1]
    run_jobs(plan, done)

    assert record_receipts(plan, counting_estimate_job) == len(done)
    walks.clear()
    with_receipts = as_rows(estimate_plan(plan, counting_estimate_job))
    assert walks == [left.solve.label]
    assert with_receipts == walked(plan)
    assert sum(row[3] for row in with_receipts) > 0  # the calls of the job left are still to make
    assert record_receipts(plan, counting_estimate_job) == 0  # nothing new is done whole


def test_jobs_walked_as_their_tasks_end_are_walked_once_and_one_walked_before_its_calls_again_at_the_end(
    dataset, tmp_path, monkeypatch
):
    plan = plan_in(dataset, tmp_path)
    first, second, third, *rest = plan.jobs
    monkeypatch.setattr(estimate, "WALKS_PER_RUN", len(plan.jobs) // 2)  # a walk every two jobs ended
    receipts = RunReceipts(plan, counting_estimate_job)
    run_jobs(plan, [first])
    walks.clear()

    receipts.ended([first])
    assert walks == []  # not a batch yet
    receipts.ended([second])  # its calls are not made yet
    run_jobs(plan, [second, third, *rest])
    receipts.ended([first, third])  # the first is held whole already
    assert walks == [first.solve.label, second.solve.label, third.solve.label]
    walks.clear()
    assert receipts.record() == len(plan.jobs)
    assert walks == [job.solve.label for job in [second, *rest]]

    walks.clear()
    with_receipts = as_rows(estimate_plan(plan, counting_estimate_job))
    assert walks == []
    assert with_receipts == walked(plan)
    assert len(list((plan.ledger_dir / RECEIPTS_DIR).glob("*.parquet"))) == 1


def test_a_receipt_naming_a_call_the_ledger_does_not_hold_is_not_trusted(dataset, tmp_path):
    plan = plan_in(dataset, tmp_path)
    job = plan.jobs[0]
    ledger = CallLedger(plan.ledger_dir)
    digest = JobDigests(estimator_name(counting_estimate_job)).of(job)
    book = ReceiptBook(ledger)
    book.write([(digest, [], ["0" * 64])])  # says the job is done, naming a call never made

    assert ReceiptBook(ledger).counts(digest) is None
    expected = walked(plan)
    walks.clear()
    assert as_rows(estimate_plan(plan, counting_estimate_job)) == expected
    assert walks == [job.solve.label for job in plan.jobs]


def test_a_job_digest_changes_with_any_field_of_the_job_and_with_the_estimator(dataset, tmp_path):
    plan, again = plan_in(dataset, tmp_path), plan_in(dataset, tmp_path)
    digests = JobDigests("estimator")
    job = plan.jobs[0]
    renamed = job.model_copy(update={"score": job.score.model_copy(update={"model_name": "other"})})
    other_params = job.model_copy(
        update={
            "solve": job.solve.model_copy(
                update={"model": job.solve.model.model_copy(update={"params": {"temperature": 1}})}
            )
        }
    )
    assert [digests.of(j) for j in plan.jobs] == [JobDigests("estimator").of(j) for j in again.jobs]
    assert len({digests.of(j) for j in plan.jobs}) == len(plan.jobs)
    assert (
        len({digests.of(job), digests.of(renamed), digests.of(other_params), JobDigests("other").of(job)})
        == 4
    )


def test_an_estimator_without_a_name_writes_no_receipt(dataset, tmp_path):
    plan = plan_in(dataset, tmp_path)
    run_jobs(plan, plan.jobs[:1])
    assert estimator_name(partial(estimate_job)) is None
    assert estimator_name(lambda job, ledger, tally: None) is None
    assert record_receipts(plan, partial(estimate_job)) == 0
    assert not (plan.ledger_dir / RECEIPTS_DIR).exists()


def test_a_receipts_file_that_does_not_read_is_left_out_and_named(dataset, tmp_path, caplog):
    plan = plan_in(dataset, tmp_path)
    run_jobs(plan, plan.jobs[:2])
    record_receipts(plan, counting_estimate_job)
    (plan.ledger_dir / RECEIPTS_DIR / "torn.parquet").write_bytes(b"PAR1 not a whole file")
    expected = walked(plan)
    with caplog.at_level(logging.WARNING):
        walks.clear()
        assert as_rows(estimate_plan(plan, counting_estimate_job)) == expected
    assert len(walks) == len(plan.jobs) - 2
    assert "torn.parquet left out" in caplog.text


@given(done=st.sets(st.integers(0, 40)), cut=st.integers(0, 400))
def test_receipts_never_change_what_a_dry_run_counts(dataset, every_call, done, cut):
    """Whichever calls a ledger holds, the dry run counts the same with receipts as by walking every job."""
    with tempfile.TemporaryDirectory() as folder:
        plan = plan_in(dataset, Path(folder))
        ledger = CallLedger(plan.ledger_dir)
        for index, record in enumerate(every_call[:cut]):
            if index % 41 not in done:  # some calls of the run missing, wherever they are
                ledger.write(record)
        record_receipts(plan, counting_estimate_job)
        assert as_rows(estimate_plan(plan, counting_estimate_job)) == walked(plan)
