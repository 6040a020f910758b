"""The Prefect context sent with each task submitted to Dask: serialized once while the contexts are the same
objects, whole and as Prefect's own `serialize_context` gives it; hydrated on a worker once, with one API
client per worker thread (tasks/core/dask_runner.py)."""

import os
import threading
from uuid import uuid4

import prefect
import pytest
from prefect import context as prefect_context
from prefect import flow, task
from prefect.client.orchestration import get_client
from prefect.settings import PREFECT_API_URL

from tasks.core import dask_runner
from tasks.core.runners import RunnerSettings, make_task_runner


@task
def a_task(x: int) -> int:
    return x


@pytest.fixture
def serializations(monkeypatch) -> list[int]:
    """Counts how often Prefect's own `serialize_context` runs (one entry a run); starts from no memory."""
    runs: list[int] = []
    original = prefect_context.serialize_context

    def counted(*arguments, **options):
        runs.append(1)
        return original(*arguments, **options)

    monkeypatch.setattr(prefect_context, "serialize_context", counted)
    monkeypatch.setattr(dask_runner, "_last", None)
    return runs


def asset_kwargs() -> dict:
    return {"task": a_task, "task_run_id": uuid4(), "task_inputs": {"x": set()}, "copy_to_child_ctx": True}


def test_the_context_is_prefect_s_own_and_serialized_once_while_the_same(serializations):
    first, second = asset_kwargs(), asset_kwargs()
    expected = [prefect_context.serialize_context(kwargs) for kwargs in (first, second)]
    serializations.clear()
    assert [dask_runner.serialize_context_once(kwargs) for kwargs in (first, second)] == expected
    assert serializations == [1]


def test_a_context_that_changes_is_serialized_again(serializations):
    outside = dask_runner.serialize_context_once()
    with prefect.tags("nightly"):
        tagged = dask_runner.serialize_context_once()
        expected_tagged = prefect_context.serialize_context()
    again = dask_runner.serialize_context_once()
    assert (tagged, again) == (expected_tagged, outside)
    assert tagged["tags_context"] != outside["tags_context"]
    assert len(serializations) == 4  # outside, in the tags block (and the expected one), outside again


@task
def where_it_ran(_: int) -> tuple[int, int, str, str | None]:
    """The worker process and thread, a mark of the API client the task got (set by the first task that got
    that client object), and the API address of the settings it ran under."""
    client = get_client(sync_client=True)
    if getattr(client, "test_mark", None) is None:
        client.test_mark = uuid4().hex
    return os.getpid(), threading.get_ident(), client.test_mark, PREFECT_API_URL.value()


@flow(task_runner=make_task_runner(RunnerSettings(kind="dask", dask_workers=1, dask_threads=2)))
def twelve_tasks_on_one_worker() -> list[tuple[int, int, str, str | None]]:
    return [future.result() for future in where_it_ran.map(range(12))]


@pytest.mark.usefixtures("prefect_harness", "one_dask_cluster_at_a_time")
def test_a_worker_runs_each_task_under_the_flow_s_settings_with_its_thread_s_one_api_client():
    runs = twelve_tasks_on_one_worker()
    threads = {(process, thread) for process, thread, _, _ in runs}
    clients = {(process, thread, client) for process, thread, client, _ in runs}
    assert (len(runs), len({process for process, *_ in runs}), len(clients)) == (12, 1, len(threads))
    assert {api for *_, api in runs} == {PREFECT_API_URL.value()}  # the harness's server, not the default
