"""Compare the models of stored runs of one benchmark, pair by pair on the same items; calls no model."""

from prefect import flow

from tasks.benchmarks.compare import compare_models
from tasks.core.provenance import write_run_manifest
from tasks.report.settings import CompareSettings


@flow(name="compare")
def compare_runs(
    run_dirs: list[str],
    out_dir: str,
    models: list[str] | None = None,
    lake_dir: str = "data_lake",
    settings: CompareSettings | None = None,
) -> str:
    """Paired differences, the items where models differ most, compare.md and index.html; the folder."""
    settings = settings or CompareSettings()
    compare_dir = compare_models(run_dirs=run_dirs, out_dir=out_dir, models=models, settings=settings)
    write_run_manifest(
        lake_dir,
        "compare",
        {"run_dirs": run_dirs, "out_dir": compare_dir, "models": models, **settings.model_dump()},
    )
    return compare_dir
