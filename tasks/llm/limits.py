"""Per-provider throttles shared by every call of the process: calls in flight, start rate, Retry-After.

In a Dask worker process they are the cluster's instead, shared by every worker (tasks/llm/cluster.py).
"""

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

from tasks.llm.request import ProviderLimits


class Limiter(Protocol):
    """What a call asks of its provider's throttle."""

    def slot(self) -> AbstractContextManager[None]:
        """Held while an attempt is made: within the calls in flight, after its turn to start."""
        ...

    def pause(self, seconds: float) -> None:
        """Let no call start for `seconds` from now."""
        ...


class ProviderLimiter:
    """Caps one provider's calls in flight, spaces their starts for a requests-per-minute budget, and
    holds every new start while the provider has asked us (Retry-After) to wait."""

    def __init__(self, limits: ProviderLimits) -> None:
        self._slots = threading.BoundedSemaphore(limits.max_concurrency)
        self._interval_s = 60.0 / limits.requests_per_minute if limits.requests_per_minute else 0.0
        self._lock = threading.Lock()
        self._next_start = 0.0

    @contextmanager
    def slot(self) -> Iterator[None]:
        with self._slots:
            self._wait_for_turn()
            yield

    def pause(self, seconds: float) -> None:
        """Let no call start for `seconds` from now."""
        with self._lock:
            self._next_start = max(self._next_start, time.monotonic() + seconds)

    def _wait_for_turn(self) -> None:
        with self._lock:
            start = max(time.monotonic(), self._next_start)
            self._next_start = start + self._interval_s
        time.sleep(max(0.0, start - time.monotonic()))


LimiterMaker = Callable[[str, ProviderLimits], Limiter]


def process_limiter(provider: str, limits: ProviderLimits) -> Limiter:
    return ProviderLimiter(limits)


# One limiter per (provider, limits) for the whole process: every worker thread of a run must share it,
# the way they share litellm's HTTP connection pool.
_limiters: dict[tuple[str, ProviderLimits], Limiter] = {}
_limiters_lock = threading.Lock()
_make_limiter: LimiterMaker = process_limiter


def limiter_for(provider: str, limits: ProviderLimits) -> Limiter:
    with _limiters_lock:
        if (provider, limits) not in _limiters:
            _limiters[(provider, limits)] = _make_limiter(provider, limits)
        return _limiters[(provider, limits)]


def make_limiters_with(make: LimiterMaker) -> None:
    """Every limiter of this process from now on is made by `make` (a Dask worker's are its cluster's)."""
    global _make_limiter
    with _limiters_lock:
        _make_limiter = make
        _limiters.clear()
