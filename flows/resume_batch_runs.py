"""resume-batch-runs: go on with every run under a folder that waits on provider batches.

The poller of runs made in batch mode (prefect.yaml schedules it): each run folder with batches in
flight is evaluated again with its own benchmark and settings (`batches/run.json`), waiting for nothing:
finished batches are collected into the ledger, the next wave is submitted, and a run whose batch calls
are all done writes its tables (and report). A run that another process is evaluating is left to it.
"""

from pathlib import Path

from prefect import flow, get_run_logger
from prefect.states import State

from flows.evaluation import evaluate_benchmark
from tasks.benchmarks.registry import benchmark
from tasks.evals.batch_runs import waiting_runs
from tasks.evals.config import EvaluationSettings
from tasks.evals.run_lock import RunFolderBusy


@flow(name="resume-batch-runs")
def resume_batch_runs(runs_dir: str, report: bool = True) -> dict[str, str]:
    """Each run folder under `runs_dir` waiting on batches -> how it stands now (by folder)."""
    logger = get_run_logger()
    outcomes = {}
    for run_dir, run in waiting_runs(Path(runs_dir)):
        bench = benchmark(run.benchmark)
        settings = EvaluationSettings[bench.config_model].model_validate(run.settings)
        batch = settings.config.batch.model_copy(update={"wait_s": 0.0})
        settings = settings.model_copy(update={"config": settings.config.model_copy(update={"batch": batch})})
        write_report = (lambda run_dirs, bench=bench: bench.report(run_dirs, None, None)) if report else None
        try:
            outcome = evaluate_benchmark(bench, settings, None, write_report)
        except RunFolderBusy as busy:
            outcomes[str(run_dir)] = str(busy)
            continue
        outcomes[str(run_dir)] = (
            f"{outcome.name}: {outcome.message}" if isinstance(outcome, State) else "finished"
        )
        logger.info("%s: %s", run_dir, outcomes[str(run_dir)])
    return outcomes
