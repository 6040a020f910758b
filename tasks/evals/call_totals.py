"""What a run folder's ledger holds, and what one invocation added to it: the calls and dollars of the run
so far (every invocation into the folder), beside those of this invocation alone.

Both are read from the ledger (tasks/llm/ledger.py), the one record of what was paid: its state when the
invocation starts, then once every call it made has ended. A call counts as this invocation's when the
invocation recorded an attempt of it (a new call, a retry of an earlier failure, a batch answer collected
now), at the cost those attempts added; a call read from an earlier run's ledger (`reused_from`, a re-judge
with that run's own judge) counts as reused, made and paid there.
"""

from pathlib import Path
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel

from tasks.llm.ledger import CallLedger

REUSED = "reused"  # how a call read from an earlier run's ledger was "made": not here, not paid here
MODES = ("single", "batch", REUSED)
# One call of a ledger: how it was made (single, batch or reused), its attempts and cost so far.
CALL_STATES = pa.schema(
    [("key", pa.string()), ("mode", pa.string()), ("attempts", pa.int64()), ("cost_usd", pa.float64())]
)


class ModeTotals(BaseModel):
    """Calls made one way (single requests, provider batches, or reused): how many, at what cost."""

    calls: int = 0
    cost_usd: float = 0.0


def ledger_calls(ledger_dir: Path) -> pa.Table:
    """Every call of the ledger (CALL_STATES, one row per key), read from its columns."""
    outcomes = CallLedger(ledger_dir).outcomes()
    mode = pc.if_else(pc.is_null(outcomes["reused_from"]), outcomes["mode"], REUSED)
    cost = pc.add(outcomes["input_cost_usd"], outcomes["output_cost_usd"])
    return pa.table([outcomes["key"], mode, outcomes["attempts"], cost], schema=CALL_STATES)


def calls_added(before: pa.Table, after: pa.Table) -> pa.Table:
    """The calls of `after` that an invocation added to since `before` (CALL_STATES without the key): each
    with the attempts and the cost it added (a call newly read from an earlier run's ledger: reused, 0
    attempts, its own failed attempts' cost carried as it was)."""
    joined = after.join(before, "key", join_type="left outer", right_suffix="_before")
    reused = pc.equal(joined["mode"], REUSED)
    newly_reused = pc.and_(reused, pc.invert(pc.fill_null(pc.equal(joined["mode_before"], REUSED), False)))
    attempts = pc.subtract(joined["attempts"], pc.fill_null(joined["attempts_before"], 0))
    attempted = pc.and_(pc.invert(reused), pc.greater(attempts, 0))
    cost = pc.subtract(joined["cost_usd"], pc.fill_null(joined["cost_usd_before"], 0.0))
    made = pa.table({"mode": joined["mode"], "attempts": attempts, "cost_usd": cost}).filter(attempted)
    count = pc.sum(pc.cast(newly_reused, pa.int64())).as_py() or 0
    reused_rows = pa.table(
        {"mode": [REUSED] * count, "attempts": [0] * count, "cost_usd": [0.0] * count}, schema=made.schema
    )
    return pa.concat_tables([made, reused_rows])


def totals_by_mode(calls: pa.Table) -> dict[str, ModeTotals]:
    """Calls counted and costs summed by how they were made: single first, then batch, then reused."""
    sums = calls.group_by("mode", use_threads=False).aggregate([("mode", "count"), ("cost_usd", "sum")])
    totals = {
        row["mode"]: ModeTotals(calls=row["mode_count"], cost_usd=row["cost_usd_sum"])
        for row in sums.to_pylist()
    }
    return dict(sorted(totals.items(), key=lambda item: MODES.index(item[0])))


def spent_usd(calls: pa.Table) -> float:
    """What a ledger's calls have cost: every paid attempt of every call (`CallLedger.total_cost_usd`)."""
    return float(pc.sum(calls["cost_usd"]).as_py() or 0.0)


class RunCalls(NamedTuple):
    """The calls of a run folder so far and those of one invocation, by how they were made, and what the
    folder has spent."""

    run: dict[str, ModeTotals]
    invocation: dict[str, ModeTotals]
    spent_usd: float


def run_calls(ledger_dir: Path, before: pa.Table) -> RunCalls:
    """The run's calls as its ledger holds them now, and what was added since `before` (`ledger_calls` when
    this invocation started)."""
    after = ledger_calls(ledger_dir)
    return RunCalls(
        run=totals_by_mode(after),
        invocation=totals_by_mode(calls_added(before, after)),
        spent_usd=spent_usd(after),
    )
