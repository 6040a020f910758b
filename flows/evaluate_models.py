"""evaluate-models: answer and judge ThReadMed-QA's sampled threads with every model, then report.

One Prefect task per (model, thread) answers the thread's turns in each condition, judging each
(flows/evaluation.py). Re-run the same parameters to finish a run: the ledger makes only missing calls.
"""

from prefect import flow
from prefect.states import State

from flows.evaluation import evaluate_benchmark
from flows.report import report_runs
from tasks.benchmarks.threadmed.benchmark import THREADMED
from tasks.core.runners import RunnerSettings
from tasks.evals.config import Condition, EvalConfig, RunOverrides, resolve_settings
from tasks.evals.outputs import RunSummary


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
    batch: list[str] | None = None,
    batch_wait_s: float | None = None,
    runner: RunnerSettings | None = None,
    report: bool = True,
) -> RunSummary | State:
    """Write responses.parquet, judgments.parquet, manifest.json (and report/) to run_dir.

    The config is `config`, or the YAML `config_file`, or just `models` (litellm model strings);
    `models`, `judge`, `conditions`, `split`, `limit` and `api_base` override it. `batch` names the
    roles (model, judge) whose calls go through the provider's batch API; after `batch_wait_s` seconds
    the run ends AwaitingBatches with its batches in flight. The run ends Failed (after writing every
    output) when calls failed; re-running with the same run_dir finishes it.
    """
    overrides = RunOverrides(
        models=models,
        roles={"judge": judge} if judge else {},
        settings={"conditions": conditions} if conditions else {},
        split=split,
        limit=limit,
        api_base=api_base,
        batch=batch or [],
        batch_wait_s=batch_wait_s,
    )
    settings = resolve_settings(
        dataset_dir=dataset_dir, run_dir=run_dir, config=config, config_file=config_file, overrides=overrides
    )
    write_report = (lambda run_dirs: report_runs(run_dirs=run_dirs)) if report else None
    return evaluate_benchmark(THREADMED, settings, runner, write_report, input_parameter="dataset_dir")
