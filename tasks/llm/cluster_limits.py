"""A provider's limits held across every process of a Dask cluster: its calls in flight as leases of a
`distributed.Semaphore`, taken by a process in blocks, and the start of its calls as a value on the scheduler
(tasks/llm/cluster.py)."""

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from distributed import Semaphore

from tasks.llm.request import ProviderLimits
from tasks.llm.scheduler_values import NAME_PREFIX, SchedulerLink, SchedulerValue

# How stale a worker's view of a provider's pause may be (providers without a rate): reading it is a round
# trip to the scheduler, made at most this often per process and provider instead of once per call.
PAUSE_READ_S = 0.25
# How many calls of one process a provider lease serves, one after another, before it goes back to the
# scheduler: a lease taken and given back is two round trips, shared by this many calls; a process whose
# threads always wait for a slot still gives each lease back this often, for the other processes waiting.
LEASE_TURNS = 8


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
