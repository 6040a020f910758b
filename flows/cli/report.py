"""`threadmed report`: the paper's metrics, tables, figures and a browsable page, from stored judgments."""

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel
from rich.console import Console

from flows.cli.errors import reports_errors
from flows.cli.render import console, print_report_summary
from flows.cli.server_launch import start_temporary_server
from tasks.benchmarks.threadmed.settings import ReportSettings
from tasks.core.preflight import check_writable_folder

DEFAULTS = ReportSettings()
# The options every command over stored runs shares.
Lake = Annotated[Path, typer.Option(help="Data lake where the flow run's manifest is recorded.")]
Resamples = Annotated[int, typer.Option(min=100, help="Bootstrap resamples per interval.")]
BootstrapSeed = Annotated[int, typer.Option(help="Bootstrap seed: the same seed gives the same intervals.")]
Level = Annotated[float, typer.Option(min=0.5, max=0.999, help="Confidence level of the intervals.")]


def bootstrap_settings(settings_model: type[BaseModel], resamples: int | None, seed: int | None) -> BaseModel:
    """A report's settings with the resamples and seed chosen (None: its default)."""
    chosen = {"n_resamples": resamples, "seed": seed}
    return settings_model(**{name: value for name, value in chosen.items() if value is not None})


@reports_errors("out", "lake")
def report(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(
            help="Run folder(s) written by evaluate-models. Several runs merge into one report when they "
            "share the dataset and the judge (e.g. a model evaluated later joins the same tables).",
            exists=True,
            file_okay=False,
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            help="Report folder. Default: RUN_DIR/report, or FIRST_RUN_DIR/report-merged for several."
        ),
    ] = None,
    lake: Lake = Path("data_lake"),
    resamples: Resamples = DEFAULTS.n_resamples,
    seed: BootstrapSeed = DEFAULTS.seed,
    level: Level = DEFAULTS.level,
    clustered: Annotated[
        bool,
        typer.Option(
            help="Resample whole conversations for every interval (turns of a conversation are correlated), "
            "not only for the conversation-level metrics."
        ),
    ] = DEFAULTS.clustered,
) -> None:
    """Compute the report of evaluation runs from stored responses and judgments (the `report` flow).

    Never calls a model. Writes metrics.json, report.md (the paper's tables), fig_*.png, the stats_*.parquet
    tables the figures are drawn from, and index.html (tables, figures and a conversation browser in one
    self-contained page) under the report folder, and publishes the tables as Prefect artifacts.
    """
    from tasks.benchmarks.threadmed.run_data import check_run_folder

    def report_flow() -> Callable[..., str]:
        from flows.report import report_runs

        return report_runs

    settings = partial(ReportSettings, n_resamples=resamples, seed=seed, level=level, clustered=clustered)
    report_dir = run_report_flow(run_dirs, out, lake, check_run_folder, report_flow, settings)
    print_report_summary(report_dir, Console())


def run_report_flow(
    run_dirs: list[Path],
    out: Path | None,
    lake: Path,
    check_run_folder: Callable[[Path], None],
    report_flow: Callable[[], Callable[..., str]],
    settings: Callable[[], BaseModel],
) -> Path:
    """Check the run folders (each a run, each run once) and the output folders, say what will be done, then
    run a benchmark's report flow with its `settings()`; the report folder. `report_flow()` imports the flow
    and `settings()` may import the benchmark: Prefect and the plotting libraries take seconds,
    after the first line."""
    from tasks.report.files import default_report_dir
    from tasks.report.runs import check_each_run_once, read_run_id

    for run_dir in run_dirs:
        check_run_folder(run_dir)
    check_each_run_once([(read_run_id(run_dir), run_dir) for run_dir in run_dirs])
    report_dir = out or Path(default_report_dir([str(r) for r in run_dirs]))
    check_writable_folder(report_dir, "--out")
    check_writable_folder(lake, "--lake")
    console.print(
        f"Report of {', '.join(map(str, run_dirs))} into {report_dir}: recomputed from the stored runs, "
        "no model called",
        markup=False,
        soft_wrap=True,
    )
    start_temporary_server()  # while the flow is imported
    return Path(
        report_flow()(
            run_dirs=[str(r) for r in run_dirs],
            out_dir=None if out is None else str(out),
            lake_dir=str(lake),
            settings=settings(),
        )
    )
