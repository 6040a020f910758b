"""Report evaluation runs from their stored responses and judgments; no model is called."""

from prefect import flow

from tasks.benchmarks.registry import benchmark as benchmark_named
from tasks.benchmarks.threadmed.settings import ReportSettings
from tasks.core.provenance import write_run_manifest


@flow(name="report")
def report_runs(
    run_dirs: list[str],
    out_dir: str | None = None,
    lake_dir: str = "data_lake",
    settings: ReportSettings | None = None,
    benchmark: str = "threadmed",
) -> str:
    """Metrics, tables, figures and index.html for the runs, also as Prefect artifacts; return the folder."""
    bench = benchmark_named(benchmark)
    settings = settings or bench.report_settings()
    report_dir = bench.report(run_dirs, out_dir, settings)
    write_run_manifest(
        lake_dir, "report", {"run_dirs": run_dirs, "out_dir": report_dir, **settings.model_dump()}
    )
    return report_dir
