"""resume-batch-runs: go on with every run under a folder that waits on provider batches.

The poller of runs made in batch mode (prefect.yaml schedules it): each run folder with batches in
flight is evaluated again, where it is now, with its own benchmark and settings (`batches/run.json`),
waiting for nothing: finished batches are collected into the ledger, the next wave is submitted, and a
run whose batch calls are all done writes its tables (and report). A run that another process is
evaluating is left to it; a run that cannot go on (its dataset gone, its provider failing) is named in
the poll's Failed state, after every other run has been polled.
"""

from pathlib import Path

from prefect import flow, get_run_logger
from prefect.states import Failed, State

from flows.evaluation import evaluate_benchmark
from tasks.benchmarks.registry import run_kind
from tasks.evals.batch_runs import read_batch_run, waiting_runs
from tasks.evals.rejudge import benchmark_for_folder
from tasks.evals.run_lock import RunFolderBusy


@flow(name="resume-batch-runs")
def resume_batch_runs(runs_dir: str, report: bool = True) -> dict[str, str] | State:
    """Each run folder under `runs_dir` waiting on batches -> how it stands now (by folder)."""
    logger = get_run_logger()
    outcomes, errors = {}, {}
    waiting = waiting_runs(Path(runs_dir))
    for run_dir in waiting:
        try:
            run = read_batch_run(run_dir)
            bench = benchmark_for_folder(run_kind(run.benchmark), run_dir)  # a re-judge replays answers
            settings = run.settings_in(run_dir, bench.config_model)
            write_report = (
                (lambda run_dirs, bench=bench: bench.report(run_dirs, None, None)) if report else None
            )
            outcome = evaluate_benchmark(bench, settings, None, write_report)
        except RunFolderBusy as busy:
            outcomes[str(run_dir)] = str(busy)
            continue
        except Exception as error:  # one run's trouble must not keep the others waiting
            errors[str(run_dir)] = str(error)
            logger.error("%s: %s", run_dir, error)
            continue
        outcomes[str(run_dir)] = (
            f"{outcome.name}: {outcome.message}" if isinstance(outcome, State) else "finished"
        )
        logger.info("%s: %s", run_dir, outcomes[str(run_dir)])
    if errors:
        failed = "; ".join(f"{run_dir}: {error}" for run_dir, error in errors.items())
        return Failed(message=f"{len(errors)} of {len(waiting)} waiting runs could not go on: {failed}")
    return outcomes
