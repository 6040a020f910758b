"""prefect-dask's task runner, its submissions made cheap enough for thousands of tasks from one flow, and
its task runs on the workers cheap enough for thousands of short tasks.

Submitting a task to Dask, prefect-dask (0.3) spends most of the flow process's CPU on what the run does not
need, measured with cProfile and py-spy on the evaluation benchmark (2-core machine, load 4-6):

- it serializes the submitting flow's whole Prefect context with each task (`prefect.context.
  serialize_context`: the settings, the flow run, tags; Prefect issue #18191), about 150 ms a task;
- it submits each task as pure, so Dask names it by a token of the function and its arguments: the
  task, its parameters (a job holds a whole case) and the context, pickled once more to be hashed;
- it wraps each task in a new local function, which only cloudpickle can pickle, by value, scanning every
  imported module for each one;
- it sends each task of a `map` to the scheduler as a graph of its own. The scheduler reads no more of the
  client's messages while it unpacks one (in its offload thread), so thousands of them, each carrying the
  whole context, queued up in the connection: once the scheduler (in the flow's process, sharing its GIL
  with the submitting thread) fell 30 s behind, the kernel timed the connection out (`distributed.comm.
  timeouts.tcp`, TCP_USER_TIMEOUT), Dask's client failed to reconnect ("dictionary changed size during
  iteration", its futures changing under it) and the flow waited for its tasks forever.

`FastSubmitDaskTaskRunner` submits the tasks of a `map` in a few graphs (`Client.map`: the first 64 tasks
alone, so that the workers start on them while the flow sends the rest), each task as impure (each task
run is new: Prefect gives it a new id anyway) to `run_task_on_worker`, a module-level function pickled by
reference. The flow's context is serialized once while its contexts are the same objects
(`shared_context`: a `tags()` block, another flow run or changed settings serialize it again) and is
scattered to the workers once per map, as data its tasks depend on (each worker reads it once; the
scheduler never unpacks it); each task gets an asset context of its own. A quoted parameter (`quote()`, as
the evaluation passes each job, a whole case) is left unwalked, as Prefect's engine leaves it: the runner
does not look inside it for futures, and it travels pickled ahead as a `Quoted`, which Dask does not walk
either, to be quoted again on the worker (a `quote()` does not survive pickling). Waiting for one task
run of a map, or for its result, fetches the final states of every finished task run of the map in one
gather (`GraphFuture`), not one round trip each.

On the workers, Prefect's task engine rebuilds the submitting flow's context for every task run
(`prefect.context.hydrated_context`): it validates the whole settings model again (pydantic-settings reading
the environment and `.env` files) and opens two new API clients (each a new SSL context, connection and API
version check). Measured with py-spy on a worker of the same benchmark, that was half of the worker's CPU,
against 14% for the task itself. `run_task_on_worker` runs each task with the settings hydrated once per
process (for each distinct serialized settings) and one API client per worker process, which Prefect's
`get_client` then returns, as it does to every task run in a flow's own thread pool (whose threads share
the flow's client). One client per worker thread made each of a worker's 32 threads open its own (an SSL
context, a connection, a version check) as the run started, while the first calls waited.
"""

import asyncio
import logging
import pickle
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar
from uuid import UUID, uuid4

import dask
from distributed import Future, LocalCluster
from distributed.protocol import pickle as dask_pickle
from prefect import context as prefect_context
from prefect.client.schemas.objects import State
from prefect.futures import PrefectFutureList
from prefect.task_engine import run_task_async, run_task_sync
from prefect.tasks import Task
from prefect.utilities.annotations import quote
from prefect.utilities.collections import StopVisiting, visit_collection
from prefect.utilities.engine import collect_task_run_inputs_sync
from prefect_dask import DaskTaskRunner
from prefect_dask.task_runners import PrefectDaskFuture

R = TypeVar("R")
# A map's first graph: as many tasks as the workers of a typical cluster run at once (2 processes of 32
# threads); the rest follow in graphs of GRAPH_TASKS.
FIRST_GRAPH_TASKS = 64
GRAPH_TASKS = 512


