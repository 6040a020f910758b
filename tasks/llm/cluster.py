"""Provider limits, the spending cap and the call keys being made, shared by every process of a Dask cluster.

A Dask run makes its calls in the cluster's worker processes, on one machine or several. What one process
keeps for its threads (tasks/llm/limits.py, budget.py, in_flight.py) is then kept on the cluster's
scheduler, with Dask's own primitives, so that it holds across all the workers:

- a provider's calls in flight (`max_concurrency`): a `distributed.Semaphore` with that many leases. A
  process leases them in blocks (`LeasedSlots`): it asks for as many as its threads wait for, each attempt
  holds one while it is made, and a lease whose call ended goes to a thread of the process that waits
  for one, with no round trip; it goes back to the scheduler as soon as no thread of its own waits for
  it, or once it has served `LEASE_TURNS` calls (so that the other processes waiting get their turn). The
  calls in flight of a process never outnumber its leases, nor the leases of all processes the limit;
- the start of its calls (`requests_per_minute`) and its Retry-After pauses: the earliest time the next
  call may start (wall clock: the machines' clocks must agree, e.g. by NTP), a value kept on the scheduler
  by `ValuesOnScheduler` and changed there in one round trip. A start claims its turn there when the
  provider has a rate; otherwise a process reads it at most every `PAUSE_READ_S`, to learn of pauses;
- a run's spending cap: its budget's state (tasks/llm/budget.py), a value kept there likewise, one budget
  for every worker: a call reserves its estimate before it is sent and settles it after, told on the
  worker's stream to the scheduler, not waited for;
- identical requests in flight at once: the call keys being made, kept by `KeysOnScheduler`
  (tasks/llm/cluster_keys.py). A worker holds a call's key while it makes a call the ledger does not have
  (a round trip; while another worker holds it, it waits there, then reads the call from the ledger) and
  lets go of it on its stream. The ledger is read again only for a key that went back since the worker's
  last read of it (the scheduler numbers the keys going back), not before every call. The call's
  reservation rides on the hold, made by the scheduler in the same round trip once the key is held, when
  the worker's ledger has read what the key's earlier holders recorded (else the worker reads it, then
  reserves: a second round trip). One worker's stream keeps its messages in order, so the scheduler has
  settled a call's budget before another worker may hold its key and reserve for it again.

When a worker dies (kill -9, a lost machine), the keys it held go back as soon as the scheduler removes it
(at once when its connection drops, else after Dask's `distributed.scheduler.worker-ttl`); a provider
lease it held goes back after Dask's `distributed.scheduler.locks.lease-timeout` (30 s by default), and
until then its slot stays taken; what its calls in flight reserved stays reserved in the run's budget (so
the cap errs on the side of stopping). The calls it had in flight are lost, and made again when their
tasks are (the ledger has no record of them).

`shared_by_cluster` turns this on for a run from the flow: the scheduler gets `ValuesOnScheduler` and
`KeysOnScheduler` (so it must import this project, as Dask expects the same software on every machine),
every worker process of the cluster (those that join later included) gets `SharedCalls`, and a capped
run's workers its `SharedBudget`.
"""

import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from distributed import Client, WorkerPlugin

from tasks.core.tokens import load_tokenizer
from tasks.llm import in_flight, limits
from tasks.llm.budget import (
    BudgetState,
    SpendingBudget,
    budget_folder,
    close_budget_for,
    open_budget_for,
)
from tasks.llm.call import import_sending_modules
from tasks.llm.cluster_keys import ClusterKeys, KeysOnScheduler
from tasks.llm.cluster_limits import ClusterLimiter
from tasks.llm.scheduler_values import (
    NAME_PREFIX,
    SchedulerLink,
    SchedulerValue,
    ValueChange,
    ValuesOnScheduler,
)

T = TypeVar("T")


class BudgetGone(RuntimeError):
    """A capped run's budget is not on the scheduler: no call of the run may be made without it."""


