"""What this process has in flight: the call keys being made (each made once at a time), the HTTP requests
open per model (what progress shows), and whether calls may still be sent, with how many are being made
(Ctrl-C stops sending, then waits a bounded time for those: flows/cli/process.py).

Process-wide by nature, as the provider limiters are (tasks/llm/limits.py): they count what the threads of
this process do. In a Dask worker process, a call key is also held across the cluster's processes
(`other_processes`, tasks/llm/cluster.py), so identical requests in two workers are made once too.
"""

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

from tasks.llm.ledger import CallLedger


class KeyLocks:
    """One lock per call key in use, so identical requests in flight at once are made (and paid) once."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, tuple[threading.Lock, int]] = {}

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        with self._guard:
            lock, users = self._locks.get(key, (threading.Lock(), 0))
            self._locks[key] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self._guard:
                lock, users = self._locks[key]
                if users == 1:
                    del self._locks[key]
                else:
                    self._locks[key] = (lock, users - 1)


class OpenRequests:
    """How many HTTP requests of each model this process has open right now (what progress shows)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._open: dict[str, int] = {}

    @contextmanager
    def open(self, model: str) -> Iterator[None]:
        with self._guard:
            self._open[model] = self._open.get(model, 0) + 1
        try:
            yield
        finally:
            with self._guard:
                self._open[model] -= 1

    def counts(self) -> dict[str, int]:
        with self._guard:
            return {model: count for model, count in self._open.items() if count}


class Sending:
    """Whether this process still sends calls, and how many calls it is making: from their first attempt
    sent until their outcome is recorded (retries and their back-off included).

    `stop_sending` (Ctrl-C) closes it for good: no attempt is sent after that. A call with no attempt sent
    has nothing to record and waits for the process to exit; one between two attempts records its failure
    so far (what its attempts cost) and returns; one whose reply is coming records it as usual, and
    `wait_for_calls` lets the process wait a bounded time for those before it exits (tasks/llm/call.py).
    """

    def __init__(self) -> None:
        self._stopped = threading.Event()
        self._changed = threading.Condition()
        self._making = 0

    def start(self) -> bool:
        """Count a call in as its first attempt is sent; False (and not counted) once sending stopped."""
        with self._changed:
            if self._stopped.is_set():
                return False
            self._making += 1
            return True

    def end(self) -> None:
        """A counted call's outcome is recorded."""
        with self._changed:
            self._making -= 1
            self._changed.notify_all()

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def pause(self, seconds: float) -> None:
        """Sleep `seconds`, or less once sending stops."""
        self._stopped.wait(seconds)

    def stop(self) -> None:
        with self._changed:  # after this, no `start` counts a call in
            self._stopped.set()

    def wait(self, timeout_s: float) -> int:
        """Wait up to `timeout_s` until no call is being made; how many still are."""
        with self._changed:
            self._changed.wait_for(lambda: self._making == 0, timeout_s)
            return self._making


class KeyHolder(Protocol):
    def hold(self, key: str, ledger: CallLedger, change: Any = None) -> AbstractContextManager[Any]:
        """Held while the call `key` is looked up in `ledger` and made: no other holder makes it meanwhile,
        and on entry `ledger` has read what other holders recorded of `key`. `change`: a change of the run's
        budget as its keeper takes it (`SpendingBudget.reservation`), made with the hold when the holder
        can tell that `ledger` has no record of the call it has not read; yields its result, else None."""
        ...


key_locks = KeyLocks()
open_requests = OpenRequests()
sending = Sending()
# The key locks of the other processes making this run's calls (a Dask cluster's workers); None: none.
other_processes: KeyHolder | None = None


def hold_keys_with(holder: KeyHolder) -> None:
    """Hold every call key across processes with `holder` from now on (a Dask worker's: its cluster's)."""
    global other_processes
    other_processes = holder


def calls_in_flight() -> dict[str, int]:
    """HTTP requests this process is waiting on, by litellm model string (batch calls are not counted)."""
    return open_requests.counts()


def stop_sending() -> None:
    """Send no attempt of any call from now on, in this process (it is about to exit: Ctrl-C). Calls whose
    replies are coming are still recorded."""
    sending.stop()


def wait_for_calls(timeout_s: float) -> int:
    """After `stop_sending`: wait up to `timeout_s` for the calls in flight to be recorded; return how many
    are not (their replies, if they come, are lost, and a re-run asks them again)."""
    return sending.wait(timeout_s)
