"""The Prefect context sent with the tasks submitted to Dask: serialized once while the contexts are the same
objects, as Prefect's own `serialize_context` gives it, with each task's asset context; hydrated on a worker
once, with one API client per worker process; a map's tasks sent in few graphs, their final states fetched
together (tasks/core/dask_runner.py)."""

import logging
import os
import pickle
import threading
from typing import Any
from uuid import uuid4

import dask
import prefect
import pytest
from distributed import Client
from prefect import context as prefect_context
from prefect import flow, task
from prefect.client.orchestration import get_client
from prefect.settings import PREFECT_API_URL
from prefect.utilities.annotations import quote
from prefect_dask.task_runners import PrefectDaskFuture

from tasks.core import dask_runner
from tasks.core.runners import LOCAL_CLUSTER_CONFIG, RunnerSettings, make_task_runner


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


def prefect_s_own(asset_kwargs: dict | None = None) -> dict:
    """Prefect's own serialization of the current context, less the task's asset context."""
    serialized = prefect_context.serialize_context(asset_kwargs)
    del serialized["asset_context"]
    return serialized


def test_the_shared_context_is_prefect_s_own_and_serialized_once_while_the_same(serializations):
    expected = prefect_s_own()
    serializations.clear()
    first, second = dask_runner.shared_context(), dask_runner.shared_context()
    assert (first, second is first, serializations) == (expected, True, [1])


def test_a_context_that_changes_is_serialized_again(serializations):
    outside = dask_runner.shared_context()
    with prefect.tags("nightly"):
        tagged = dask_runner.shared_context()
        expected_tagged = prefect_s_own()
    again = dask_runner.shared_context()
    assert (tagged, again) == (expected_tagged, outside)
    assert tagged["tags_context"] != outside["tags_context"]
    assert len(serializations) == 4  # outside, in the tags block (and the expected one), outside again


def test_each_task_s_asset_context_is_the_one_prefect_serializes_for_it():
    task_run_id = uuid4()
    asset_kwargs = {"task": a_task, "task_run_id": task_run_id, "task_inputs": {"x": set()}}
    expected = prefect_context.serialize_context({**asset_kwargs, "copy_to_child_ctx": True})["asset_context"]
    assert dask_runner.asset_context(a_task, task_run_id, {"x": set()}) == expected


@task
def where_it_ran(_: int) -> tuple[int, int, str, str | None]:
    """The worker process and thread, a mark of the API client the task got (set by the first task that got
    that client object), and the API address of the settings it ran under."""
    client = get_client(sync_client=True)
    # Two worker threads may get the same new client at once: one atomic `setdefault`, so only the first
    # marks it (a check then a set let both mark it).
    mark = vars(client).setdefault("test_mark", uuid4().hex)
    return os.getpid(), threading.get_ident(), mark, PREFECT_API_URL.value()


@task
def plus_one(x: int) -> int:
    return x + 1


@task
def given_as(value: Any) -> Any:
    return value


@task
def worker_config() -> tuple[bool, str]:
    """Whether Dask's statistical profiler samples this worker's threads; how often its event loop's health
    is checked."""
    return dask.config.get("distributed.worker.profile.enabled"), dask.config.get(
        "distributed.admin.tick.interval"
    )


@flow(task_runner=make_task_runner(RunnerSettings(kind="dask", dask_workers=1, dask_threads=2)))
def tasks_on_one_worker() -> tuple[list[tuple[int, int, str, str | None]], list[int], int, list[Any], Any]:
    """Twelve mapped tasks; then a map over the futures of a map, a map over nothing, a map over quoted values
    and tasks submitted alone."""
    mapped = where_it_ran.map(range(12))
    for future in mapped:
        future.wrapped_future.exception()  # waits for the task, fetching no result
    runs = [future.result() for future in mapped]
    given = [future.result() for future in [*plus_one.map(plus_one.map([10, 20, 30])), *plus_one.map([])]]
    quoted = [future.result() for future in given_as.map([quote({"job": (1, 2)}), quote(["a", "b"])])]
    return runs, given, plus_one.submit(41).result(), quoted, worker_config.submit().result()


