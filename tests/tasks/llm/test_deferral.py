from datetime import UTC, datetime

from tasks.llm.call import complete
from tasks.llm.deferral import AWAITING_BATCH, NOT_SUBMITTED, CallCollector, collecting
from tasks.llm.ledger import CallLedger, CallRecord
from tasks.llm.request import CallOptions, ChatRequest

# Nothing listens there: a batch-mode call must never be sent on its own.
REQUEST = ChatRequest(
    model="openai/m",
    messages=({"role": "user", "content": "Is it broken?"},),
    api_base="http://127.0.0.1:9/v1",
)
BATCH = CallOptions(provider="openai", mode="batch")
WHEN = datetime(2026, 11, 24, tzinfo=UTC)


def record(status: str, **fields) -> CallRecord:
    return CallRecord(
        key=REQUEST.key(), model="openai/m", status=status, started_at=WHEN, finished_at=WHEN, **fields
    )


def test_a_batch_call_is_deferred_while_collecting_and_reads_as_a_failure_that_is_never_written(tmp_path):
    ledger = CallLedger(tmp_path)
    with collecting(CallCollector()) as collector:
        outcome = complete(REQUEST, BATCH, ledger)
    assert (outcome.status, outcome.error_kind, outcome.mode) == ("failed", AWAITING_BATCH, "batch")
    assert collector.pending() == {REQUEST.key(): (REQUEST, BATCH)}
    assert list(ledger.records()) == []


def test_a_batch_call_in_the_ledger_is_answered_from_it_even_while_collecting(tmp_path):
    ledger = CallLedger(tmp_path)
    ledger.write(record("ok", text="A sprain.", mode="batch"))
    with collecting(CallCollector()) as collector:
        assert complete(REQUEST, BATCH, ledger).text == "A sprain."
    assert collector.pending() == {}


def test_a_settled_call_reads_as_its_latest_failure_and_is_not_deferred_again(tmp_path):
    ledger = CallLedger(tmp_path)
    failure = record("failed", error_kind="bad_request", error="openai/m: bad", retryable=False, attempts=1)
    ledger.write(failure)
    with collecting(CallCollector(settled=frozenset({REQUEST.key()}))) as collector:
        assert complete(REQUEST, BATCH, ledger) == failure
    assert collector.pending() == {}


def test_outside_a_walk_a_batch_call_never_sent_fails_as_not_submitted_without_calling(tmp_path):
    outcome = complete(REQUEST, BATCH, CallLedger(tmp_path))
    assert (outcome.status, outcome.error_kind, outcome.attempts) == ("failed", NOT_SUBMITTED, 0)
