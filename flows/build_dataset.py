"""Build the ThReadMed-QA dataset from Pushshift dumps: ingest -> SQL models -> published dataset."""

from pathlib import Path

from prefect import flow, get_run_logger, unmapped

from tasks.benchmarks.threadmed.publish import dataset_folder, promote_latest, publish_dataset
from tasks.benchmarks.threadmed.settings import BuildSettings
from tasks.benchmarks.threadmed.warehouse import build_warehouse
from tasks.core.provenance import write_run_manifest
from tasks.core.runners import RunnerSettings, make_task_runner
from tasks.data.lake import expand_dump_paths, raw_partitions, warehouse_path
from tasks.data.reddit.ingest import DEFAULT_WORKERS, IngestFilter, check_records_found, ingest_dump_file
from tasks.data.reddit.pseudonym_salt import UNPUBLISHABLE_WARNING, read_pseudonym_salt

# One dump at a time by default: each ingest already uses every core (worker processes parse its
# blocks), and one zstd decoder at a time keeps memory bounded. Dask spreads dumps over machines.
LOCAL_RUNNER = RunnerSettings(max_workers=1)


@flow(name="build-dataset")
def build_dataset(
    submissions: list[str],
    comments: list[str],
    out_dir: str,
    lake_dir: str = "data_lake",
    settings: BuildSettings | None = None,
    versioned: bool = False,
    runner: RunnerSettings | None = None,
    allow_empty: bool = False,
) -> str:
    """Ingest the dumps, run every SQL model with its audits, publish; return the dataset folder.

    `submissions` and `comments` take files, folders or glob patterns. With `versioned`, the dataset
    goes to out_dir/versions/<id> (named by its inputs and settings) and out_dir/latest points at it,
    so scheduled rebuilds keep every earlier version. Dumps already in the lake are not read again.
    The pseudonym salt comes from the environment (THREADMED_PSEUDONYM_SALT), never from a parameter:
    Prefect stores parameters.
    Dumps without a submission or a comment of the subreddit fail the build, unless `allow_empty`.
    """
    settings = settings or BuildSettings()
    salt = read_pseudonym_salt()
    if not salt.publishable:
        get_run_logger().warning(UNPUBLISHABLE_WARNING)
    runner = runner or LOCAL_RUNNER
    posts, replies = expand_dump_paths(submissions), expand_dump_paths(comments)
    keep = IngestFilter(settings.subreddit, settings.start, settings.end)
    with make_task_runner(runner) as task_runner:
        futures = task_runner.map(
            ingest_dump_file,
            {
                "path": [*posts, *replies],
                "kind": ["submissions"] * len(posts) + ["comments"] * len(replies),
                "lake_dir": unmapped(lake_dir),
                "keep": unmapped(keep),
                "keep_truncated": unmapped(settings.keep_truncated),
                "workers": unmapped(DEFAULT_WORKERS if runner.can_spawn_processes else 0),
            },
        )
        receipts = [future.result() for future in futures]
    check_records_found(receipts, keep, allow_empty)
    target = dataset_folder(out_dir, receipts, settings, salt.fingerprint, versioned)
    warehouse = warehouse_path(lake_dir, target)
    build_warehouse(warehouse, raw_partitions(lake_dir, receipts), settings, salt)
    publish_dataset(warehouse, target, receipts, settings, salt.describe())
    if versioned:
        promote_latest(out_dir, Path(target).name)
    write_run_manifest(lake_dir, "build-dataset", {"dumps": [*posts, *replies], "out_dir": target,
                                                   **settings.model_dump(), **salt.describe()})  # fmt: skip
    return target
