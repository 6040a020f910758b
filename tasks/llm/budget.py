"""The spending cap of a run: what its calls have cost, what the calls still out may cost, and the cap.

A run with a cap opens one `SpendingBudget` for its ledger folder (`spending_cap`): what the ledger
already records is spent, and the calls of its provider batches still in flight are held at their
estimates. Every call reserves its estimate before it is sent (`complete()`, tasks/llm/call.py), and every
call of a batch before the batch is submitted (tasks/evals/batch_waves.py); once the call's outcome is in
the ledger, its recorded cost replaces the estimate. The first call that would take spent + reserved past
the cap is not made, nor is any after it: the budget has stopped. The calls then in flight still finish
and are paid, so what the run spent is read from the ledger once every one of them has ended
(`stop_after`). A call refused is never written to the ledger, so a re-run with a higher cap makes it,
and pays nothing twice.

The budget's state lives in the process that opened it, for its threads; a run on a Dask cluster keeps it
on the cluster's scheduler while its workers make calls, one budget for all of them (`kept_in`,
tasks/llm/cluster.py).
"""

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from operator import methodcaller
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

COST_CAP = "cost_cap"  # the error kind of a call the cap kept from being made


class CapStop(BaseModel):
    """Where the cap stopped a run, told once every call in flight has ended: the cap, what the run folder's
    ledger then records as spent (every call of every run into it), and the estimate of the first call
    refused."""

    cap_usd: float
    spent_usd: float
    refused_usd: float

    def message(self) -> str:
        return (
            f"stopped at the spending cap of USD {self.cap_usd:,.4f}: a call of about "
            f"USD {self.refused_usd:,.4f} would have passed it with the calls then in flight, so it was not "
            f"made (nor any after it); the run folder has spent USD {self.spent_usd:,.4f} (its ledger, every "
            "call in flight ended). Raise --max-cost (max_cost_usd) and re-run the same command to go on: no "
            "call is paid twice"
        )


@dataclass
class BudgetState:
    """What a budget knows, and its rules: the cap, the money spent, the reservations of calls in flight by
    call key, and the estimate of the first call refused.

    A reservation remembers what the ledger recorded for its call before it was sent (the attempts of
    earlier runs, already in `spent_usd`), so settling it adds only what the call cost since. The rules
    change the state in place: whoever keeps it applies them one at a time (`BudgetStore`).
    """

    cap_usd: float
    spent_usd: float = 0.0
    # call key -> (its estimate, what the ledger recorded for it before it was sent)
    reserved: dict[str, tuple[float, float]] = field(default_factory=dict)
    refused_usd: float | None = None

    def reserve(self, key: str, estimate_usd: float, recorded_usd: float) -> bool:
        """Reserve `estimate_usd` for the call `key` unless that would pass the cap; False stops the budget
        (every later reservation is refused too)."""
        if self.refused_usd is None and self.spent_usd + self.reserved_usd + estimate_usd > self.cap_usd:
            self.refused_usd = estimate_usd
        if self.refused_usd is not None:
            return False
        self.reserved[key] = (estimate_usd, recorded_usd)
        return True

    def hold(self, key: str, estimate_usd: float, recorded_usd: float) -> None:
        """Reserve for a call already out (in a batch at the provider), whatever the cap says."""
        self.reserved[key] = (estimate_usd, recorded_usd)

    def release(self, key: str) -> None:
        """The call `key` was reserved for but not made (another process recorded it meanwhile): its
        reservation goes, nothing spent."""
        del self.reserved[key]

    def settle(self, key: str, recorded_usd: float | None) -> None:
        """The call `key` is back: its reservation gives way to what the ledger records for it now (None:
        unknown, e.g. the call raised; the estimate counts as spent)."""
        estimate_usd, before_usd = self.reserved.pop(key)
        self.spent_usd += estimate_usd if recorded_usd is None else recorded_usd - before_usd

    @property
    def reserved_usd(self) -> float:
        return sum(estimate for estimate, _ in self.reserved.values())

    def to_plain(self) -> dict[str, Any]:
        """The state as plain data (msgpack-able: what a Dask Variable holds)."""
        return {
            "cap_usd": self.cap_usd,
            "spent_usd": self.spent_usd,
            "reserved": {key: list(reservation) for key, reservation in self.reserved.items()},
            "refused_usd": self.refused_usd,
        }

    @classmethod
    def from_plain(cls, plain: dict[str, Any]) -> "BudgetState":
        reserved = {key: (estimate, before) for key, (estimate, before) in plain["reserved"].items()}
        return cls(plain["cap_usd"], plain["spent_usd"], reserved, plain["refused_usd"])


T = TypeVar("T")


class BudgetStore(Protocol):
    """Where a budget's state is kept: this process, or a Dask cluster's scheduler (tasks/llm/cluster.py)."""

    def change(self, rule: Callable[[BudgetState], T]) -> T:
        """Apply `rule` to the state, no other rule in between; its result."""
        ...

    def apply(self, rule: Callable[[BudgetState], object]) -> None:
        """`change`, perhaps not waited for (a Dask worker tells the scheduler): applied after every change
        this process made before it."""
        ...

    def read(self) -> BudgetState:
        """A copy of the state as it is now."""
        ...

    def change_message(self, rule: Callable[[BudgetState], object]) -> Any:
        """`change`, as a message another request to where the state is kept can carry (a Dask worker's
        hold of a call key: tasks/llm/cluster_keys.py); None when it is kept in this process."""
        ...


