"""The call keys being made in a Dask cluster, each held by one worker at a time, on the scheduler
(tasks/llm/cluster.py)."""

import asyncio
import threading
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from distributed import SchedulerPlugin

from tasks.llm.ledger import CallLedger
from tasks.llm.scheduler_values import CHANGE_HANDLER, NAME_PREFIX, SchedulerLink, ValueChange


class KeysOnScheduler(SchedulerPlugin):
    """The call keys being made in the cluster, each held by one worker at a time. A worker asks to hold a
    key and waits here while another holds it; it lets go on its stream (`SchedulerLink.tell`); the keys of
    a worker the scheduler removes (it died, or stopped answering) go back at once.

    Each key going back is numbered, and a hold is answered with the number of the key's last return
    (`KeyHeld`): a worker whose ledger is read through that number has read whatever the key's earlier
    holders recorded of it, and does not read the ledger again for it. The numbers of the latest
    REMEMBERED_KEYS keys are kept; an older key is answered with the last number forgotten.

    A hold may carry a change of a value on the scheduler (`ValuesOnScheduler`: a call's reservation in the
    run's budget) and how far the worker has read the ledger: once the key is held, the change is made in the
    same round trip if that read covers the key's last return, and its result comes with the answer. A
    worker whose read does not cover it reads the ledger first (the call may be recorded there), then makes
    the change itself."""

    name = f"{NAME_PREFIX}-keys"
    idempotent = True  # registered by every run on the cluster: the first one keeps the keys of all

    def __init__(self) -> None:
        self._scheduler: Any = None
        self.holders: dict[str, str] = {}  # key -> the address of the worker holding it
        self._keys_of: defaultdict[str, set[str]] = defaultdict(set)  # worker address -> keys it holds
        self._freed: dict[str, asyncio.Event] = {}  # key -> set when it goes back, if a worker waits
        self.waiting: Counter[str] = Counter()  # key -> workers waiting for it
        self.epoch = uuid.uuid4().hex  # the numbers of a restarted scheduler start again: told apart by this
        self.returns = 0  # how many times a key has gone back
        self._returned_at: dict[str, int] = {}  # key -> the number of its last return; oldest first
        self._forgotten_through = 0  # the number of the last return no longer in _returned_at

    def start(self, scheduler: Any) -> None:
        self._scheduler = scheduler
        scheduler.handlers[HOLD_KEY_HANDLER] = self._hold
        scheduler.stream_handlers[LET_GO_KEY_HANDLER] = self._let_go

    async def _hold(
        self, key: str, worker: str, change: dict[str, Any] | None = None, read_through: Any = None
    ) -> dict[str, Any] | None:
        """Hold `key` for `worker` once no other worker does (a `KeyHeld`, as a dict, with the result of
        `change` as "changed" when it was made: a `ValueChange` as a dict, made when `read_through`, the
        worker's (epoch, returns) read of the ledger, covers the key's last return); None if `worker` has
        left the cluster (the scheduler would never give back what it held). A change that raises lets go
        of the key: the worker gets the error, not the key."""
        self.waiting[key] += 1
        try:
            while key in self.holders:
                await self._freed.setdefault(key, asyncio.Event()).wait()
        finally:
            self.waiting[key] -= 1
            if not self.waiting[key]:
                del self.waiting[key]
        if worker not in self._scheduler.workers:
            return None
        self.holders[key] = worker
        self._keys_of[worker].add(key)
        returned_at = self._returned_at.get(key, self._forgotten_through)
        held = KeyHeld(self.epoch, returned_at, self.returns)
        answer = held._asdict()
        if change is not None and read_through is not None and held.read_by(*read_through):
            try:
                answer["changed"] = self._scheduler.handlers[CHANGE_HANDLER](**change)
            except Exception:
                self._let_go(key, worker)
                raise
        return answer

    def _let_go(self, key: str, worker: str) -> None:
        if self.holders.get(key) == worker:
            self._keys_of[worker].discard(key)
            self._free(key)

    def remove_worker(self, scheduler: Any, worker: str, **kwargs: Any) -> None:
        for key in self._keys_of.pop(worker, ()):
            self._free(key)  # it may have recorded the call before it died

    def _free(self, key: str) -> None:
        del self.holders[key]
        self.returns += 1
        self._returned_at.pop(key, None)  # to the end: the order stays that of the numbers
        self._returned_at[key] = self.returns
        if len(self._returned_at) > REMEMBERED_KEYS:
            self._forgotten_through = self._returned_at.pop(next(iter(self._returned_at)))
        if (freed := self._freed.pop(key, None)) is not None:
            freed.set()