def local_cluster(**cluster_kwargs: Any) -> LocalCluster:
    """A `LocalCluster` whose `config`, which Dask sends to its worker processes, holds for its scheduler and
    nannies in this process too, and whose logs in this process are held to its `silence_logs` (WARNING)."""
    # Dask holds them there by setting the level of its logger's stream handlers. Under Prefect's logging
    # that logger has none and sends its records to Prefect's console: a `threadmed build --dask` printed 35
    # INFO lines of the scheduler and the nannies starting and closing among its own.
    if silence_logs := cluster_kwargs.get("silence_logs", logging.WARNING):
        logging.getLogger("distributed").setLevel(silence_logs)
    with dask.config.set(cluster_kwargs.get("config", {})):
        return LocalCluster(**cluster_kwargs)


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


def shared_context() -> dict[str, Any]:
    """`prefect.context.serialize_context()` less its asset context: the same dictionary while the contexts
    are the same objects as last time, serialized again when one of them is another."""
    global _last
    contexts = current_contexts()
    with _lock:
        last = _last
    if last is None or any(seen is not now for seen, now in zip(last[0], contexts, strict=True)):
        serialized = prefect_context.serialize_context()
        del serialized["asset_context"]
        last = (contexts, serialized)
        with _lock:
            _last = last
    return last[1]


def asset_context(task: Task[Any, Any], task_run_id: UUID, inputs: dict[str, set[Any]]) -> dict[str, Any]:
    """The serialized asset context of one task run, as `prefect.context.serialize_context` makes it."""
    return prefect_context.AssetContext.from_task_and_inputs(
        task=task, task_run_id=task_run_id, task_inputs=inputs, copy_to_child_ctx=True
    ).serialize()


# On a worker process: the settings contexts hydrated so far, by their serialized form, and the API client
# context of each (by its id: the contexts are kept alive above).
_settings_contexts: dict[bytes, prefect_context.SettingsContext] = {}
_clients: dict[int, prefect_context.SyncClientContext] = {}


def run_task_on_worker(
    task: Task[Any, Any],
    context: dict[str, Any],
    task_asset_context: dict[str, Any],
    task_run_id: UUID,
    parameters: dict[str, Any],
    wait_for: Any,
    dependencies: dict[str, set[Any]],
    *,
    return_type: str,
) -> Any:
    """Prefect's run of `task` (`run_task_sync`, or `run_task_async` for an async task) under the submitting
    flow's `context` and the task's own asset context, the context's settings hydrated once per process and
    the process's API client made once."""
    serialized = {**context, "asset_context": task_asset_context}
    settings = _hydrated_settings(serialized.pop("settings_context", None))
    run = {
        "task": task,
        "task_run_id": task_run_id,
        "parameters": received(parameters),
        "wait_for": wait_for,
        "return_type": return_type,
        "dependencies": dependencies,
        "context": serialized,
    }
    with (
        _set(prefect_context.SettingsContext.__var__, settings),
        _set(prefect_context.SyncClientContext.__var__, _process_client(settings)),
    ):
        if task.isasync:
            return asyncio.run(run_task_async(**run))
        return run_task_sync(**run)


def _hydrated_settings(serialized: dict[str, Any] | None) -> prefect_context.SettingsContext:
    """The settings context `serialized` stands for (the worker's own when the flow sent none)."""
    if not serialized:
        return prefect_context.get_settings_context()
    key = pickle.dumps(serialized)
    with _lock:
        if (hydrated := _settings_contexts.get(key)) is None:
            hydrated = _settings_contexts[key] = prefect_context.SettingsContext(**serialized)
        return hydrated


def _process_client(settings: prefect_context.SettingsContext) -> prefect_context.SyncClientContext:
    """The process's API client context for `settings` (its API address and key), entered once; httpx's
    client is safe to share between threads, as Prefect's thread pool shares the flow's."""
    with _lock:
        if (client := _clients.get(id(settings))) is None:
            with _set(prefect_context.SettingsContext.__var__, settings):
                client = _clients[id(settings)] = prefect_context.SyncClientContext()
                client.__enter__()  # opens the client; it lives as long as the worker process
        return client


@contextmanager
def _set(variable: ContextVar[Any], value: Any) -> Iterator[None]:
    """`variable` set to `value` in the body: a shared context object, never entered twice at once."""
    token = variable.set(value)
    try:
        yield
    finally:
        variable.reset(token)


def task_run_inputs(parameters: dict[str, Any], dependencies: dict[str, set[Any]]) -> dict[str, set[Any]]:
    """Each parameter's upstream task runs (the futures in it, by their `task_run_id`) and those `map` found
    for it, as prefect-dask's client records them."""
    return {
        name: collect_task_run_inputs_sync(value, future_cls=Future) | dependencies.get(name, set())
        for name, value in parameters.items()
    }


