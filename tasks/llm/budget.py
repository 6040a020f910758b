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

The budget lives in this process (as the provider limiters do), so a capped run needs its calls made in
the process that opened it: the threads runner, not Dask.
"""

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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


class SpendingBudget:
    """The cap, the money spent and the reservations of calls in flight, by call key (thread-safe).

    A reservation remembers what the ledger recorded for its call before it was sent (the attempts of
    earlier runs, already in `spent_usd`), so settling it adds only what the call cost since.
    """

    def __init__(self, cap_usd: float, spent_usd: float = 0.0) -> None:
        self.cap_usd = cap_usd
        self._spent_usd = spent_usd
        self._reserved: dict[str, tuple[float, float]] = {}  # key -> (estimate, recorded before)
        self._refused_usd: float | None = None  # the estimate of the first call refused
        self._lock = threading.Lock()

    def reserve(self, key: str, estimate_usd: float, recorded_usd: float = 0.0) -> bool:
        """Reserve `estimate_usd` for the call `key` unless that would pass the cap; False stops the budget
        (every later reservation is refused too)."""
        with self._lock:
            passes = self._spent_usd + self._reserved_usd() + estimate_usd > self.cap_usd
            if self._refused_usd is None and passes:
                self._refused_usd = estimate_usd
            if self._refused_usd is not None:
                return False
            self._reserved[key] = (estimate_usd, recorded_usd)
            return True

    def hold(self, key: str, estimate_usd: float, recorded_usd: float = 0.0) -> None:
        """Reserve for a call already out (in a batch at the provider), whatever the cap says."""
        with self._lock:
            self._reserved[key] = (estimate_usd, recorded_usd)

    def settle(self, key: str, recorded_usd: float | None) -> None:
        """The call `key` is back: its reservation gives way to what the ledger records for it now (None:
        unknown, e.g. the call raised; the estimate counts as spent)."""
        with self._lock:
            estimate_usd, before_usd = self._reserved.pop(key)
            self._spent_usd += estimate_usd if recorded_usd is None else recorded_usd - before_usd

    @property
    def spent_usd(self) -> float:
        with self._lock:
            return self._spent_usd

    @property
    def reserved_usd(self) -> float:
        with self._lock:
            return self._reserved_usd()

    @property
    def stopped(self) -> bool:
        """Whether a call was refused (so every later one is)."""
        with self._lock:
            return self._refused_usd is not None

    def stop_after(self, spent_usd: float) -> CapStop | None:
        """Where the cap stopped the run, with `spent_usd` what its ledger records once every call in flight
        has ended; None when every call asked for fitted."""
        with self._lock:
            if self._refused_usd is None:
                return None
            return CapStop(cap_usd=self.cap_usd, spent_usd=spent_usd, refused_usd=self._refused_usd)

    def _reserved_usd(self) -> float:
        return sum(estimate for estimate, _ in self._reserved.values())


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
    folder = _folder(ledger_dir)
    with _budgets_lock:
        _budgets[folder] = budget
    try:
        yield budget
    finally:
        with _budgets_lock:
            _budgets.pop(folder, None)


def budget_for(ledger_dir: Path) -> SpendingBudget | None:
    """The budget of the run writing to `ledger_dir`, if it has a cap."""
    if not _budgets:  # the common case, without a lock
        return None
    with _budgets_lock:
        return _budgets.get(_folder(ledger_dir))


def _folder(ledger_dir: Path) -> Path:
    return Path(os.path.abspath(ledger_dir))
