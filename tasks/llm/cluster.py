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
  for every worker: a call reserves its estimate before it is sent (a round trip) and settles it after,
  told on the worker's stream to the scheduler, not waited for;
- identical requests in flight at once: the call keys being made, kept by `KeysOnScheduler`. A worker
  holds a call's key while it makes a call the ledger does not have (a round trip; while another worker
  holds it, it waits there, then reads the call from the ledger) and lets go of it on its stream. The
  ledger is read again only for a key that went back since the worker's last read of it (the scheduler
  numbers the keys going back), not before every call. One
  worker's stream keeps its messages in order, so the scheduler has settled a call's budget before another
  worker may hold its key and reserve for it again.

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

import asyncio
import logging
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from distributed import Client, SchedulerPlugin, Semaphore, WorkerPlugin
from distributed.protocol import pickle
from distributed.utils import sync

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
from tasks.llm.ledger import CallLedger
from tasks.llm.request import ProviderLimits

T = TypeVar("T")
logger = logging.getLogger(__name__)

# How stale a worker's view of a provider's pause may be (providers without a rate): reading it is a round
# trip to the scheduler, made at most this often per process and provider instead of once per call.
PAUSE_READ_S = 0.25
NAME_PREFIX = "threadmed"
# How many calls of one process a provider lease serves, one after another, before it goes back to the
# scheduler: a lease taken and given back is two round trips, shared by this many calls; a process whose
# threads always wait for a slot still gives each lease back this often, for the other processes waiting.
LEASE_TURNS = 8


@dataclass(frozen=True)
class SchedulerLink:
    """How a process reaches its cluster's scheduler: a worker through its own connection, the flow through
    its client."""

    scheduler: Any  # an rpc to the scheduler
    loop: Any  # the event loop that rpc runs on
    worker: Any = None  # the worker of this process; None: the flow's client

    @classmethod
    def of_worker(cls, worker: Any) -> "SchedulerLink":
        return cls(worker.scheduler, worker.loop, worker)

    @classmethod
    def of_client(cls, client: Client) -> "SchedulerLink":
        return cls(client.scheduler, client.loop)

    def ask(self, handler: str, **arguments: Any) -> Any:
        """Call one of the scheduler's handlers from this thread (not the loop's) and wait for its answer."""
        return sync(self.loop, getattr(self.scheduler, handler), **arguments)

    def tell(self, handler: str, **arguments: Any) -> None:
        """Send one of the scheduler's stream handlers a message from this thread, not waiting for it: the
        worker's stream to the scheduler (Dask's own, batched) keeps the order of what the worker tells,
        and the scheduler handles each message with the worker's address as `worker`."""
        self.loop.add_callback(self.worker.batched_send, {"op": handler, **arguments})


class ValuesOnScheduler(SchedulerPlugin):
    """Named plain values kept on the scheduler, each change a rule run there whole: the scheduler runs one
    handler at a time on its event loop, so a change is one round trip and needs no lock. Rules come
    pickled, as Dask's own `run_on_scheduler` functions do: the scheduler runs this project's code."""

    name = f"{NAME_PREFIX}-values"
    idempotent = True  # registered by every run on the cluster: the first one keeps the values of all

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}

    def start(self, scheduler: Any) -> None:
        scheduler.handlers[CHANGE_HANDLER] = self._change
        scheduler.handlers[READ_HANDLER] = self._read
        scheduler.handlers[SET_HANDLER] = self._set
        scheduler.stream_handlers[CHANGE_TOLD_HANDLER] = self._change_told

    def _change(self, name: str, rule: bytes, unset: Any) -> Any:
        value, result = pickle.loads(rule)(self._values.get(name, unset))
        self._values[name] = value
        return result

    def _change_told(self, name: str, rule: bytes, unset: Any, worker: str) -> None:
        """A change a worker told on its stream: what goes wrong is logged, as no one waits for it (and an
        error raised here would close the worker's stream)."""
        try:
            self._change(name, rule, unset)
        except Exception:
            logger.exception("a change of %s told by the worker %s failed", name, worker)

    def _read(self, name: str, unset: Any) -> Any:
        return self._values.get(name, unset)

    def _set(self, name: str, value: Any) -> None:
        """Set `name` to `value`; None forgets it."""
        if value is None:
            self._values.pop(name, None)
        else:
            self._values[name] = value


