"""The dry run: calls a run still has to make, their tokens and dollars, per model and role. Calls nothing.

The benchmark walks each job (its `estimate_job`), counting into one `CallEstimate` per model and role:
a call already in the ledger is `cached` and free; an unknown one counts its prompt tokens (cl100k,
tasks/core/tokens.py) and the role's `estimated_reply_tokens`. A role in batch mode is priced at batch
prices, beside what its calls would cost one by one (the saving the dry run shows). A job the ledger holds
whole is counted from its receipt, not walked (tasks/evals/receipts.py); a run writes them at its end
(`RunReceipts`), having walked each job as its task ended.
"""

import logging
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tasks.core.gc_pause import garbage_collection_paused
from tasks.evals.config import ModelSpec
from tasks.evals.plan import Job, RunPlan
from tasks.evals.receipts import CachedCount, Counted, JobDigests, ReceiptBook, estimator_name
from tasks.llm.call import batch_token_costs, token_costs
from tasks.llm.ledger import CallLedger, CallRecord
from tasks.llm.request import CallMode, CallOptions

logger = logging.getLogger(__name__)
WALKS_PER_RUN = 50  # how many times a run walks the jobs of the tasks ended since its last walk


class CallEstimate(BaseModel):
    """What --dry-run expects one model in one role to cost; calls already in the ledger are free."""

    model: str
    role: str
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    mode: CallMode = "single"
    single_cost_usd: float | None = Field(0.0, description="What the same calls cost made one by one.")

    @property
    def batch_saving_usd(self) -> float:
        """What batch mode saves on these calls against single calls (0 in single mode or unpriced)."""
        if self.cost_usd is None or self.single_cost_usd is None:
            return 0.0
        return self.single_cost_usd - self.cost_usd


class EstimateTally:
    """The estimates of a run being added up, one per (model name, role), each with what prices it."""

    def __init__(self) -> None:
        self._estimates: dict[tuple[str, str], CallEstimate] = {}
        self._pricing: dict[tuple[str, str], tuple[ModelSpec, CallOptions]] = {}

    def of(self, spec: ModelSpec, options: CallOptions, role: str) -> CallEstimate:
        """The estimate to count `spec`'s calls in `role` into."""
        key = (spec.name, role)
        self._pricing[key] = (spec, options)
        return self._estimates.setdefault(key, CallEstimate(model=spec.name, role=role, mode=options.mode))

    def add_cached(self, count: Counted) -> None:
        """Count calls a job's receipt says the ledger holds."""
        model, role, mode, cached = count
        estimate = self._estimates.get((model, role))
        if estimate is None:
            estimate = self._estimates[(model, role)] = CallEstimate(model=model, role=role, mode=mode)
        estimate.cached += cached

    def cached_counts(self) -> list[CachedCount] | None:
        """What this tally counted as cached calls, or None when it counted a call still to make."""
        estimates = self._estimates.values()
        if any(estimate.calls for estimate in estimates):
            return None
        return [CachedCount(e.model, e.role, e.mode, e.cached) for e in estimates]

    def priced(self) -> list[CallEstimate]:
        """Every estimate in first-counted order, with its dollars (None when the model has no price; 0 when
        no call is left to make)."""
        for key, estimate in self._estimates.items():
            if estimate.calls == 0:  # nothing to pay, whatever the model's price
                estimate.cost_usd = estimate.single_cost_usd = 0.0
                continue
            spec, options = self._pricing[key]
            tokens = (options.price_model or spec.model, estimate.prompt_tokens, estimate.completion_tokens)
            single = token_costs(*tokens, options.prices)
            estimate.single_cost_usd = None if single is None else sum(single)
            if options.mode == "batch":
                batch = batch_token_costs(*tokens, options.prices, options.batch_discount)
                estimate.cost_usd = None if batch is None else sum(batch)
            else:
                estimate.cost_usd = estimate.single_cost_usd
        return list(self._estimates.values())


JobEstimator = Callable[[Job[Any, Any], CallLedger, EstimateTally], None]


