from datetime import UTC, datetime
from typing import NamedTuple

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from tasks.evals.call_totals import (
    CALL_STATES,
    REUSED,
    ModeTotals,
    RunCalls,
    calls_added,
    ledger_calls,
    run_calls,
    spent_usd,
    totals_by_mode,
)
from tasks.llm.ledger import CallLedger, CallRecord

NOW = datetime(2024, 1, 1, tzinfo=UTC)


def write(ledger: CallLedger, key: str, status: str = "ok", **fields) -> None:
    ledger.write(
        CallRecord(key=key, model="openai/m", status=status, started_at=NOW, finished_at=NOW, **fields)
    )


def test_an_invocation_counts_the_calls_it_attempted_at_what_they_added_and_those_it_reused(tmp_path):
    ledger = CallLedger(tmp_path / "ledger")
    write(ledger, "aa01", attempts=1, input_cost_usd=0.5)  # done before: not this invocation's
    write(ledger, "bb02", "failed", attempts=2, input_cost_usd=0.25, error_kind="server_error")
    write(ledger, "dd04", "failed", attempts=6, input_cost_usd=0.125, error_kind="rate_limit")
    before = ledger_calls(tmp_path / "ledger")
    write(ledger, "bb02", attempts=3, input_cost_usd=0.375)  # retried now: one attempt, 0.125 more
    write(ledger, "cc03", attempts=1, input_cost_usd=0.25, mode="batch")  # a batch answer collected now
    write(ledger, "ee05", reused_from="/runs/source/ledger")  # read from the source run's ledger
    assert run_calls(tmp_path / "ledger", before) == RunCalls(
        run={
            "single": ModeTotals(calls=3, cost_usd=1.0),
            "batch": ModeTotals(calls=1, cost_usd=0.25),
            REUSED: ModeTotals(calls=1, cost_usd=0.0),
        },
        invocation={
            "single": ModeTotals(calls=1, cost_usd=0.125),
            "batch": ModeTotals(calls=1, cost_usd=0.25),
            REUSED: ModeTotals(calls=1, cost_usd=0.0),
        },
        spent_usd=1.25,
    )
    # Nothing happened since: this invocation made no call.
    assert run_calls(tmp_path / "ledger", ledger_calls(tmp_path / "ledger")).invocation == {}


class CallState(NamedTuple):
    mode: str
    attempts: int
    cost_usd: float


def states(calls: dict[str, CallState]) -> pa.Table:
    """A ledger's calls as `ledger_calls` reads them."""
    return pa.Table.from_pylist([{"key": key, **call._asdict()} for key, call in calls.items()], CALL_STATES)


# Costs in 1/1024 USD steps: their sums are exact, so totals compare whole.
COST = st.integers(0, 4096).map(lambda steps: steps / 1024)
MADE = st.builds(CallState, st.sampled_from(["single", "batch"]), st.integers(1, 6), COST)


@st.composite
def invocations(draw) -> tuple[dict[str, CallState], dict[str, CallState]]:
    """A ledger before an invocation, and after it: each call left alone, attempted again (more attempts,
    more cost, maybe another mode), or reused from a source (keeping what its failures cost here); new
    calls made or reused."""
    before = draw(st.dictionaries(st.text("abcdef", min_size=4, max_size=4), MADE, max_size=12))
    after = {}
    for key, then in before.items():
        change = draw(st.sampled_from(["none", "attempted", REUSED]))
        if change == "attempted":
            mode = draw(st.sampled_from(["single", "batch"]))
            then = CallState(mode, then.attempts + draw(st.integers(1, 6)), then.cost_usd + draw(COST))
        elif change == REUSED:
            then = CallState(REUSED, then.attempts, then.cost_usd)
        after[key] = then
    new = draw(
        st.dictionaries(st.text("ghij", min_size=4, max_size=4), MADE | st.just(CallState(REUSED, 0, 0.0)))
    )
    return before, {**after, **new}


@given(invocations())
def test_what_an_invocation_added_is_the_difference_between_the_run_s_totals_after_and_before_it(invocation):
    before, after = (states(calls) for calls in invocation)
    added = totals_by_mode(calls_added(before, after))
    assert sum(totals.cost_usd for totals in added.values()) == spent_usd(after) - spent_usd(before)
    run = totals_by_mode(after)
    assert all(totals.calls <= run[mode].calls for mode, totals in added.items())
    assert calls_added(after, after).num_rows == 0  # an invocation that did nothing added nothing
    assert list(run) == sorted(run, key=["single", "batch", REUSED].index)
