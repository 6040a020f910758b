"""What a run folder's ledger holds, and what one invocation added to it: the calls and dollars of the run
so far (every invocation into the folder), beside those of this invocation alone.

Both are read from the ledger (tasks/llm/ledger.py), the one record of what was paid: its state when the
invocation starts, then once every call it made has ended. A call counts as this invocation's when the
invocation recorded an attempt of it (a new call, a retry of an earlier failure, a batch answer collected
now), at the cost those attempts added; a call read from an earlier run's ledger (`reused_from`, a re-judge
with that run's own judge) counts as reused, made and paid there.
"""

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel

from tasks.llm.ledger import CallLedger

REUSED = "reused"  # how a call read from an earlier run's ledger was "made": not here, not paid here


class ModeTotals(BaseModel):
    """Calls made one way (single requests, provider batches, or reused): how many, at what cost."""

    calls: int = 0
    cost_usd: float = 0.0


class CallState(NamedTuple):
    """One call of a ledger: how it was made (single, batch or reused), its attempts and cost so far."""

    mode: str
    attempts: int
    cost_usd: float


def ledger_calls(ledger_dir: Path) -> dict[str, CallState]:
    """Every call of the ledger by its key."""
    return {
        record.key: CallState(
            REUSED if record.reused_from is not None else record.mode, record.attempts, record.cost_usd
        )
        for record in CallLedger(ledger_dir).records()
    }


def calls_added(before: dict[str, CallState], after: dict[str, CallState]) -> Iterator[CallState]:
    """The calls of `after` that an invocation added to since `before`: each with the attempts and the cost
    it added (a call newly read from an earlier run's ledger: reused, 0 attempts, its own failed attempts'
    cost carried as it was)."""
    for key, now in after.items():
        then = before.get(key)
        if now.mode == REUSED:
            if then is None or then.mode != REUSED:
                yield CallState(REUSED, 0, 0.0)
            continue
        attempts = now.attempts - (then.attempts if then is not None else 0)
        if attempts > 0:
            yield CallState(now.mode, attempts, now.cost_usd - (then.cost_usd if then is not None else 0.0))


def totals_by_mode(calls: Iterable[CallState]) -> dict[str, ModeTotals]:
    """Calls counted and costs summed by how they were made: single first, then batch, then reused."""
    totals: dict[str, ModeTotals] = {}
    for call in calls:
        mode = totals.setdefault(call.mode, ModeTotals())
        mode.calls += 1
        mode.cost_usd += call.cost_usd
    order = ("single", "batch", REUSED)
    return dict(sorted(totals.items(), key=lambda item: order.index(item[0])))


def spent_usd(calls: dict[str, CallState]) -> float:
    """What a ledger's calls have cost: every paid attempt of every call (`CallLedger.total_cost_usd`)."""
    return sum(call.cost_usd for call in calls.values())


class RunCalls(NamedTuple):
    """The calls of a run folder so far and those of one invocation, by how they were made, and what the
    folder has spent."""

    run: dict[str, ModeTotals]
    invocation: dict[str, ModeTotals]
    spent_usd: float


def run_calls(ledger_dir: Path, before: dict[str, CallState]) -> RunCalls:
    """The run's calls as its ledger holds them now, and what was added since `before` (`ledger_calls` when
    this invocation started)."""
    after = ledger_calls(ledger_dir)
    return RunCalls(
        run=totals_by_mode(after.values()),
        invocation=totals_by_mode(calls_added(before, after)),
        spent_usd=spent_usd(after),
    )
