"""Ingest spread over a local two-worker Dask cluster writes exactly the rows the thread runner writes."""

from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import orjson
import pyarrow.parquet as pq
import pytest
from prefect import flow, unmapped
from prefect.task_runners import ThreadPoolTaskRunner
from prefect_dask import DaskTaskRunner

from tasks.core.dask_runner import FastSubmitDaskTaskRunner
from tasks.core.runners import RunnerSettings, make_task_runner
from tasks.data.reddit.contracts import RAW_COMMENTS, RAW_REJECTS, RAW_SUBMISSIONS
from tasks.data.reddit.ingest import DEFAULT_WORKERS, ingest_dump_file
from tasks.data.reddit.records import IngestFilter
from tests.tasks.data.reddit.test_reader import write_zstd

KEEP = IngestFilter("AskDocs", date(2015, 1, 1), date(2023, 7, 1))
MONTHS = ("2016-01", "2016-02", "2016-03")


def month_records(month: str) -> dict[str, list[bytes]]:
    """All-of-Reddit monthly lines: AskDocs posts and replies, another subreddit, a broken line."""
    year, number = map(int, month.split("-"))
    created = int(datetime(year, number, 10, tzinfo=UTC).timestamp())
    posts, comments = [], []
    for i in range(40):
        subreddit = "AskDocs" if i % 3 else "AskReddit"
        post = f"p{number}x{i}"
        text = "Is this rash something to worry about?"
        posts.append(
            {"id": post, "subreddit": subreddit, "author": f"op{i}", "title": f"Question {i}",
             "selftext": text, "created_utc": created + i}
        )  # fmt: skip
        comments.append(
            {"id": f"c{number}x{i}", "subreddit": subreddit, "link_id": f"t3_{post}",
             "parent_id": f"t3_{post}", "author": "doc", "body": f"See a doctor ({i}).",
             "created_utc": str(created + 60 + i), "author_flair_text": "Physician"}
        )  # fmt: skip
    broken = b'{"id": "x", "subreddit": "AskDocs", '
    return {
        "submissions": [orjson.dumps(p) for p in posts] + [broken],
        "comments": [orjson.dumps(c) for c in comments] + [broken],
    }


@pytest.fixture(scope="module")
def monthly_dumps(tmp_path_factory) -> list[tuple[str, str]]:
    folder = tmp_path_factory.mktemp("dumps")
    dumps = []
    for month in MONTHS:
        lines = month_records(month)
        for kind, prefix in (("submissions", "RS"), ("comments", "RC")):
            path = write_zstd(folder / f"{prefix}_{month}.zst", b"\n".join(lines[kind]) + b"\n")
            dumps.append((str(path), kind))
    return dumps


@flow(name="ingest-monthly-dumps")
def ingest_monthly_dumps(dumps: list[tuple[str, str]], lake_dir: str, workers: int) -> list[dict[str, Any]]:
    paths, kinds = zip(*dumps, strict=True)
    return ingest_dump_file.map(
        list(paths), kind=list(kinds), lake_dir=unmapped(lake_dir), keep=unmapped(KEEP),
        workers=unmapped(workers),
    ).result()  # fmt: skip


def ingest_with(settings: RunnerSettings, dumps: list[tuple[str, str]], lake: Path) -> list[dict[str, Any]]:
    """Run the ingest flow on the runner `settings` choose, the way the build flow adopts it."""
    workers = DEFAULT_WORKERS if settings.can_spawn_processes else 0
    runner = make_task_runner(settings)
    return ingest_monthly_dumps.with_options(task_runner=runner)(dumps, str(lake), workers)


def lake_rows(lake: Path, table: str) -> list[dict[str, Any]]:
    rows = pq.read_table(lake / "raw" / table).to_pylist()
    return sorted(rows, key=lambda row: (row["source_file"], row["source_line"]))


def test_runner_settings_choose_the_engine():
    assert make_task_runner(RunnerSettings(max_workers=3)) == ThreadPoolTaskRunner(max_workers=3)
    remote = RunnerSettings(kind="dask", dask_address="tcp://10.0.0.5:8786")
    assert make_task_runner(remote) == DaskTaskRunner(address="tcp://10.0.0.5:8786")
    local = make_task_runner(RunnerSettings(kind="dask", dask_workers=3))
    # prefect-dask's runner, its submissions made cheap (tasks/core/dask_runner.py)
    assert type(make_task_runner(remote)) is type(local) is FastSubmitDaskTaskRunner
    assert (local.cluster_kwargs["n_workers"], local.cluster_kwargs["host"]) == (3, "127.0.0.1")
    assert not RunnerSettings(kind="dask").can_spawn_processes
    with pytest.raises(ValueError, match="kind is 'threads'"):
        RunnerSettings(dask_address="tcp://127.0.0.1:8786")


@pytest.mark.slow
# On the worker's Prefect API: without one, the test process and each Dask worker start a server of their own.
@pytest.mark.usefixtures("prefect_harness", "one_dask_cluster_at_a_time")
def test_dask_cluster_ingests_the_same_rows_as_threads(monthly_dumps, tmp_path):
    threads = ingest_with(RunnerSettings(max_workers=2), monthly_dumps, tmp_path / "threads")
    dask = ingest_with(RunnerSettings(kind="dask", dask_workers=2), monthly_dumps, tmp_path / "dask")

    for table in (RAW_SUBMISSIONS.name, RAW_COMMENTS.name, RAW_REJECTS.name):
        assert lake_rows(tmp_path / "dask", table) == lake_rows(tmp_path / "threads", table)
    assert [r["summary"] | {"seconds": 0} for r in dask] == [r["summary"] | {"seconds": 0} for r in threads]
    assert [r["summary"]["kept"] for r in dask] == [26] * len(monthly_dumps)
    assert {r["summary"]["rejected"]["invalid_json"] for r in dask} == {1}
