"""Build the ThReadMed-QA dataset from Pushshift dumps: ingest -> SQL models -> published dataset."""

from prefect import flow, unmapped
from prefect.task_runners import ThreadPoolTaskRunner

from tasks.ingest import IngestFilter, ingest_dump_file
from tasks.lake import raw_partitions, warehouse_path
from tasks.provenance import write_run_manifest
from tasks.publish import publish_dataset
from tasks.settings import BuildSettings
from tasks.warehouse import build_warehouse


# Each ingest task parses its dump in a child process, so two threads keep both cores busy.
@flow(name="build-dataset", task_runner=ThreadPoolTaskRunner(max_workers=2))
def build_dataset(
    submissions: list[str],
    comments: list[str],
    out_dir: str,
    lake_dir: str = "data_lake",
    settings: BuildSettings | None = None,
) -> str:
    """Ingest the dump files, run every SQL model with its audits, publish the dataset; return out_dir."""
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
    warehouse = warehouse_path(lake_dir, out_dir)
    build_warehouse(warehouse, raw_partitions(lake_dir, receipts), settings)
    publish_dataset(warehouse, out_dir, receipts, settings)
    write_run_manifest(
        lake_dir, "build-dataset", {"dumps": dumps, "out_dir": out_dir, **settings.model_dump()}
    )
    return out_dir
