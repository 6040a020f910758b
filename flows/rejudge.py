"""rejudge-run: grade the stored answers of a finished run with another judge, into a new run folder.

For every benchmark with a judge (ThReadMed-QA's turn judge, the consultation's FQR judge; the folder's
benchmark.json says which): the source run's answers are replayed, never asked again, and the benchmark's
own score step judges them through the new folder's ledger (tasks/evals/rejudge.py), with batch mode and
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
    judge: JudgeChoices,
    runner: RunnerSettings | None = None,
    report: bool = True,
) -> RunSummary | State:
    """Write the benchmark's tables (the source's answers, the new judge's grades), manifest.json with its
    `rejudge` entry (and report/) to out_dir.

    `judge.model` is a litellm model string (the source judge's name or model keeps its settings); the
    rubric, temperature, epoch and reply cap change it; the call options apply to the judge alone. Ends
    Failed when judge calls failed (re-run to finish), AwaitingBatches while batch calls are in flight.
    """
    source = read_source_run(Path(run_dir))
    bench = rejudgeable(source, BENCHMARKS)
    settings = rejudge_settings(source, bench.config_model, judge, Path(out_dir))
    record_rejudge_source(settings, source, bench.name)
    write_report = (lambda run_dirs: bench.report(run_dirs, None, None)) if report else None
    return evaluate_benchmark(rejudging(bench, source), settings, runner, write_report)
