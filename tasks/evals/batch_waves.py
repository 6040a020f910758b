"""Batch waves: the calls of the roles in batch mode, made as rounds of provider batches before the run.

Each round walks every unfinished job (its solve, then its score) with batch-mode calls deferred
(tasks/llm/deferral.py): calls of other roles are made there and then, and the deferred ones are the calls
that can go together now (every turn 0 of every thread, every judge call whose answer exists, every
clinician turn t of every case). Those not already in a batch in flight are submitted as the next wave,
one batch per model and endpoint (tasks/llm/batches.py); when a batch finishes, its results go to the
ledger and the walk goes one step further. The round ends when a walk defers nothing: every call is in
the ledger, or failed for good. The run then writes its tables as any run does, every call
answered from the ledger.

A call whose line failed is submitted again in a later wave until the retry policy's attempts are spent,
counted in the ledger across runs and polls (a permanent failure at once); the unanswered calls of an
expired or cancelled batch, or of one the provider no longer knows, are submitted again.
With `wait_s`, the run stops waiting after that long and leaves its batches in flight: the next run of the
same settings (or the resume-batch-runs flow) picks them up, and submits nothing twice.
"""

import logging
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks.evals.config import BatchSettings
from tasks.llm.batches import VANISHED, BatchRecord, BatchStore, advance, split_into_batches
from tasks.llm.budget import budget_for
from tasks.llm.call import reserve_call
from tasks.llm.deferral import CallCollector, collecting
from tasks.llm.errors import classify_error
from tasks.llm.ledger import CallLedger, CallRecord
from tasks.llm.request import CallOptions, ChatRequest, RetryPolicy

MODULE_LOGGER = logging.getLogger(__name__)
# Why a collected batch left calls unanswered, by its status: those calls are submitted again.
UNANSWERED_BECAUSE = {
    "expired": "expired before all its calls were answered",
    "cancelled": "cancelled before all its calls were answered",
    VANISHED: "is no longer known to the provider (404)",
}

Walk = Callable[[Any, Path], None]
"""Walks one job: solve it, then score what it solved (every call through `complete()`)."""


class BatchProviderError(RuntimeError):
    """The provider's batch API failed in a way waiting will not cure (a key, a model, an endpoint)."""


@dataclass(frozen=True)
class WaveCounts:
    """Calls of one wave by where they are: the progress a wave's artifact shows."""

    wave: int
    submitted: int
    in_progress: int
    completed: int
    failed: int

    @property
    def done_share(self) -> float:
        return (self.completed + self.failed) / self.submitted if self.submitted else 1.0

    def describe(self) -> str:
        return (
            f"wave {self.wave}: {self.submitted} calls submitted, {self.in_progress} in progress, "
            f"{self.completed} completed, {self.failed} failed"
        )


@dataclass(frozen=True)
class WavesOutcome:
    """How the waves ended: `finished` (every batch-mode call answered or failed for good), or waiting."""

    finished: bool
    waves: int
    in_flight: list[BatchRecord]

    def message(self) -> str:
        if self.finished:
            return f"batch calls done in {self.waves} waves"
        calls = sum(len(record.keys) for record in self.in_flight)
        ids = ", ".join(record.batch_id or record.local_id for record in self.in_flight[:5])
        return (
            f"{len(self.in_flight)} {'batch' if len(self.in_flight) == 1 else 'batches'} ({calls} calls) "
            f"still in flight at the provider ({ids}); "
            "re-run the same command later, or let the resume-batch-runs deployment poll, to collect them "
            "and go on (nothing is submitted twice)"
        )