CHANGE_HANDLER = f"{NAME_PREFIX}_change_value"
CHANGE_TOLD_HANDLER = f"{NAME_PREFIX}_change_value_told"
READ_HANDLER = f"{NAME_PREFIX}_read_value"
SET_HANDLER = f"{NAME_PREFIX}_set_value"


class SchedulerValue:
    """A plain (msgpack-able) value on the cluster's scheduler that its processes change one at a time
    (`ValuesOnScheduler`)."""

    def __init__(self, link: SchedulerLink, name: str) -> None:
        self.name = name
        self._link = link

    def read(self, unset: Any) -> Any:
        """The value now; `unset` if it was never set."""
        return self._link.ask(READ_HANDLER, name=self.name, unset=unset)

    def change(self, rule: Callable[[Any], tuple[Any, T]], unset: Any) -> T:
        """Set the value to `rule(value)[0]` (`unset` stands for a value never set), no other change in
        between, and return `rule(value)[1]`. `rule` runs on the scheduler: it must pickle (no lock, client
        or limiter in its closure)."""
        return self._link.ask(CHANGE_HANDLER, name=self.name, rule=pickle.dumps(rule), unset=unset)

    def change_later(self, rule: Callable[[Any], tuple[Any, Any]], unset: Any) -> None:
        """`change`, not waiting for it from a worker: the scheduler applies it after every change this worker
        asked for before (the flow's client waits for it)."""
        if self._link.worker is None:
            self.change(rule, unset)
        else:
            self._link.tell(CHANGE_TOLD_HANDLER, name=self.name, rule=pickle.dumps(rule), unset=unset)

    def set(self, value: Any) -> None:
        self._link.ask(SET_HANDLER, name=self.name, value=value)

    def delete(self) -> None:
        self.set(None)


class ClusterLimiter:
    """A provider's limits held across every process of the cluster (limits.ProviderLimiter's interface)."""

    def __init__(self, link: SchedulerLink, provider: str, provider_limits: ProviderLimits) -> None:
        rate = provider_limits.requests_per_minute
        name = f"limits/{provider}/{provider_limits.max_concurrency}/{rate}"
        leases = Semaphore(
            max_leases=provider_limits.max_concurrency,
            name=f"{NAME_PREFIX}/{name}/in-flight",
            scheduler_rpc=link.scheduler,
            loop=link.loop,
        )
        self.slots = LeasedSlots(leases, provider_limits.max_concurrency, link.loop)
        self._next_start = SchedulerValue(link, f"{name}/next-start")
        self._interval_s = 60.0 / rate if rate else 0.0
        self._known_start = 0.0  # the next start as this process last read it
        self._read_at = -PAUSE_READ_S  # time.monotonic() of that read
        self._reading = threading.Lock()

    @contextmanager
    def slot(self) -> Iterator[None]:
        with self.slots.lease():
            self._wait_for_turn()
            yield

    def pause(self, seconds: float) -> None:
        """Let no call of any worker start for `seconds` from now."""
        until = time.time() + seconds

        def push_back(next_start: float) -> tuple[float, float]:
            later = max(next_start, until)
            return later, later

        self._known_start = self._next_start.change(push_back, unset=0.0)

    def turn(self) -> float:
        """When the next call of this process may start (wall clock): the turn it claims among every
        worker's calls when the provider has a rate, else the end of the provider's pause, if any."""
        if not self._interval_s:
            return self._paused_until()
        interval_s = self._interval_s

        def claim(next_start: float) -> tuple[float, float]:
            # The scheduler's clock, read as the claim is applied: a start claimed earlier could be past.
            return claim_start(next_start, time.time(), interval_s)

        return self._next_start.change(claim, unset=0.0)

    def _wait_for_turn(self) -> None:
        time.sleep(max(0.0, self.turn() - time.time()))

    def _paused_until(self) -> float:
        """The next start as this process knows it, read again when older than PAUSE_READ_S (by one thread:
        the others go on with what it knew)."""
        if time.monotonic() - self._read_at > PAUSE_READ_S and self._reading.acquire(blocking=False):
            try:
                self._known_start = self._next_start.read(unset=0.0)
                self._read_at = time.monotonic()
            finally:
                self._reading.release()
        return self._known_start


