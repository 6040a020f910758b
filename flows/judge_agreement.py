"""Measure the judges of stored runs against clinicians' ratings of a labels folder; calls no model."""

from prefect import flow

from tasks.benchmarks.threadmed.agreement import measure_agreement
from tasks.benchmarks.threadmed.agreement_settings import AgreementSettings
from tasks.core.provenance import write_run_manifest


@flow(name="judge-agreement")
def judge_agreement(
    run_dirs: list[str],
    labels_dir: str,
    out_dir: str | None = None,
    lake_dir: str = "data_lake",
    settings: AgreementSettings | None = None,
) -> str:
    """agreement.json, agreement.md, a CSV per table and fig_agreement.png for the runs' judges against the
    labels folder's raters (default folder: LABELS/agreement); return the folder."""
    settings = settings or AgreementSettings()
    agreement_dir = measure_agreement(
        run_dirs=run_dirs, labels_dir=labels_dir, out_dir=out_dir, settings=settings
    )
    write_run_manifest(
        lake_dir,
        "judge-agreement",
        {"run_dirs": run_dirs, "labels_dir": labels_dir, "out_dir": agreement_dir, **settings.model_dump()},
    )
    return agreement_dir
