"""prefect-dask's task runner, its submissions made cheap enough for thousands of tasks from one flow.

Submitting a task to Dask, prefect-dask (0.3) spends most of the flow process's CPU on two things the run
does not need, measured with cProfile on the evaluation benchmark (2-core machine, load 4-6):

- it serializes the submitting flow's whole Prefect context with each task (`prefect.context.
  serialize_context`: the settings, the flow run, tags; Prefect issue #18191), about 150 ms a task;
- it submits each task as pure, so Dask names it by a token of the function and its arguments: the
  task, its parameters (a job holds a whole case) and the context, pickled once more to be hashed.

An evaluation of 4,800 tasks then spent longer submitting than its calls take, and the Dask workers ran only
the few tasks submitted so far (6-7 of 16 threads each). `FastSubmitDaskTaskRunner` submits every task as
impure (each task run is new: Prefect gives it a new id anyway), and `serialize_context_once` gives prefect-
dask the same dictionary as Prefect's own, the contexts serialized again only when one of them is another
object (a `tags()` block, another flow run, changed settings); each task still gets an asset context of its
own.

On the workers, Prefect's task engine rebuilds the submitting flow's context for every task run
(`prefect.context.hydrated_context`): it validates the whole settings model again (pydantic-settings reading
the environment and `.env` files) and opens two new API clients (each a new SSL context, connection and API
version check). Measured with py-spy on a worker of the same benchmark, that was half of the worker's CPU,
against 14% for the task itself. `run_task_sync_on_worker` runs each task with the settings hydrated once
per process (for each distinct serialized settings) and one API client per worker thread, which Prefect's
`get_client` then returns, as it does to every task run in a flow's own thread pool.
"""

import pickle
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import prefect_dask.client
from prefect import context as prefect_context
from prefect.task_engine import run_task_sync
from prefect.tasks import Task
from prefect_dask import DaskTaskRunner
from prefect_dask.task_runners import PrefectDaskFuture

R = TypeVar("R")

# Of the contexts last serialized: the objects they were (compared by identity, and kept alive so that no
# other object takes their id), and what they serialized to, less the task's asset context.
_last: tuple[tuple[Any, ...], dict[str, Any]] | None = None
_lock = threading.Lock()


def current_contexts() -> tuple[Any, ...]:
    """What `prefect.context.serialize_context` reads, besides the task's asset context: the values of its
    context variables as set (not `get()`, which makes a new empty tags context each time none is set)."""
    return (
        prefect_context.EngineContext.__var__.get(None),
        prefect_context.TaskRunContext.__var__.get(None),
        prefect_context.TagsContext.__var__.get(None),
        prefect_context.SettingsContext.__var__.get(None),
        prefect_context._deployment_id.get(),
        prefect_context._deployment_parameters.get(),
    )


def serialize_context_once(asset_ctx_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """`prefect.context.serialize_context(asset_ctx_kwargs)`, reusing the serialized contexts while they are
    the same objects as last time."""
    global _last
    contexts = current_contexts()
    with _lock:
        last = _last
    if last is None or any(seen is not now for seen, now in zip(last[0], contexts, strict=True)):
        last = (contexts, prefect_context.serialize_context())
        with _lock:
            _last = last
    asset_context = (
        prefect_context.AssetContext.from_task_and_inputs(**asset_ctx_kwargs).serialize()
        if asset_ctx_kwargs
        else {}
    )
    return {**last[1], "asset_context": asset_context}


# On a worker process: the settings contexts hydrated so far, by their serialized form, and each thread's
# API client context for each of them.
_settings_contexts: dict[bytes, prefect_context.SettingsContext] = {}
_thread_clients = threading.local()


def run_task_sync_on_worker(*arguments: Any, context: dict[str, Any], **options: Any) -> Any:
    """`prefect.task_engine.run_task_sync(*arguments, context=context, **options)` with the context's settings
    hydrated once per process and this thread's API client, made once, in place of new ones."""
    serialized = dict(context)
    settings = _hydrated_settings(serialized.pop("settings_context", None))
    with (
        _set(prefect_context.SettingsContext.__var__, settings),
        _set(prefect_context.SyncClientContext.__var__, _thread_client(settings)),
    ):
        return run_task_sync(*arguments, context=serialized, **options)


def _hydrated_settings(serialized: dict[str, Any] | None) -> prefect_context.SettingsContext:
    """The settings context `serialized` stands for (the worker's own when the flow sent none)."""
    if not serialized:
        return prefect_context.get_settings_context()
    key = pickle.dumps(serialized)
    with _lock:
        if (hydrated := _settings_contexts.get(key)) is None:
            hydrated = _settings_contexts[key] = prefect_context.SettingsContext(**serialized)
        return hydrated


def _thread_client(settings: prefect_context.SettingsContext) -> prefect_context.SyncClientContext:
    """This thread's API client context for `settings` (its API address and key), entered once."""
    clients = _thread_clients.__dict__.setdefault("by_settings", {})
    if (client := clients.get(id(settings))) is None:
        with _set(prefect_context.SettingsContext.__var__, settings):
            client = clients[id(settings)] = prefect_context.SyncClientContext()
            client.__enter__()  # opens the client; it lives as long as the worker's thread
    return client


@contextmanager
def _set(variable: ContextVar[Any], value: Any) -> Iterator[None]:
    """`variable` set to `value` in the body: a shared context object, never entered twice at once."""
    token = variable.set(value)
    try:
        yield
    finally:
        variable.reset(token)


class FastSubmitDaskTaskRunner(DaskTaskRunner):
    """prefect-dask's runner, each task submitted as impure with the flow's context serialized once, and run
    on its worker with the settings and API client that worker already has."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        # prefect-dask's client calls these by their module-level names for every task it submits; its task
        # wrapper, pickled to the worker, takes the second with it (by reference: this module's function).
        prefect_dask.client.serialize_context = serialize_context_once
        prefect_dask.client.run_task_sync = run_task_sync_on_worker

    def submit(
        self,
        task: Task[Any, R],
        parameters: dict[str, Any],
        wait_for: Any = None,
        dependencies: Any = None,
    ) -> PrefectDaskFuture[R]:
        """As `DaskTaskRunner.submit`, with `pure=False`: no token of the task and its arguments."""
        if not self._started:
            raise RuntimeError("The task runner must be started before submitting work.")
        future = self.client.submit(
            task,
            parameters=self._optimize_futures(parameters),
            wait_for=self._optimize_futures(wait_for) if wait_for else None,
            dependencies=dependencies,
            return_type="state",
            pure=False,
        )
        return PrefectDaskFuture[R](wrapped_future=future, task_run_id=future.task_run_id)