def estimate_plan(plan: RunPlan[Any, Any], estimate_job: JobEstimator) -> list[CallEstimate]:
    """Calls still to make in `plan`, their tokens and dollars, per model and role; reads only the ledger.
    A job with a valid receipt is counted from it; the others are walked by `estimate_job`."""
    ledger = CallLedger(plan.ledger_dir)
    tally = EstimateTally()
    name = estimator_name(estimate_job)
    if name is None:
        for job in plan.jobs:
            estimate_job(job, ledger, tally)
        return tally.priced()
    with garbage_collection_paused():  # digests and counts of 10^5 jobs: no cycle among them
        book, digests = ReceiptBook(ledger), JobDigests(name)
        for job in plan.jobs:
            counts = book.counts(digests.of(job))
            if counts is None:
                estimate_job(job, ledger, tally)
            else:
                for count in counts:
                    tally.add_cached(count)
    return tally.priced()


class _KeysFound(CallLedger):
    """A ledger that notes each key a lookup found (what a job's walk read)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.found: list[str] = []

    def lookup(self, key: str) -> CallRecord | None:
        record = super().lookup(key)
        if record is not None:
            self.found.append(key)
        return record


class RunReceipts:
    """The receipts a run writes at its end: one for each job of `plan` that the ledger then holds whole and
    that has none yet (one walk of each such job, as a dry run's). The jobs of each task that ends are
    walked while the run's other tasks go on (`ended`), a fiftieth of the plan at a time: each walk first
    reads what the other processes recorded since, some 10 ms: after every task, those reads took half the
    walks' time (tests/perf/README.md). `record` walks the rest and writes them all. A job whose walk
    counted a call still to make (one that failed, or whose record this process did not see yet) is walked
    again at the end."""

    def __init__(self, plan: RunPlan[Any, Any], estimate_job: JobEstimator) -> None:
        self._plan, self._estimate_job = plan, estimate_job
        self._name = estimator_name(estimate_job)
        self._receipts: list[tuple[str, list[CachedCount], list[str]]] = []
        self._held_whole: set[int] = set()  # ids of the plan's jobs with a receipt, new or found
        self._ended: list[Job[Any, Any]] = []
        self._batch = max(1, len(plan.jobs) // WALKS_PER_RUN)

    @cached_property
    def _reading(self) -> tuple[_KeysFound, ReceiptBook, JobDigests]:
        """The ledger, the receipts it has and the jobs' digests: read at the first walk."""
        assert self._name is not None
        ledger = _KeysFound(self._plan.ledger_dir)
        return ledger, ReceiptBook(ledger), JobDigests(self._name)

    def ended(self, jobs: list[Job[Any, Any]]) -> None:
        """`jobs`' task has ended: walk them with those ended since the last walk, once they make a batch."""
        self._ended.extend(jobs)
        if len(self._ended) >= self._batch:
            self._walk(self._ended)
            self._ended = []

    def _walk(self, jobs: list[Job[Any, Any]]) -> None:
        """Walk each of `jobs` that has no receipt, keeping one for each the ledger holds whole."""
        if self._name is None:
            return
        ledger, book, digests = self._reading
        ledger.refresh()  # what every worker process recorded
        for job in jobs:
            if id(job) in self._held_whole:
                continue
            digest = digests.of(job)
            if book.counts(digest) is None:
                ledger.found, walked = [], EstimateTally()
                self._estimate_job(job, ledger, walked)
                if (counts := walked.cached_counts()) is None:
                    continue
                self._receipts.append((digest, counts, ledger.found))
            self._held_whole.add(id(job))

    def record(self) -> int:
        """At the end of the run: walk the jobs not yet held whole, then write the new receipts. Returns how
        many were written; a failure to write them (a full disk) is said and changes nothing else (the next
        dry run walks those jobs)."""
        if self._name is None:
            return 0
        self._walk(self._plan.jobs)
        try:
            self._reading[1].write(self._receipts)
        except OSError as error:
            logger.warning(
                "receipts of %s not written (a dry run walks its jobs): %s", self._plan.ledger_dir, error
            )
            return 0
        return len(self._receipts)


def record_receipts(plan: RunPlan[Any, Any], estimate_job: JobEstimator) -> int:
    """The receipts of every job of `plan` that the ledger holds whole, walked and written at once."""
    return RunReceipts(plan, estimate_job).record()