class ProcessStore:
    """A budget's state kept in this process, for its threads."""

    def __init__(self, state: BudgetState) -> None:
        self._state = state
        self._lock = threading.Lock()

    def change(self, rule: Callable[[BudgetState], T]) -> T:
        with self._lock:
            return rule(self._state)

    def apply(self, rule: Callable[[BudgetState], object]) -> None:
        self.change(rule)

    def read(self) -> BudgetState:
        with self._lock:
            return replace(self._state, reserved=dict(self._state.reserved))

    def change_message(self, rule: Callable[[BudgetState], object]) -> None:
        return None


class SpendingBudget:
    """The cap, the money spent and the reservations of calls in flight (thread-safe): `BudgetState`'s
    rules, applied to the state wherever it is kept (this process unless `store` says otherwise). A rule
    goes to the store as a `methodcaller`, which pickles by name for a Dask scheduler: a lambda went by
    value through cloudpickle, 6% of a worker's time in the Dask evaluation benchmark."""

    def __init__(self, cap_usd: float, spent_usd: float = 0.0, store: BudgetStore | None = None) -> None:
        self.cap_usd = cap_usd
        self._store = store or ProcessStore(BudgetState(cap_usd, spent_usd))

    def reserve(self, key: str, estimate_usd: float, recorded_usd: float = 0.0) -> bool:
        """Reserve `estimate_usd` for the call `key` unless that would pass the cap; False stops the budget
        (every later reservation is refused too)."""
        return self._store.change(methodcaller("reserve", key, estimate_usd, recorded_usd))

    def reservation(self, key: str, estimate_usd: float, recorded_usd: float = 0.0) -> Any:
        """`reserve`, as a message another request to where the state is kept carries, its result coming back
        with that request's answer (in_flight.KeyHolder); None when the state is kept in this process."""
        return self._store.change_message(methodcaller("reserve", key, estimate_usd, recorded_usd))

    def hold(self, key: str, estimate_usd: float, recorded_usd: float = 0.0) -> None:
        """Reserve for a call already out (in a batch at the provider), whatever the cap says."""
        self._store.change(methodcaller("hold", key, estimate_usd, recorded_usd))

    def release(self, key: str) -> None:
        """The call `key` was reserved for but not made (another process recorded it meanwhile): its
        reservation goes, nothing spent. Not waited for on a Dask worker, as `settle`."""
        self._store.apply(methodcaller("release", key))

    def settle(self, key: str, recorded_usd: float | None) -> None:
        """The call `key` is back: its reservation gives way to what the ledger records for it now (None:
        unknown, e.g. the call raised; the estimate counts as spent). Not waited for on a Dask worker: the
        scheduler settles it before the worker lets go of the call's key (tasks/llm/cluster.py)."""
        self._store.apply(methodcaller("settle", key, recorded_usd))

    @property
    def spent_usd(self) -> float:
        return self._store.read().spent_usd

    @property
    def reserved_usd(self) -> float:
        return self._store.read().reserved_usd

    @property
    def stopped(self) -> bool:
        """Whether a call was refused (so every later one is)."""
        return self._store.read().refused_usd is not None

    def stop_after(self, spent_usd: float) -> CapStop | None:
        """Where the cap stopped the run, with `spent_usd` what its ledger records once every call in flight
        has ended; None when every call asked for fitted."""
        refused_usd = self._store.read().refused_usd
        if refused_usd is None:
            return None
        return CapStop(cap_usd=self.cap_usd, spent_usd=spent_usd, refused_usd=refused_usd)

    def state(self) -> BudgetState:
        return self._store.read()

    @contextmanager
    def kept_in(self, store: BudgetStore) -> Iterator[None]:
        """Keep the state in `store` in the body (which holds a copy of it: tasks/llm/cluster.py), then in
        this process again, as `store` left it."""
        self._store = store
        try:
            yield
        finally:
            self._store = ProcessStore(store.read())


# The budget of each capped run in this process, by its ledger folder: every task of the run finds it
# from the ledger it writes to.
_budgets: dict[Path, SpendingBudget] = {}
_budgets_lock = threading.Lock()


@contextmanager
def spending_cap(ledger_dir: Path, budget: SpendingBudget | None) -> Iterator[SpendingBudget | None]:
    """Make every call recorded in `ledger_dir` go through `budget` in the body (no cap when None)."""
    if budget is None:
        yield None
        return
    open_budget_for(ledger_dir, budget)
    try:
        yield budget
    finally:
        close_budget_for(ledger_dir)


def open_budget_for(ledger_dir: Path, budget: SpendingBudget) -> None:
    """Make every call recorded in `ledger_dir` from now on go through `budget` (until `close_budget_for`)."""
    with _budgets_lock:
        _budgets[budget_folder(ledger_dir)] = budget


def close_budget_for(ledger_dir: Path) -> None:
    with _budgets_lock:
        _budgets.pop(budget_folder(ledger_dir), None)


def budget_for(ledger_dir: Path) -> SpendingBudget | None:
    """The budget of the run writing to `ledger_dir`, if it has a cap."""
    if not _budgets:  # the common case, without a lock
        return None
    with _budgets_lock:
        return _budgets.get(budget_folder(ledger_dir))


def budget_folder(ledger_dir: Path) -> Path:
    """The ledger folder a budget is found by: absolute, as every task of the run spells it differently."""
    return Path(os.path.abspath(ledger_dir))