@pytest.fixture
def graph_sizes(monkeypatch) -> list[int]:
    """The number of tasks in each graph a Dask client sends to its scheduler."""
    sizes: list[int] = []
    original = Client._graph_to_futures

    def counted(self, dsk, keys, *arguments, **options):
        sizes.append(len(keys))
        return original(self, dsk, keys, *arguments, **options)

    monkeypatch.setattr(Client, "_graph_to_futures", counted)
    return sizes


@pytest.fixture
def gathers(monkeypatch) -> list[int]:
    """The number of futures each gather of a Dask client fetches (a future's result is a gather of one)."""
    sizes: list[int] = []
    original = Client._gather

    async def counted(self, futures, *arguments, **options):
        sizes.append(len(futures))
        return await original(self, futures, *arguments, **options)

    monkeypatch.setattr(Client, "_gather", counted)
    return sizes


@pytest.mark.usefixtures("prefect_harness", "one_dask_cluster_at_a_time")
def test_a_worker_runs_each_task_under_the_flow_s_settings_with_its_process_s_one_api_client(
    graph_sizes, gathers
):
    runs, mapped_twice, alone, quoted, config = tasks_on_one_worker()
    processes, _, clients, _ = (set(column) for column in zip(*runs, strict=True))
    assert (len(runs), len(processes), len(clients)) == (12, 1, 1)
    assert {api for *_, api in runs} == {PREFECT_API_URL.value()}  # the harness's server, not the default
    # Each map's tasks went to the scheduler in one graph, the futures of one map resolved in the next; a
    # quoted value reached its task as it was; the worker does not profile (no dashboard shows it) and
    # checks its event loop every second.
    assert (mapped_twice, alone, quoted, config, graph_sizes) == (
        [12, 22, 32],
        42,
        [{"job": (1, 2)}, ["a", "b"]],
        (False, "1s"),
        [12, 3, 3, 2, 1, 1],
    )
    assert gathers[0] == 12  # the first result fetched those of its whole map, all done


@pytest.mark.parametrize(
    ("tasks", "sizes"),
    [(1, [1]), (64, [64]), (65, [64, 1]), (2400, [64, 512, 512, 512, 512, 288]), (64 + 1024, [64, 512, 512])],
)
def test_a_map_goes_to_the_scheduler_in_a_first_graph_of_64_then_in_graphs_of_512(tasks, sizes):
    assert dask_runner.graph_sizes(tasks) == sizes


def test_a_local_cluster_s_config_holds_for_its_scheduler_in_this_process_and_only_there():
    with dask_runner.local_cluster(
        n_workers=0, processes=False, dashboard_address=None, config=LOCAL_CLUSTER_CONFIG
    ) as cluster:
        assert cluster.scheduler.periodic_callbacks["tick"].callback_time == 1000  # ms
    assert dask.config.get("distributed.admin.tick.interval") == "20ms"  # Dask's default, left as it was


def test_a_quoted_value_goes_to_dask_unwalked_and_a_prefect_future_as_its_dask_future():
    inside, outside = PrefectDaskFuture(object(), uuid4()), PrefectDaskFuture(object(), uuid4())
    job = quote([inside, {"turns": ["a"]}])
    given = dask_runner.dask_futures({"job": job, "upstream": [outside], "n": 3})
    assert given == {"job": job, "upstream": [outside.wrapped_future], "n": 3}
    assert given["job"] is job and given["job"][0][0] is inside


def test_a_quoted_parameter_reaches_the_worker_quoted_as_it_was():
    parameters = {"job": quote({"turns": ("a", "b")}), "solve": len, "n": 3}
    assert pickle.loads(pickle.dumps(parameters))["job"] == quote(({"turns": ("a", "b")},))  # Prefect's own
    sent = pickle.loads(pickle.dumps(dask_runner.shipped(parameters)))
    assert dask_runner.received(sent) == parameters


def test_a_local_cluster_in_this_process_says_only_its_warnings(caplog):
    caplog.set_level(logging.INFO)  # as Prefect's console shows a library's records reaching the root logger
    with dask_runner.local_cluster(
        n_workers=0, processes=False, dashboard_address=None, config=LOCAL_CLUSTER_CONFIG
    ):
        pass
    assert [record.getMessage() for record in caplog.records if record.name.startswith("distributed")] == []
