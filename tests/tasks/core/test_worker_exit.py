"""A local Dask cluster's worker processes freeze their heaps at exit, after the exit hooks registered
after the preload ran and before those registered before it (tasks/core/worker_exit.py)."""

import subprocess
import sys

from tasks.core.runners import LOCAL_CLUSTER_CONFIG, WORKER_EXIT_MODULE, RunnerSettings, make_task_runner

EXITING_PROCESS = """
import atexit, gc
from tasks.core.worker_exit import dask_setup

atexit.register(lambda: print("registered before, runs after:", gc.get_freeze_count() > 0))
dask_setup(worker=None)
atexit.register(lambda: print("registered after, runs before:", gc.get_freeze_count() > 0))
"""


def test_the_heap_is_frozen_at_exit_between_the_hooks_registered_after_the_preload_and_those_before():
    exited = subprocess.run(
        [sys.executable, "-c", EXITING_PROCESS], capture_output=True, text=True, timeout=60
    )
    assert (exited.returncode, exited.stdout, exited.stderr) == (
        0,
        "registered after, runs before: False\nregistered before, runs after: True\n",
        "",
    )


def test_each_worker_process_of_a_local_cluster_preloads_it():
    runner = make_task_runner(RunnerSettings(kind="dask", dask_workers=3, dask_threads=4))
    assert runner.cluster_kwargs == {
        "n_workers": 3,
        "threads_per_worker": 4,
        "processes": True,
        "host": "127.0.0.1",
        "dashboard_address": None,
        "config": LOCAL_CLUSTER_CONFIG,
        "preload": [WORKER_EXIT_MODULE],
    }


def test_a_running_cluster_s_workers_are_left_as_they_are():
    runner = make_task_runner(RunnerSettings(kind="dask", dask_address="tcp://10.0.0.5:8786"))
    assert (runner.address, runner.cluster_kwargs) == ("tcp://10.0.0.5:8786", {})