@dataclass
class LeaseBook:
    """What one process holds of a provider's leases, and its rules: `LeasedSlots` applies them one at a time
    (under its lock) and does what they return. A lease is idle only while a thread of the process waits
    to take it; one no thread waits for goes back to the scheduler at once."""

    limit: int  # leases of the whole cluster
    turns: int = LEASE_TURNS
    held: int = 0  # leases this process holds, idle or serving a call
    asking: int = 0  # leases asked of the scheduler and not granted yet
    waiting: int = 0  # threads waiting for a lease
    idle: list[int] = field(default_factory=list)  # of each idle lease, the calls it has served

    def want(self) -> int:
        """A thread waits for a lease: how many more to ask the scheduler for now."""
        self.waiting += 1
        return self._asks()

    def take(self) -> int | None:
        """A waiting thread takes an idle lease: the calls it has served; None if no lease is idle."""
        if not self.idle:
            return None
        self.waiting -= 1
        return self.idle.pop()

    def give_up(self) -> None:
        """A waiting thread stops waiting without a lease (its lease could not be had)."""
        self.waiting -= 1

    def done(self, served: int) -> tuple[bool, int]:
        """A call ended on a lease that has now served `served` calls: whether the lease goes back to the
        scheduler (else a waiting thread takes it), and how many more to ask for now."""
        if served < self.turns and self.waiting > len(self.idle):
            self.idle.append(served)
            return False, 0
        self.held -= 1
        return True, self._asks()

    def granted(self) -> bool:
        """The scheduler granted a lease asked for: whether it is kept for a waiting thread (else it goes
        back: a lease that ended a call served the thread meanwhile)."""
        self.asking -= 1
        if self.waiting <= len(self.idle):
            return False
        self.held += 1
        self.idle.append(0)
        return True

    def refused(self) -> bool:
        """Asking for a lease failed: whether a waiting thread is left without one (and is told)."""
        self.asking -= 1
        return self.waiting > len(self.idle) + self.asking

    def _asks(self) -> int:
        """Ask for a lease for each waiting thread no idle lease or lease asked for covers, as far as the
        cluster has leases this process does not hold or ask for."""
        missing = self.waiting - len(self.idle) - self.asking
        room = self.limit - self.held - self.asking
        asks = max(0, min(missing, room))
        self.asking += asks
        return asks


class LeasedSlots:
    """A provider's calls in flight in this process, within the leases it holds of the cluster's
    `distributed.Semaphore` (`LeaseBook`'s rules). Leases are asked for and given back on the process's
    event loop: a thread waits only when no lease is idle for it. The semaphore refreshes the leases held,
    so that those of a process that dies go back after Dask's lease time-out."""

    def __init__(self, semaphore: Semaphore, limit: int, loop: Any) -> None:
        self.book = LeaseBook(limit)
        self._semaphore = semaphore
        self._loop = loop
        self._changed = threading.Condition()
        self._failures: list[BaseException] = []  # of leases asked for, for the threads waiting

    @contextmanager
    def lease(self) -> Iterator[None]:
        """Held while a call is made: one of this process's leases."""
        served = self._take()
        try:
            yield
        finally:
            self._done(served + 1)

    def _take(self) -> int:
        with self._changed:
            self._ask(self.book.want())
            while (served := self.book.take()) is None:
                if self._failures:
                    self.book.give_up()
                    raise self._failures.pop()
                self._changed.wait()
            return served

    def _done(self, served: int) -> None:
        with self._changed:
            back, asks = self.book.done(served)
            if not back:
                self._changed.notify()
            self._ask(asks)
        if back:
            self._loop.add_callback(self._give_back)

    def _ask(self, asks: int) -> None:
        for _ in range(asks):
            self._loop.add_callback(self._acquire)

    async def _acquire(self) -> None:
        """On the event loop: one lease from the scheduler, waiting as long as it takes."""
        try:
            await self._semaphore.acquire()
        except Exception as error:  # the scheduler is gone or refused: a waiting thread raises it
            with self._changed:
                if self.book.refused():
                    self._failures.append(error)
                    self._changed.notify()
            return
        with self._changed:
            kept = self.book.granted()
            if kept:
                self._changed.notify()
        if not kept:
            await self._give_back()

    async def _give_back(self) -> None:
        await self._semaphore.release()


