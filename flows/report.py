"""Report evaluation runs from their stored responses and judgments; no model is called."""

from prefect import flow

from tasks.benchmarks.threadmed.report import (
    ReportSettings,
    build_report,
    default_report_dir,
    publish_report_artifacts,
)
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
    report_dir = build_report(
        run_dirs=run_dirs, out_dir=out_dir or default_report_dir(run_dirs), settings=settings
    )
    publish_report_artifacts(report_dir=report_dir)
    write_run_manifest(
        lake_dir, "report", {"run_dirs": run_dirs, "out_dir": report_dir, **settings.model_dump()}
    )
    return report_dir
