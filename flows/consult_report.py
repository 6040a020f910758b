"""Report consultation benchmark runs from their stored messages and scores; calls no model."""

from prefect import flow

from tasks.benchmarks.consult.benchmark import CONSULT
from tasks.benchmarks.consult.report import ReportSettings
from tasks.core.provenance import write_run_manifest


@flow(name="consult-report")
def consult_report(
    run_dirs: list[str],
    out_dir: str | None = None,
    lake_dir: str = "data_lake",
    settings: ReportSettings | None = None,
) -> str:
    """metrics.json, report.md, figures and index.html for the runs (merged when several share a case set),
    also as Prefect artifacts; return the report folder."""
    settings = settings or ReportSettings()
    report_dir = CONSULT.report(run_dirs, out_dir, settings)
    write_run_manifest(
        lake_dir, "consult-report", {"run_dirs": run_dirs, "out_dir": report_dir, **settings.model_dump()}
    )
    return report_dir
