"""evaluate-models: solve and score every planned job of a benchmark, then write outputs and report.

For ThReadMed-QA (the default benchmark) one Prefect task per (model, condition, thread) answers the
thread's turns, then one per (model, condition, thread) judges them, each judge task starting as soon
as its thread's answers exist. The calls inside are throttled per provider in-process
(tasks/llm/call.py); the worker threads only need to outnumber the slots. Resuming is the ledger's
job, not Prefect's result cache: re-run the same parameters to finish a run.
"""

from prefect import flow, unmapped
from prefect.states import Failed, State
from prefect.utilities.annotations import quote

from flows.report import report_runs
from tasks.benchmarks.registry import benchmark as benchmark_named
from tasks.core.runners import RunnerSettings, make_task_runner
from tasks.evals.config import Condition, EvalConfig, RunOverrides, resolve_settings
from tasks.evals.outputs import (
    RunSummary,
    follow_progress,
    publish_run_summary,
    write_manifest,
    write_run_outputs,
)
from tasks.evals.plan import plan_evaluation
from tasks.evals.run_lock import hold_run_folder


@flow(name="evaluate-models")
def evaluate_models(
    dataset_dir: str,
    run_dir: str,
    config: EvalConfig | None = None,
    config_file: str | None = None,
    models: list[str] | None = None,
    judge: str | None = None,
    conditions: list[Condition] | None = None,
    split: str | None = None,
    limit: int | None = None,
    api_base: str | None = None,
    runner: RunnerSettings | None = None,
    report: bool = True,
    benchmark: str = "threadmed",
) -> RunSummary | State:
    """Write the benchmark's two tables, manifest.json (and report/) to run_dir.

    The config is `config`, or the YAML `config_file`, or just `models` (litellm model strings);
    `models`, `judge`, `conditions`, `split`, `limit` and `api_base` override it. The run ends Failed
    (after writing every output) when calls failed; re-running with the same run_dir finishes it.
    """
    bench = benchmark_named(benchmark)
    overrides = RunOverrides(
        models=models, judge=judge, conditions=conditions, split=split, limit=limit, api_base=api_base
    )
    settings = resolve_settings(
        dataset_dir=dataset_dir, run_dir=run_dir, config=config, config_file=config_file, overrides=overrides
    )
    with hold_run_folder(settings.run_dir):  # one process per run folder, or every call is paid twice
        plan = plan_evaluation(bench.plan, settings)
        ledger = unmapped(plan.ledger_dir)
        # quote(): jobs hold whole cases; Prefect's parameter introspection would cost ~1.5 ms per task.
        solve_jobs = [quote(job.solve) for job in plan.jobs]
        score_jobs = [quote(job.score) for job in plan.jobs]
        task_runner = make_task_runner(runner or RunnerSettings(max_workers=settings.config.worker_count()))
        with task_runner as workers:
            solved = workers.map(bench.solve, {"job": solve_jobs, "ledger_dir": ledger})
            scored = workers.map(bench.score, {"job": score_jobs, "solved": solved, "ledger_dir": ledger})
            follow_progress([*solved, *scored], plan.run_id)
            summary = write_run_outputs(plan, solved, scored, bench.tables)
        write_manifest(settings, plan, summary)
        publish_run_summary(summary)
        if report:
            report_runs(run_dirs=[run_dir], benchmark=benchmark)
    if summary.failed_calls:
        return Failed(message=summary.failure_message())
    return summary
