"""A run's spending cap (`max_cost_usd`), opened on its run folder: what is spent, what is still out.

The accounting is tasks/llm/budget.py's; here it starts from the run folder, so that a re-run counts what
earlier runs paid (the ledger) and what they left at the provider (batches in flight, held at their
estimates until their results are recorded).
"""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from tasks.llm.batches import BatchStore
from tasks.llm.budget import SpendingBudget, spending_cap
from tasks.llm.call import estimated_cost_usd
from tasks.llm.ledger import CallLedger


def open_budget(run_dir: Path, cap_usd: float, spent_usd: float) -> SpendingBudget:
    """The budget of a run in `run_dir` capped at `cap_usd`: `spent_usd` (what its ledger records) spent, the
    calls of its batches in flight held at their estimates."""
    ledger = CallLedger(run_dir / "ledger")
    budget = SpendingBudget(cap_usd, spent_usd=spent_usd)
    store = BatchStore(run_dir / "batches")
    for batch in store.in_flight():
        for key, request in store.requests(batch).items():
            budget.hold(key, estimated_cost_usd(request, batch.options), ledger.recorded_cost_usd(key))
    return budget


@contextmanager
def capped_run(run_dir: Path, cap_usd: float | None, spent_usd: float) -> Iterator[SpendingBudget | None]:
    """Every call of the run in `run_dir` within `cap_usd` in the body (no cap when None), `spent_usd` spent
    already; yields the budget, whose `stop_after` says whether and where the cap stopped the run."""
    budget = None if cap_usd is None else open_budget(run_dir, cap_usd, spent_usd)
    with spending_cap(run_dir / "ledger", budget):
        yield budget


@contextmanager
def calls_shared_by(workers: TaskRunner, ledger_dir: Path, budget: SpendingBudget | None) -> Iterator[None]:
    """In the body, every call the task runner `workers` makes goes through one set of provider limits and,
    for the run writing to `ledger_dir`, one `budget`: across the worker processes of a Dask cluster
    (tasks/llm/cluster.py), as the threads of this process do already."""
    if isinstance(workers, ThreadPoolTaskRunner):
        yield
        return
    # Imported here: distributed is optional (pip install 'threadmed-qa[dask]').
    from tasks.llm.cluster import shared_by_cluster

    with shared_by_cluster(workers.client, ledger_dir, budget):
        yield