def claim_start(next_start: float, now: float, interval_s: float) -> tuple[float, float]:
    """A call's turn, claimed at `now`: it starts at the next start or now, whichever is later, and the call
    after it `interval_s` later. (The next start after it, its start.)"""
    start = max(now, next_start)
    return start + interval_s, start


class KeysOnScheduler(SchedulerPlugin):
    """The call keys being made in the cluster, each held by one worker at a time. A worker asks to hold a
    key and waits here while another holds it; it lets go on its stream (`SchedulerLink.tell`); the keys of
    a worker the scheduler removes (it died, or stopped answering) go back at once.

    Each key going back is numbered, and a hold is answered with the number of the key's last return
    (`KeyHeld`): a worker whose ledger is read through that number has read whatever the key's earlier
    holders recorded of it, and does not read the ledger again for it. The numbers of the latest
    REMEMBERED_KEYS keys are kept; an older key is answered with the last number forgotten."""

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

    async def _hold(self, key: str, worker: str) -> dict[str, Any] | None:
        """Hold `key` for `worker` once no other worker does (a `KeyHeld`, as a dict); None if `worker` has
        left the cluster (the scheduler would never give back what it held)."""
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
        return KeyHeld(self.epoch, returned_at, self.returns)._asdict()

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


class WorkerLeftCluster(RuntimeError):
    """The scheduler removed this worker (it stopped answering) while it waited for a call key."""


class ClusterKeys:
    """A call key held across every worker of the cluster while the call is made (in_flight.KeyHolder), on
    the scheduler (`KeysOnScheduler`): a round trip to hold it, a message on the stream to let go.

    A holder reads the ledger (what the other workers appended) only when the key went back since its last
    read of it: a worker lets go of a key after recording its call. Other processes writing the same ledger
    (outside the cluster) are read as any lookup reads them, within call_store.REFRESH_S."""

    def __init__(self, link: SchedulerLink) -> None:
        self._link = link
        self._lock = threading.Lock()
        self._read_through: dict[Path, tuple[str, int]] = {}  # ledger -> (epoch, returns) read before

    @contextmanager
    def hold(self, key: str, ledger: CallLedger) -> Iterator[None]:
        address = self._link.worker.address
        answer = self._link.ask(HOLD_KEY_HANDLER, key=key, worker=address)
        if answer is None:
            raise WorkerLeftCluster(
                f"the Dask scheduler removed the worker {address} while it waited to make the call {key}: "
                "the call is not made (a re-run makes it)"
            )
        held = KeyHeld(**answer)
        try:
            if self._unread(ledger.root, held):
                ledger.refresh()
                self._read(ledger.root, held)
            yield
        finally:
            self._link.tell(LET_GO_KEY_HANDLER, key=key)

    def _unread(self, root: Path, held: KeyHeld) -> bool:
        """Whether the key went back since this process last read the ledger (or may have)."""
        with self._lock:
            epoch, returns = self._read_through.get(root, ("", -1))
        return epoch != held.epoch or held.returned_at > returns

    def _read(self, root: Path, held: KeyHeld) -> None:
        """The ledger was read after the hold's answer: through every return it counted."""
        with self._lock:
            epoch, returns = self._read_through.get(root, ("", -1))
            if epoch != held.epoch or returns < held.returns:
                self._read_through[root] = (held.epoch, held.returns)


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
