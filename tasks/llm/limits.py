"""Per-provider throttles shared by every call of the process: calls in flight, start rate, Retry-After."""

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from tasks.llm.request import ProviderLimits


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


# One limiter per (provider, limits) for the whole process: every worker thread of a run must share it,
# the way they share litellm's HTTP connection pool.
_limiters: dict[tuple[str, ProviderLimits], ProviderLimiter] = {}
_limiters_lock = threading.Lock()


def limiter_for(provider: str, limits: ProviderLimits) -> ProviderLimiter:
    with _limiters_lock:
        if (provider, limits) not in _limiters:
            _limiters[(provider, limits)] = ProviderLimiter(limits)
        return _limiters[(provider, limits)]
