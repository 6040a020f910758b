"""Where a flow's tasks run: threads in the flow-run process (default) or a Dask cluster (prefect-dask).

Flows take a `RunnerSettings` parameter and apply it with
`some_flow.with_options(task_runner=make_task_runner(settings))`; a deployment or the command line
switches engines without code changes, e.g. `--param runner='{"kind": "dask", "dask_address": "..."}'`.
"""

from typing import Literal

from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner
from pydantic import Field, model_validator

from tasks.core.strict import StrictModel


class RunnerSettings(StrictModel):
    """The task-runner choice of one flow run."""

    kind: Literal["threads", "dask"] = Field(
        "threads", description="'threads': a thread pool in the flow-run process; 'dask': a Dask cluster."
    )
    max_workers: int = Field(4, ge=1, description="Threads of the thread pool (ignored by Dask).")
    dask_address: str | None = Field(
        None,
        description="Scheduler of a running Dask cluster, e.g. tcp://10.0.0.5:8786; "
        "none: each flow run starts a local cluster on 127.0.0.1.",
    )
    dask_workers: int = Field(2, ge=1, description="Worker processes of that local cluster.")
    dask_threads: int | None = Field(
        None,
        ge=1,
        description="Threads of each worker process of that local cluster; none: 1 for a build (its tasks "
        "parse), and for an evaluation enough in each process to keep every provider busy (its tasks wait "
        "on calls).",
    )

    @model_validator(mode="after")
    def _address_needs_dask(self) -> "RunnerSettings":
        if self.dask_address is not None and self.kind != "dask":
            raise ValueError("dask_address is set but kind is 'threads'; set kind: dask to use the cluster")
        return self

    @property
    def can_spawn_processes(self) -> bool:
        """Whether a task may start child processes (Dask worker processes are daemonic: they may not)."""
        return self.kind == "threads"


# Dask's settings for a local cluster, in its worker processes and in this one (its scheduler, its nannies).
LOCAL_CLUSTER_CONFIG = {"distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "1s"}
# Imported by each worker process of a local cluster as it starts (Dask's preload).
WORKER_EXIT_MODULE = "tasks.core.worker_exit"


def make_task_runner(settings: RunnerSettings) -> TaskRunner:
    """The task runner that `settings` describe. prefect-dask is imported only when Dask is chosen."""
    if settings.kind == "threads":
        return ThreadPoolTaskRunner(max_workers=settings.max_workers)
    # prefect-dask's runner, its submissions made cheap. Optional: pip install 'threadmed-qa[dask]'
    from tasks.core.dask_runner import FastSubmitDaskTaskRunner, local_cluster

    if settings.dask_address is not None:
        return FastSubmitDaskTaskRunner(address=settings.dask_address)
    # Single-threaded processes unless told: ingest parses JSON under the GIL. Loopback only, no dashboard,
    # so no statistical profiler either: it samples every worker thread every 10 ms for the dashboard (4% of
    # a worker's samples in the Dask evaluation benchmark). The event loops' health check (a warning when
    # one was blocked for 3 s) every second instead of every 20 ms: an idle worker process spent 1.1 s of
    # CPU in 30 s, 0.45 s with it. Its worker processes end without a last garbage collection (worker_exit).
    return FastSubmitDaskTaskRunner(
        cluster_class=local_cluster,
        cluster_kwargs={
            "n_workers": settings.dask_workers,
            "threads_per_worker": settings.dask_threads or 1,
            "processes": True,
            "host": "127.0.0.1",
            "dashboard_address": None,
            "config": LOCAL_CLUSTER_CONFIG,
            "preload": [WORKER_EXIT_MODULE],
        },
    )


def runner_for_calls(settings: RunnerSettings | None, threads: int) -> RunnerSettings:
    """The runner of tasks that mostly wait on model calls, with `threads` threads: a pool of them in this
    process by default; as many in each process of a local Dask cluster given no thread count. There a call
    also waits outside its provider slot for its round trips to the scheduler, and a thread waiting for a
    slot costs nothing: in the Dask evaluation benchmark, 2 processes of 16 threads took 358.4 s, of 32
    (each as many as the whole pool) 338.3 s, of 64 332.5 s (tests/perf/README.md)."""
    if settings is None:
        return RunnerSettings(max_workers=threads)
    if settings.kind == "dask" and settings.dask_address is None and settings.dask_threads is None:
        return settings.model_copy(update={"dask_threads": threads})
    return settings