def dask_futures(expr: Any) -> Any:
    """`expr` with each Prefect future in it as the Dask future it wraps (so Dask passes its result), as
    prefect-dask's runner makes it, but not looking inside `quote()`: like Prefect's engine, which passes a
    quoted value as it is, it leaves a quoted job unwalked (a whole case: some 1.5 ms a task)."""

    def dask_future(value: Any) -> Any:
        if isinstance(value, quote):
            raise StopVisiting
        return value.wrapped_future if isinstance(value, PrefectDaskFuture) else value

    return visit_collection(expr, visit_fn=dask_future, return_data=True)


class Quoted:
    """A quoted parameter on its way to a worker, pickled ahead. A `quote()` does not survive pickling
    (Prefect 3.8: it is a tuple subclass, and comes back wrapped in one more tuple), so its value travels
    bare, and Dask passes this object as it is, unwalked. Pickled here, with Python's own pickler (Dask's
    `pickle.dumps`, which falls back to cloudpickle), the value reaches the scheduler as bytes: cloudpickle,
    which Dask pickles a graph with, walked the 2,400 jobs of the Dask evaluation benchmark (21 MB) object by
    object on the event loop of the flow's Dask client, and the scheduler, in the same process, unpickled
    them all again, stalling both loops for 4-5 s as the run started."""

    __slots__ = ("pickled",)

    def __init__(self, value: Any) -> None:
        self.pickled = dask_pickle.dumps(value)

    def unwrap(self) -> Any:
        return dask_pickle.loads(self.pickled)


def shipped(parameters: dict[str, Any]) -> dict[str, Any]:
    """The parameters as a task's Dask arguments, each quoted one as `Quoted`."""
    return {key: Quoted(arg.unwrap()) if isinstance(arg, quote) else arg for key, arg in parameters.items()}


def received(parameters: dict[str, Any]) -> dict[str, Any]:
    """The parameters as they were before `shipped`."""
    return {
        key: quote(sent.unwrap()) if isinstance(sent, Quoted) else sent for key, sent in parameters.items()
    }


@dataclass(frozen=True)
class Submission:
    """One task run asked of the runner: what `TaskRunner.submit` is given."""

    task: Task[Any, Any]
    parameters: dict[str, Any]
    wait_for: Any
    dependencies: dict[str, set[Any]] | None


# The submissions a `map` running in this context has asked for so far (not an attribute of the runner: the
# runner is pickled with the flow, in the context sent to the workers).
_mapped: ContextVar[list[Submission] | None] = ContextVar("mapped_submissions", default=None)