class ClusterBudgetStore:
    """A budget's state kept on the cluster's scheduler, one for every process (budget.BudgetStore)."""

    def __init__(self, value: SchedulerValue) -> None:
        self._value = value

    def change(self, rule: Callable[[BudgetState], T]) -> T:
        return self._value.change(partial(_apply_to_budget, rule, self._value.name), unset=None)

    def apply(self, rule: Callable[[BudgetState], object]) -> None:
        self._value.change_later(partial(_apply_to_budget, rule, self._value.name), unset=None)

    def change_message(self, rule: Callable[[BudgetState], object]) -> ValueChange:
        return self._value.change_of(partial(_apply_to_budget, rule, self._value.name), unset=None)

    def read(self) -> BudgetState:
        return BudgetState.from_plain(_existing(self._value.name, self._value.read(unset=None)))


def _apply_to_budget(
    rule: Callable[[BudgetState], T], name: str, plain: dict[str, Any] | None
) -> tuple[dict[str, Any], T]:
    """`rule` applied to the budget `name` as plain data, on the scheduler: its new state and result."""
    state = BudgetState.from_plain(_existing(name, plain))
    result = rule(state)
    return state.to_plain(), result


def _existing(name: str, plain: dict[str, Any] | None) -> dict[str, Any]:
    if plain is None:
        raise BudgetGone(
            f"the spending cap's budget {name} is not on the Dask scheduler (its run has ended, or the "
            "scheduler restarted): the call is not made"
        )
    return plain


def share_with(link: SchedulerLink) -> None:
    """From now on, every call of this process is throttled, and holds its key, across the cluster."""
    limits.make_limiters_with(
        lambda provider, provider_limits: ClusterLimiter(link, provider, provider_limits)
    )
    in_flight.hold_keys_with(ClusterKeys(link))


class SharedCalls(WorkerPlugin):
    """Every call of a worker process shares the cluster's provider limits and key locks; the process
    imports what its calls need as it joins, in the background (the flow is still sending the tasks)."""

    name = f"{NAME_PREFIX}-shared-calls"
    idempotent = True  # registered by every run on the cluster: the first one sets each worker up

    def setup(self, worker: Any) -> None:
        share_with(SchedulerLink.of_worker(worker))
        in_background("import-sending-modules", import_sending_modules)


class SharedBudget(WorkerPlugin):
    """Every call a worker process records in a capped run's ledger goes through the run's shared budget."""

    def __init__(self, ledger_dir: Path, cap_usd: float, value_name: str) -> None:
        self.ledger_dir, self.cap_usd, self.value_name = ledger_dir, cap_usd, value_name
        self.name = f"{NAME_PREFIX}-budget:{ledger_dir}"

    def setup(self, worker: Any) -> None:
        store = ClusterBudgetStore(SchedulerValue(SchedulerLink.of_worker(worker), self.value_name))
        open_budget_for(self.ledger_dir, SpendingBudget(self.cap_usd, store=store))
        in_background("load-tokenizer", load_tokenizer)  # each call's estimate counts its tokens

    def teardown(self, worker: Any) -> None:
        close_budget_for(self.ledger_dir)


def in_background(name: str, work: Callable[[], object]) -> None:
    """Start `work` on a daemon thread of its own: a worker plugin's setup does not wait for it (Dask waits
    for every worker's setup before the flow goes on), and a task that needs it first waits for its import
    or its lock instead."""
    threading.Thread(target=work, name=f"{NAME_PREFIX}-{name}", daemon=True).start()


@contextmanager
def shared_by_cluster(client: Client, ledger_dir: Path, budget: SpendingBudget | None) -> Iterator[None]:
    """In the body, every worker of `client`'s cluster shares its provider limits and key locks, and the run
    writing to `ledger_dir` has one budget for all its workers: `budget`, whose state is on the scheduler
    until the body ends, then back in this process as the workers left it."""
    client.register_plugin(ValuesOnScheduler())
    client.register_plugin(KeysOnScheduler())
    client.register_plugin(SharedCalls())
    if budget is None:
        yield
        return
    folder = budget_folder(ledger_dir)
    value = SchedulerValue(
        SchedulerLink.of_client(client), f"{NAME_PREFIX}/budget/{folder}/{uuid.uuid4().hex}"
    )
    value.set(budget.state().to_plain())
    plugin = SharedBudget(folder, budget.cap_usd, value.name)
    try:
        with budget.kept_in(ClusterBudgetStore(value)):
            client.register_plugin(plugin)
            try:
                yield
            finally:
                client.unregister_worker_plugin(plugin.name)
    finally:
        value.delete()
