"""evaluate-models: answer and judge every sampled thread for every model and condition, then report.

One Prefect task per (model, condition, thread) for inference, then one per (model, condition, thread)
for judging, each judge task starting as soon as its thread's answers exist. The calls inside are
throttled per provider in-process (tasks/llm/call.py); the worker threads only need to outnumber the slots.
Resuming is the ledger's job, not Prefect's result cache: re-run the same parameters to finish a run.
"""

from prefect import flow, unmapped
from prefect.states import Failed, State
from prefect.utilities.annotations import quote

from flows.report import report_runs
from tasks.benchmarks.threadmed.scorer import judge_thread
from tasks.benchmarks.threadmed.solver import answer_thread
from tasks.core.runners import RunnerSettings, make_task_runner
from tasks.evals.config import Condition, EvalConfig, resolve_settings
from tasks.evals.run import (
    RunSummary,
    follow_progress,
    plan_evaluation,
    publish_run_summary,
    write_manifest,
    write_run_outputs,
)
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
) -> RunSummary | State:
    """Write responses.parquet, judgments.parquet, manifest.json (and report/) to run_dir.

    The config is `config`, or the YAML `config_file`, or just `models` (litellm model strings);
    `models`, `judge`, `conditions`, `split`, `limit` and `api_base` override it. The run ends Failed
    (after writing every output) when calls failed; re-running with the same run_dir finishes it.
    """
    settings = resolve_settings(
        dataset_dir=dataset_dir, run_dir=run_dir, config=config, config_file=config_file, models=models,
        judge=judge, conditions=conditions, split=split, limit=limit, api_base=api_base,
    )  # fmt: skip
    with hold_run_folder(settings.run_dir):  # one process per run folder, or every call is paid twice
        plan = plan_evaluation(settings)
        ledger = unmapped(plan.ledger_dir)
        # quote(): jobs hold whole threads; Prefect's parameter introspection would cost ~1.5 ms per task.
        inference_jobs = [quote(j) for j in plan.inference_jobs]
        judge_jobs = [quote(j) for j in plan.judge_jobs]
        task_runner = make_task_runner(runner or RunnerSettings(max_workers=settings.config.worker_count()))
        with task_runner as workers:
            responses = workers.map(answer_thread, {"job": inference_jobs, "ledger_dir": ledger})
            judgments = workers.map(
                judge_thread, {"job": judge_jobs, "responses": responses, "ledger_dir": ledger}
            )
            follow_progress([*responses, *judgments], plan.run_id)
            summary = write_run_outputs(plan, responses, judgments)
        write_manifest(settings, plan, summary)
        publish_run_summary(summary)
        if report:
            report_runs(run_dirs=[run_dir])
    if summary.failed_calls:
        return Failed(message=summary.failure_message())
    return summary
