"""Batch-mode calls: never made one by one, but gathered while a run's jobs are walked, then sent together.

`complete()` hands a batch-mode call that is not in the ledger to `batch_outcome`. While a walk is under
way (`collecting`), the call is deferred: its request joins the walk's `CallCollector` and the job gets a
record with status 'failed' and kind `AWAITING_BATCH`, which is never written. A job treats it as it treats
any failed call: what depends on the reply is not asked (a baseline thread stops, an interview ends),
what does not is (every oracle turn, every judge call whose answer exists). So one walk gathers exactly
the calls that can go out together, and once their batch is in the ledger the next walk goes one step
further (tasks/evals/batch_waves.py).

Outside a walk, a batch-mode call not in the ledger reads as its latest failure: the final pass of a run
writes the same rows a single-call run would, and makes no call.
"""

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from tasks.llm.ledger import CallLedger, CallRecord
from tasks.llm.request import CallOptions, ChatRequest

AWAITING_BATCH = "awaiting_batch"
NOT_SUBMITTED = "not_submitted"


class CallCollector:
    """The batch-mode calls one walk of the jobs deferred, by call key (jobs run in several threads).

    `settled` calls are final for this run: their latest failure is returned instead of deferring them.
    """

    def __init__(self, settled: frozenset[str] = frozenset()) -> None:
        self.settled = settled
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[ChatRequest, CallOptions]] = {}

    def defer(self, key: str, request: ChatRequest, options: CallOptions) -> None:
        with self._lock:
            self._pending.setdefault(key, (request, options))

    def pending(self) -> dict[str, tuple[ChatRequest, CallOptions]]:
        with self._lock:
            return dict(self._pending)


_collector: ContextVar[CallCollector | None] = ContextVar("batch_call_collector", default=None)


@contextmanager
def collecting(collector: CallCollector) -> Iterator[CallCollector]:
    """Defer batch-mode calls into `collector` in this context (copy it into worker threads)."""
    token = _collector.set(collector)
    try:
        yield collector
    finally:
        _collector.reset(token)


def batch_outcome(key: str, request: ChatRequest, options: CallOptions, ledger: CallLedger) -> CallRecord:
    """What `complete()` returns for a batch-mode call that has not succeeded yet; nothing is written."""
    collector = _collector.get()
    if collector is not None and key not in collector.settled:
        collector.defer(key, request, options)
        return _unanswered(key, request, AWAITING_BATCH, "waiting for its batch")
    if (failure := ledger.last_failure(key)) is not None:
        return failure
    return _unanswered(key, request, NOT_SUBMITTED, "a batch-mode call, not submitted in a batch yet")


def _unanswered(key: str, request: ChatRequest, kind: str, reason: str) -> CallRecord:
    return CallRecord.not_made(key, request.model, kind, reason, retryable=True, mode="batch")
