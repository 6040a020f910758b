"""Build the ThReadMed-QA dataset from Pushshift dumps: ingest -> SQL models -> published dataset."""

from pathlib import Path

from prefect import flow, unmapped
from prefect.task_runners import ThreadPoolTaskRunner

from tasks.ingest import IngestFilter, ingest_dump_file
from tasks.lake import raw_partitions, warehouse_path
from tasks.provenance import write_run_manifest
from tasks.publish import dataset_folder, promote_latest, publish_dataset
from tasks.settings import BuildSettings
from tasks.warehouse import build_warehouse


# Dumps are ingested one at a time: each already uses every core (worker processes parse its blocks),
# and one zstd decoder at a time keeps memory bounded.
@flow(name="build-dataset", task_runner=ThreadPoolTaskRunner(max_workers=1))
def build_dataset(
    submissions: list[str],
    comments: list[str],
    out_dir: str,
    lake_dir: str = "data_lake",
    settings: BuildSettings | None = None,
    versioned: bool = False,
) -> str:
    """Ingest the dumps, run every SQL model with its audits, publish; return the dataset folder.

    With `versioned`, the dataset goes to out_dir/versions/<id> (named by its inputs and settings) and
    out_dir/latest points at it, so scheduled rebuilds keep every earlier version.
    """
    settings = settings or BuildSettings()
    dumps = [*submissions, *comments]
    kinds = ["submissions"] * len(submissions) + ["comments"] * len(comments)
    receipts = ingest_dump_file.map(
        dumps,
        kind=kinds,
        lake_dir=unmapped(lake_dir),
        keep=unmapped(IngestFilter.from_settings(settings)),
        keep_truncated=unmapped(settings.keep_truncated),
    ).result()
    target = dataset_folder(out_dir, receipts, settings, versioned)
    warehouse = warehouse_path(lake_dir, target)
    build_warehouse(warehouse, raw_partitions(lake_dir, receipts), settings)
    publish_dataset(warehouse, target, receipts, settings)
    if versioned:
        promote_latest(out_dir, Path(target).name)
    write_run_manifest(
        lake_dir, "build-dataset", {"dumps": dumps, "out_dir": target, **settings.model_dump()}
    )
    return target