class BatchWaves:
    """The waves of one run folder: its jobs, ledger and batch records, and how long to wait."""

    def __init__(
        self,
        jobs: list[Any],
        walk: Walk,
        run_dir: Path,
        settings: BatchSettings,
        retry: RetryPolicy,
        workers: int,
        on_progress: Callable[[WaveCounts], None] = lambda counts: None,
        logger: logging.Logger | logging.LoggerAdapter[logging.Logger] = MODULE_LOGGER,
    ) -> None:
        self.jobs, self.walk, self.settings, self.retry = jobs, walk, settings, retry
        self.workers, self.on_progress, self.logger = workers, on_progress, logger
        self.ledger_dir = run_dir / "ledger"
        self.ledger = CallLedger(self.ledger_dir)
        self.store = BatchStore(run_dir / "batches")
        self.budget = budget_for(self.ledger_dir)  # a capped run's (tasks/evals/spending.py)
        self.provider_errors: Counter[str] = Counter()  # per batch, in a row
        # Calls whose attempts earlier runs spent are final from the start.
        self.settled = {failure.key for failure in self.ledger.failures() if self._final(failure)}

    def run(self) -> WavesOutcome:
        deadline = None if self.settings.wait_s is None else time.monotonic() + self.settings.wait_s
        open_jobs = list(range(len(self.jobs)))
        wave = max((record.wave for record in self.store.records()), default=0)
        self._advance_in_flight()
        while True:
            pending, open_jobs = self._walk(open_jobs)
            if not pending:
                return WavesOutcome(True, wave, [])
            in_flight = {key for record in self.store.in_flight() for key in record.keys}
            if to_send := self._within_cap(
                {key: call for key, call in pending.items() if key not in in_flight}
            ):
                wave += 1
                self._submit(wave, to_send)
            if not self._wait_for_a_finished_batch(deadline):
                return WavesOutcome(False, wave, self.store.in_flight())

    def _walk(self, open_jobs: list[int]) -> tuple[dict[str, tuple[ChatRequest, CallOptions]], list[int]]:
        """Walk the open jobs in parallel: the calls they deferred, and the jobs that deferred any."""
        settled = frozenset(self.settled)

        def walk_one(index: int) -> dict[str, tuple[ChatRequest, CallOptions]]:
            with collecting(CallCollector(settled)) as collector:
                self.walk(self.jobs[index], self.ledger_dir)
                return collector.pending()

        # Each job sets its own collector (a context variable) in the worker thread that walks it.
        with ThreadPoolExecutor(self.workers, thread_name_prefix="batch-walk") as pool:
            deferred = list(pool.map(walk_one, open_jobs))
        pending = {key: call for calls in deferred for key, call in calls.items()}
        return pending, [index for index, calls in zip(open_jobs, deferred, strict=True) if calls]

    def _submit(self, wave: int, calls: dict[str, tuple[ChatRequest, CallOptions]]) -> None:
        """One batch per model, endpoint and options (within the provider's size limits), sent at once."""
        groups: dict[tuple[str, str | None, CallOptions], dict[str, ChatRequest]] = {}
        for key, (request, options) in calls.items():
            groups.setdefault((request.model, request.api_base, options), {})[key] = request
        for (model, _, options), requests in groups.items():
            max_bytes = int(self.settings.max_file_mb * 2**20)
            for chunk in split_into_batches(requests, self.settings.max_calls, max_bytes):
                record = self.store.create(wave, chunk, options)
                record = self._advance(record)
                self.logger.info(
                    "wave %d: batch %s of %d %s calls submitted", wave, record.batch_id, len(chunk), model
                )
        self._report()

    def _within_cap(
        self, calls: dict[str, tuple[ChatRequest, CallOptions]]
    ) -> dict[str, tuple[ChatRequest, CallOptions]]:
        """The calls to submit, each reserved under a spending cap; those past it are final for this run
        (the run records them as stopped by the cap)."""
        if self.budget is None:
            return calls
        within = {}
        for key, (request, options) in calls.items():
            if reserve_call(self.budget, key, request, options, self.ledger):
                within[key] = (request, options)
            else:
                self.settled.add(key)
        return within

    def _advance_in_flight(self) -> bool:
        """Check every batch in flight once, collecting the finished ones; True if any was collected."""
        collected = [self._advance(record).collected for record in self.store.in_flight()]
        self._report()
        return any(collected)

    def _advance(self, record: BatchRecord) -> BatchRecord:
        """Take one batch a step on; once collected, settle its calls that failed for good.

        A provider error on the way (an upload, a check) is retried at the next poll, as long as it is
        transient and has not happened `retry.max_attempts` times in a row; otherwise the run stops here,
        its batches still recorded for the next one.
        """
        try:
            record = advance(record, self.store, self.ledger)
        except Exception as exc:  # classified: transient ones wait for the next poll
            error = classify_error(exc, record.model)
            self.provider_errors[record.local_id] += 1
            if not error.retryable or self.provider_errors[record.local_id] >= self.retry.max_attempts:
                raise BatchProviderError(
                    f"batch {record.batch_id or record.local_id}: {error.message}"
                ) from exc
            self.logger.warning(
                "batch %s: %s; checked again at the next poll", record.local_id, error.message
            )
            return record
        self.provider_errors.pop(record.local_id, None)
        if record.collected and self.budget is not None:
            # What the ledger now records replaces the estimates (nothing more for a call left unanswered).
            for key in record.keys:
                self.budget.settle(key, self.ledger.recorded_cost_usd(key))
        if record.collected:
            self._settle(record)
            if record.status in UNANSWERED_BECAUSE:
                self.logger.warning(
                    "batch %s (wave %d) %s: the %d unanswered are submitted again",
                    record.batch_id,
                    record.wave,
                    UNANSWERED_BECAUSE[record.status],
                    sum(self.ledger.lookup(key) is None for key in record.keys),
                )
        return record

    def _settle(self, record: BatchRecord) -> None:
        """The calls of a collected batch that failed for good: not submitted again."""
        for key in record.keys:
            failure = self.ledger.last_failure(key) if self.ledger.lookup(key) is None else None
            if failure is not None and self._final(failure):
                self.settled.add(key)

    def _final(self, failure: CallRecord) -> bool:
        """Whether a failed call is not tried again: a permanent failure, or its attempts spent (every
        submission of it counts, in any run, so a poller re-running the folder ends too)."""
        return not failure.retryable or failure.attempts >= self.retry.max_attempts

    def _wait_for_a_finished_batch(self, deadline: float | None) -> bool:
        """Poll until a batch in flight is collected (True), or the deadline passes with none (False)."""
        while True:
            if not self.store.in_flight():
                return True  # every deferred call was settled: the next walk writes their failures
            if deadline is not None and time.monotonic() >= deadline:
                return False
            pause = self.settings.poll_interval_s
            if deadline is not None:
                pause = max(0.0, min(pause, deadline - time.monotonic()))
            time.sleep(pause)
            if self._advance_in_flight():
                return True

    def _report(self) -> None:
        for counts in wave_counts(self.store.records(), self.ledger):
            self.on_progress(counts)


def wave_counts(records: list[BatchRecord], ledger: CallLedger) -> list[WaveCounts]:
    """Each wave's calls: submitted, in progress (batch not collected), completed and failed."""
    waves: dict[int, Counter[str]] = {}
    for record in records:
        counts = waves.setdefault(record.wave, Counter())
        counts["submitted"] += len(record.keys)
        if not record.collected:
            counts["in_progress"] += len(record.keys)
            continue
        for key in record.keys:
            answer = ledger.lookup(key)
            counts[
                "completed" if answer is not None and answer.batch_id == record.batch_id else "failed"
            ] += 1
    return [
        WaveCounts(wave, counts["submitted"], counts["in_progress"], counts["completed"], counts["failed"])
        for wave, counts in sorted(waves.items())
    ]
