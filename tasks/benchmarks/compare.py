"""Compare the models of stored runs of one benchmark (tasks/report/compare.py does the statistics): which
benchmark the runs are of, the checks that they compare, and the task that writes the comparison."""

from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.benchmarks.registry import BENCHMARKS
from tasks.core.preflight import UserError
from tasks.core.run_folder import run_folder_benchmark
from tasks.evals.protocol import Benchmark
from tasks.report.compare import (
    CompareSettings,
    ComparisonSource,
    check_same_items,
    difference_rows,
    differing_item_rows,
    write_comparison,
)
from tasks.report.coverage import RunCoverage
from tasks.report.runs import check_each_run_once, read_run_id

# What a folder that names no benchmark is taken for when no benchmark's run files are all in it: its check
# then says which file is missing.
FALLBACK = "threadmed"


def _holds_run_of(run_dir: Path, benchmark: Benchmark) -> bool:
    try:
        benchmark.comparison.check_run_folder(run_dir)  # type: ignore[union-attr]
    except UserError:
        return False
    return True


def folder_benchmark(run_dir: Path) -> str:
    """The benchmark a run folder names (tasks/core/run_folder.py); for a run from before folders named
    one, the benchmark whose finished run's files it holds."""
    declared = run_folder_benchmark(run_dir)
    if declared is not None:
        return declared
    comparable = [benchmark for benchmark in BENCHMARKS.values() if benchmark.comparison is not None]
    return next((b.name for b in comparable if _holds_run_of(run_dir, b)), FALLBACK)


def runs_benchmark(run_dirs: list[Path]) -> Benchmark:
    """The one benchmark of the runs; UserError naming two runs of different benchmarks."""
    names = [folder_benchmark(run_dir) for run_dir in run_dirs]
    for run_dir, name in zip(run_dirs, names, strict=True):
        if name != names[0]:
            raise UserError(
                f"run {run_dir} is a {name} run, run {run_dirs[0]} a {names[0]} run: compare runs of one "
                "benchmark",
                "RUN_DIRS...",
            )
    return BENCHMARKS[names[0]]


def comparison_source(run_dirs: list[Path]) -> ComparisonSource:
    """How the runs' benchmark compares its runs, once each folder is checked to be one of its finished runs,
    given once, and over the same items as the others; UserError otherwise."""
    benchmark = runs_benchmark(run_dirs)
    if benchmark.comparison is None:
        raise UserError(f"comparing {benchmark.name} runs is not supported yet", "RUN_DIRS...")
    source = benchmark.comparison
    for run_dir in run_dirs:
        source.check_run_folder(run_dir)
    check_each_run_once([(read_run_id(run_dir), run_dir) for run_dir in run_dirs])
    check_same_items([(str(run_dir), source.run_items(run_dir)) for run_dir in run_dirs], source.item_noun)
    return source


def run_coverage(run_dir: Path, manifest: dict[str, Any]) -> RunCoverage:
    """What the run's rows lack of the items its manifest planned, read from the tables its benchmark
    compares (ComparisonSource.coverage); unverified for a benchmark with no comparison."""
    benchmark = BENCHMARKS.get(folder_benchmark(run_dir))
    if benchmark is None or benchmark.comparison is None:
        return RunCoverage({}, f"no item check for runs of {folder_benchmark(run_dir)}")
    return benchmark.comparison.coverage(run_dir, manifest)


def check_comparable(run_dirs: list[Path], models: list[str] | None) -> None:
    """UserError, one line, unless the runs compare (comparison_source) and `models` (None: all) are at
    least two of theirs. Cheap: a command checks it before its flow runs."""
    source = comparison_source(run_dirs)
    available = [model for run_dir in run_dirs for model in source.run_models(run_dir)]
    chosen_models(available, models, f"in {source.run_table}")


def chosen_models(available: list[str], asked: list[str] | None, read_from: str) -> list[str]:
    """The models to compare (all by default, in the runs' order); UserError naming a model no run has, or
    when fewer than two are left, saying which models the runs have (`read_from`: where they were read)."""
    have = (
        f"the runs have {', '.join(dict.fromkeys(available))}"
        if available
        else f"the runs hold no row of any model {read_from}"
    )
    unknown = [model for model in asked or [] if model not in available]
    if unknown:
        raise UserError(f"no run has the model(s) {', '.join(unknown)}; {have}", "--models")
    models = list(dict.fromkeys(asked or available))
    if len(models) < 2:
        raise UserError(f"comparing needs two models; {have}", "--models")
    return models


@task(name="compare-models", cache_policy=NO_CACHE)
def compare_models(
    run_dirs: list[str], out_dir: str, models: list[str] | None, settings: CompareSettings
) -> str:
    """Run folders -> out_dir with compare_differences and compare_items (Parquet and CSV), their figure,
    compare.md and index.html (the tables and the runs' browser, two models side by side); returns out_dir."""
    folders = [Path(run_dir) for run_dir in run_dirs]
    comparison = comparison_source(folders).load(folders)
    chosen = chosen_models(comparison.models, models, "in their run tables")
    differences = difference_rows(comparison, chosen, settings)
    items = differing_item_rows(comparison, chosen)
    write_comparison(Path(out_dir), comparison._replace(models=chosen), differences, items, settings)
    return out_dir