HOLD_KEY_HANDLER = f"{NAME_PREFIX}_hold_key"
LET_GO_KEY_HANDLER = f"{NAME_PREFIX}_let_go_key"
# About 20 MB of the scheduler's memory; a worker holding a key returned before the latest of them reads the
# ledger once, and then no more for any key returned before that read.
REMEMBERED_KEYS = 100_000


class KeyHeld(NamedTuple):
    """A hold's answer: the scheduler's `epoch`, the number of the key's last return (0: it never went back,
    as far as the scheduler remembers) and how many returns there have been."""

    epoch: str
    returned_at: int
    returns: int

    def read_by(self, epoch: str, returns: int) -> bool:
        """Whether a ledger read after the scheduler `epoch` had counted `returns` returns has read what the
        key's earlier holders recorded of it."""
        return epoch == self.epoch and self.returned_at <= returns


class WorkerLeftCluster(RuntimeError):
    """The scheduler removed this worker (it stopped answering) while it waited for a call key."""


class ClusterKeys:
    """A call key held across every worker of the cluster while the call is made (in_flight.KeyHolder), on
    the scheduler (`KeysOnScheduler`): a round trip to hold it (a change of a scheduler value, the call's
    reservation, carried along), a message on the stream to let go.

    A holder reads the ledger (what the other workers appended) only when the key went back since its last
    read of it: a worker lets go of a key after recording its call. Other processes writing the same ledger
    (outside the cluster) are read as any lookup reads them, within call_store.REFRESH_S."""

    def __init__(self, link: SchedulerLink) -> None:
        self._link = link
        self._lock = threading.Lock()
        self._read_through: dict[Path, tuple[str, int]] = {}  # ledger -> (epoch, returns) read before

    @contextmanager
    def hold(self, key: str, ledger: CallLedger, change: ValueChange | None = None) -> Iterator[Any]:
        """Hold `key`; yields the result of `change` if the scheduler made it with the hold, else None (its
        results are never None)."""
        address = self._link.worker.address
        carried: dict[str, Any] = {}
        if change is not None:
            carried = {"change": change._asdict(), "read_through": self._read_of(ledger)}
        answer = self._link.ask(HOLD_KEY_HANDLER, key=key, worker=address, **carried)
        if answer is None:
            raise WorkerLeftCluster(
                f"the Dask scheduler removed the worker {address} while it waited to make the call {key}: "
                "the call is not made (a re-run makes it)"
            )
        changed = answer.pop("changed", None)
        held = KeyHeld(**answer)
        try:
            if not held.read_by(*self._read_of(ledger)):
                ledger.refresh()
                self._read(ledger.root, held)
            yield changed
        finally:
            self._link.tell(LET_GO_KEY_HANDLER, key=key)

    def _read_of(self, ledger: CallLedger) -> tuple[str, int]:
        """How far this process has read `ledger`: the scheduler's epoch and returns counted at its last
        read (none yet: no epoch)."""
        with self._lock:
            return self._read_through.get(ledger.root, ("", -1))

    def _read(self, root: Path, held: KeyHeld) -> None:
        """The ledger was read after the hold's answer: through every return it counted."""
        with self._lock:
            epoch, returns = self._read_through.get(root, ("", -1))
            if epoch != held.epoch or returns < held.returns:
                self._read_through[root] = (held.epoch, held.returns)
