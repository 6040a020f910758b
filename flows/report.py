"""Report ThReadMed-QA runs from their stored responses and judgments; no model is called."""

from prefect import flow

from tasks.benchmarks.threadmed.benchmark import THREADMED
from tasks.benchmarks.threadmed.settings import ReportSettings
from tasks.core.provenance import write_run_manifest


@flow(name="report")
def report_runs(
    run_dirs: list[str],
    out_dir: str | None = None,
    lake_dir: str = "data_lake",
    settings: ReportSettings | None = None,
) -> str:
    """Metrics, tables, figures and index.html for the runs, also as Prefect artifacts; return the folder."""
    settings = settings or ReportSettings()
    report_dir = THREADMED.report(run_dirs, out_dir, settings)
    write_run_manifest(
        lake_dir, "report", {"run_dirs": run_dirs, "out_dir": report_dir, **settings.model_dump()}
    )
    return report_dir
