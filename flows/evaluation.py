"""The body every benchmark's evaluate flow shares: plan, solve and score each job, write, summarize, report.

One Prefect task per group of jobs (a model's conditions of a thread, its epochs of a case) solves each, then
scores what it solved (tasks/evals/jobs.py). The calls inside are throttled per provider (tasks/llm/call.py),
in this process or across the worker processes of a Dask cluster (tasks/llm/cluster.py), as is the spending
cap; the worker threads need to outnumber the slots (twice, in each process: tasks/core/runners.py).
Resuming is the ledger's job, not Prefect's result cache: re-run the same parameters to finish a run.
"""

from collections.abc import Callable

from prefect import get_run_logger, unmapped
from prefect.states import Completed, Failed, State
from prefect.utilities.annotations import quote

from tasks.core.preflight import UserError
from tasks.core.run_folder import claim_run_folder
from tasks.core.runners import RunnerSettings, make_task_runner, runner_for_calls
from tasks.evals.batch_runs import AWAITING_BATCHES, batches_left_to_single_calls, make_batch_calls
from tasks.evals.call_totals import ledger_calls, run_calls, spent_usd
from tasks.evals.cap_checks import overspent_refusal
from tasks.evals.config import EvaluationSettings
from tasks.evals.estimate import RunReceipts
from tasks.evals.jobs import evaluate_jobs, job_groups, job_outcomes
from tasks.evals.outputs import (
    RunSummary,
    any_call_succeeded,
    follow_progress,
    publish_run_summary,
    write_manifest,
    write_run_outputs,
)
from tasks.evals.plan import plan_evaluation
from tasks.evals.protocol import Benchmark
from tasks.evals.rejudge import rejudge_refusal
from tasks.evals.run_lock import hold_run_folder
from tasks.evals.spending import calls_shared_by, capped_run
from tasks.llm.ledger import compact_ledger


def evaluate_benchmark(
    bench: Benchmark,
    settings: EvaluationSettings,
    runner: RunnerSettings | None,
    report: Callable[[list[str]], str] | None,
    input_parameter: str | None = None,
) -> RunSummary | State:
    """Write the benchmark's tables, manifest.json (and report/ by `report`) to the run folder.

    An input folder that is not the benchmark's ends the run Failed before anything is written, naming the
    flow parameter that gave it (`input_parameter`, if one did). Ends Failed (after writing every output)
    when calls failed, its message naming each kind of failure with the provider's own error (also logged);
    re-running the same settings finishes it. A run none of whose calls succeeded writes no report.
    The summary counts the run's calls and dollars (every invocation into the folder) beside this
    invocation's. Under a spending cap (`max_cost_usd`) the calls past it are not made: the summary's
    `cost_cap` says where it stopped and what the folder spent once every call in flight ended, and a re-run
    with a higher cap goes on; a folder that has spent more than the cap already is refused (Failed) before
    any call. With roles in batch mode, their calls are
    made first, in waves of provider batches; a run that stops waiting with batches in flight ends
    Completed as AwaitingBatches, writing no tables yet.
    """
    if (refusal := input_refusal(bench, settings, input_parameter)) is not None:
        return Failed(message=refusal)
    with hold_run_folder(settings.run_dir):  # one process per run folder, or every call is paid twice
        claim_run_folder(settings.run_dir, bench.name)
        cap = settings.config.max_cost_usd
        before = ledger_calls(settings.run_dir / "ledger")  # what this invocation adds is counted from here
        spent = spent_usd(before)
        refusal = rejudge_refusal(settings.run_dir, bench) or overspent_refusal(settings.run_dir, cap, spent)
        if refusal is not None:
            return Failed(message=refusal)
        with capped_run(settings.run_dir, cap, spent) as budget:  # counting what the folder spent already
            plan = plan_evaluation(bench.plan, settings)
            if (refusal := batches_left_to_single_calls(settings.run_dir, settings.config)) is not None:
                return Failed(message=refusal)
            if settings.config.batch_roles():
                waves = make_batch_calls(bench, plan, settings)
                if not waves.finished:
                    return Completed(name=AWAITING_BATCHES, message=waves.message())
            # Absolute: a Dask worker started in another folder writes the same ledger, under the same budget.
            ledger = unmapped(plan.ledger_dir.absolute())
            runner = runner_for_calls(runner, settings.config.worker_count())
            # quote(): jobs hold whole cases; Prefect's parameter introspection would cost ~1.5 ms per task.
            steps = {"solve": unmapped(bench.solve), "score": unmapped(bench.score)}
            groups = job_groups(plan.jobs)
            task_runner = make_task_runner(runner)
            # The jobs done whole, for a dry run to count unwalked: each task's jobs walked as it ends.
            receipts = RunReceipts(plan, bench.estimate_job)
            with task_runner as workers, calls_shared_by(workers, plan.ledger_dir, budget):
                quoted = [quote(group) for group in groups]
                done = workers.map(evaluate_jobs, {**steps, "group": quoted, "ledger_dir": ledger})
                # One job that raises fails alone: the tables hold every other job, the summary names it.
                ended = follow_progress(done, plan.run_id, plan.run_dir)
                outcomes = job_outcomes(groups, done, ended, then=lambda group: receipts.ended(group.jobs))
                summary = write_run_outputs(plan, quote(outcomes), bench.tables, bench.summarize)
            # Every call has ended (the runner waited for them): the ledger now says what was spent.
            calls = run_calls(plan.ledger_dir, before)
            receipts.record()
            compact_ledger(plan.ledger_dir)  # the run's segments into one file: what the next run reads fast
            summary = summary.model_copy(
                update={
                    "calls_by_mode": calls.run,
                    "invocation_calls": calls.invocation,
                    "cost_cap": budget.stop_after(calls.spent_usd) if budget is not None else None,
                }
            )
            write_manifest(settings, plan, summary)
            publish_run_summary(summary)
            has_results = any_call_succeeded(plan.ledger_dir)  # else a report would show failures as scores
            if report is not None and has_results:
                report([str(settings.run_dir)])
    if summary.failed:
        return Failed(
            message=failed_run_message(summary, report_skipped=report is not None and not has_results)
        )
    return summary


def input_refusal(bench: Benchmark, settings: EvaluationSettings, input_parameter: str | None) -> str | None:
    """Why the run's input folder is not one the benchmark reads, or the run's sample of it is empty (prefixed
    by the parameter that gave the folder), or None; it is checked before the run folder is touched."""
    try:
        if bench.check_inputs is not None:
            bench.check_inputs(settings.dataset_dir)
        if bench.check_sample is not None:
            bench.check_sample(settings.dataset_dir, settings.config)
    except UserError as error:
        return f"{input_parameter}: {error}" if input_parameter else str(error)
    return None


def failed_run_message(summary: RunSummary, report_skipped: bool) -> str:
    """The Failed state's message, also logged: what failed with the provider's error of each kind."""
    logger = get_run_logger()
    for line in summary.failure_lines():  # the flow run's logs hold what the ledger holds, one per kind
        logger.error(line)
    skipped = " No report was written: no call succeeded." if report_skipped else ""
    if skipped:
        logger.warning(skipped.strip())
    return summary.outcome_message() + skipped
