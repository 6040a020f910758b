"""rejudge-run: grade the stored answers of a finished run with another judge, into a new run folder.

For every benchmark with a judge (ThReadMed-QA's turn judge, the consultation's FQR judge; the folder's
benchmark.json says which): the source run's answers are replayed, never asked again, and the benchmark's
own score task judges them through the new folder's ledger (tasks/evals/rejudge.py), with batch mode and
resume as in any run: re-run the same parameters to finish.
"""

from pathlib import Path

from prefect import flow
from prefect.states import State

from flows.evaluation import evaluate_benchmark
from tasks.benchmarks.registry import BENCHMARKS
from tasks.core.runners import RunnerSettings
from tasks.evals.outputs import RunSummary
from tasks.evals.rejudge import (
    JudgeChoices,
    read_source_run,
    record_rejudge_source,
    rejudge_settings,
    rejudgeable,
    rejudging,
)


@flow(name="rejudge-run")
def rejudge_run(
    run_dir: str,
    out_dir: str,
    judge: str,
    rubric: str | None = None,
    temperature: float | None = None,
    epoch: int = 0,
    max_tokens: int | None = None,
    api_base: str | None = None,
    api_key_env: str | None = None,
    max_concurrency: int | None = None,
    timeout_s: float | None = None,
    batch: bool = False,
    batch_wait_s: float | None = None,
    batch_poll_s: float | None = None,
    runner: RunnerSettings | None = None,
    report: bool = True,
) -> RunSummary | State:
    """Write the benchmark's tables (the source's answers, the new judge's grades), manifest.json with its
    `rejudge` entry (and report/) to out_dir.

    `judge` is a litellm model string (the source judge's name or model keeps its settings); `rubric`,
    `temperature`, `epoch` and `max_tokens` change it; the call options apply to the judge alone. Ends
    Failed when judge calls failed (re-run to finish), AwaitingBatches while `batch` calls are in flight.
    """
    choices = JudgeChoices(
        judge=judge,
        rubric=Path(rubric) if rubric else None,
        temperature=temperature,
        epoch=epoch,
        max_tokens=max_tokens,
        api_base=api_base,
        api_key_env=api_key_env,
        max_concurrency=max_concurrency,
        timeout_s=timeout_s,
        batch=batch,
        batch_wait_s=batch_wait_s,
        batch_poll_s=batch_poll_s,
    )
    source = read_source_run(Path(run_dir))
    bench = rejudgeable(source, BENCHMARKS)
    settings = rejudge_settings(source, bench.config_model, choices, Path(out_dir))
    record_rejudge_source(settings, source, bench.name)
    write_report = (lambda run_dirs: bench.report(run_dirs, None, None)) if report else None
    return evaluate_benchmark(rejudging(bench, source), settings, runner, write_report)
