"""The worker processes of a local Dask cluster end without Python's last collections of their heaps.

Dask imports this module in each worker process of the clusters the project starts (its `preload`,
tasks/core/runners.py) and calls `dask_setup`. A process that exits runs its exit hooks (Prefect sends the
task runs' last events and logs, logging flushes its handlers), then the interpreter tears down its modules
and runs the cyclic garbage collector over everything left. After an evaluation's tasks that last part took
3.5-3.9 s in each worker (py-spy: `gc_collect_main`), litellm's import graph mostly, while the flow waited
for the cluster to close; with the heap frozen once the exit hooks have run the workers end in 0.3 s. The
objects frozen are never freed by the collector, and the process is ending: the operating system takes its
memory back. Nothing a worker records waits on it: the call ledger writes each record with `os.write`.
"""

import atexit
import gc
from typing import Any


def dask_setup(worker: Any) -> None:
    """Dask's preload hook: at exit, once the exit hooks registered later have run, freeze the heap (the
    hooks registered earlier, logging's and multiprocessing's, still run after it)."""
    atexit.register(gc.freeze)