class FastSubmitDaskTaskRunner(DaskTaskRunner):
    """prefect-dask's runner, the tasks of a `map` sent in one graph to `run_task_on_worker` with the flow's
    context serialized once, and run on their worker with the settings and API client it already has."""

    def submit(
        self,
        task: Task[Any, R],
        parameters: dict[str, Any],
        wait_for: Any = None,
        dependencies: dict[str, set[Any]] | None = None,
    ) -> PrefectDaskFuture[R]:
        """As `DaskTaskRunner.submit`; within `map`, the submission is kept for the map's one graph."""
        if not self._started:
            raise RuntimeError("The task runner must be started before submitting work.")
        submission = Submission(task, parameters, wait_for, dependencies)
        if (mapped := _mapped.get()) is not None:
            mapped.append(submission)
            return None  # type: ignore[return-value]  # `map` returns the futures of the whole graph
        return self._submit_graph([submission])[0]

    def map(
        self, task: Task[Any, R], parameters: dict[str, Any], wait_for: Any = None
    ) -> PrefectFutureList[PrefectDaskFuture[R]]:
        """As `DaskTaskRunner.map` (Prefect's own mapping of the parameters), its tasks sent in one graph."""
        submissions: list[Submission] = []
        token = _mapped.set(submissions)
        try:
            super().map(task, parameters, wait_for)
        finally:
            _mapped.reset(token)
        return PrefectFutureList(self._submit_graph(submissions))

    def _submit_graph(self, submissions: list[Submission]) -> list["GraphFuture[Any]"]:
        """The submissions as impure tasks of Dask graphs (`graph_sizes`), each with the task-run inputs and
        asset context prefect-dask's client gives it, sharing the flow's serialized context."""
        if not submissions:  # a map over nothing
            return []
        # The context (some 100 KB: the flow run, its parameters, the settings) as data the graph's tasks
        # depend on: each worker gets it once, not once per task, and Dask's scheduler never unpacks it.
        context = self.client.scatter(shared_context(), broadcast=True, hash=False)
        graph = Graph()
        start = 0
        for size in graph_sizes(len(submissions)):
            graph.futures.extend(self._send_graph(submissions[start : start + size], context, graph))
            start += size
        return graph.futures

    def _send_graph(
        self, submissions: list[Submission], context: Future, graph: "Graph"
    ) -> list["GraphFuture[Any]"]:
        """The submissions as impure tasks of one Dask graph, their futures members of `graph`."""
        runs: list[tuple[Any, ...]] = []
        for submission in submissions:
            task_run_id = uuid4()
            parameters = dask_futures(submission.parameters)
            inputs = task_run_inputs(parameters, submission.dependencies or {})
            wait_for = dask_futures(submission.wait_for) if submission.wait_for else None
            asset = asset_context(submission.task, task_run_id, inputs)
            runs.append((submission.task, context, asset, task_run_id, shipped(parameters), wait_for, inputs))
        futures = self.client.map(
            run_task_on_worker,
            *zip(*runs, strict=True),
            key=[f"{task.name}-{task_run_id}" for task, _, _, task_run_id, *_ in runs],  # names in Dask
            pure=False,
            return_type="state",
        )
        prefect_futures = []
        for future, (_, _, _, task_run_id, *_) in zip(futures, runs, strict=True):
            future.task_run_id = task_run_id  # how a task given this future as a parameter names its input
            prefect_futures.append(GraphFuture[Any](task_run_id, future, graph))
        return prefect_futures


def graph_sizes(tasks: int) -> list[int]:
    """How many of a map's `tasks` go to the scheduler in each graph: the first FIRST_GRAPH_TASKS alone, so
    that the workers start on them (and import what they need) while the flow sends the rest, then graphs
    of at most GRAPH_TASKS, each of which the scheduler unpacks holding the flow process's GIL (3.7 s for
    the 2,400 jobs of the Dask evaluation benchmark in one graph)."""
    sizes = [min(tasks, FIRST_GRAPH_TASKS)]
    for start in range(sizes[0], tasks, GRAPH_TASKS):
        sizes.append(min(GRAPH_TASKS, tasks - start))
    return sizes


class Graph:
    """The task runs of one `map` (or one `submit`): whose final states a wait fetches together."""

    def __init__(self) -> None:
        self.futures: list[GraphFuture[Any]] = []
        self._fetching = threading.Lock()

    def fetch_finished(self) -> None:
        """Fetch the final state of every finished task run of the graph not fetched yet, in one gather (one
        round trip per worker holding them). One by one, the flow spent 16 s (6.7 ms each) collecting the
        2,400 jobs of the Dask evaluation benchmark."""
        with self._fetching:
            finished = {
                number: future.wrapped_future
                for number, future in enumerate(self.futures)
                if not future.fetched and future.wrapped_future.status == "finished"
            }
            if not finished:
                return
            client = next(iter(finished.values())).client
            # A result lost since (its worker died) is left out, and waited for one by one as before.
            for number, result in client.gather(finished, errors="skip").items():
                self.futures[number].take(result)


class GraphFuture(PrefectDaskFuture[R]):
    """A task run `FastSubmitDaskTaskRunner` sent in a graph: waiting for it, or for its result, fetches the
    final states of its graph's other finished task runs too (`Graph.fetch_finished`)."""

    def __init__(self, task_run_id: UUID, wrapped_future: Future, graph: Graph) -> None:
        super().__init__(task_run_id=task_run_id, wrapped_future=wrapped_future)
        self._graph = graph

    @property
    def fetched(self) -> bool:
        return self._final_state is not None

    def take(self, result: Any) -> None:
        """The task's result as its worker returned it: its final state (`return_type="state"`)."""
        if isinstance(result, State):
            self._final_state = result

    def wait(self, timeout: float | None = None) -> None:
        if not self.fetched:
            self._graph.fetch_finished()
        if not self.fetched:
            super().wait(timeout)

    def result(self, timeout: float | None = None, raise_on_failure: bool = True) -> R:
        if not self.fetched:
            self._graph.fetch_finished()
        return super().result(timeout, raise_on_failure)
