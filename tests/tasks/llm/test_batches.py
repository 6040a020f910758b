"""Provider batches through litellm's real files + batches calls, against the local server."""

import io
import json

import litellm
import pytest

from tasks.llm.batches import (
    METADATA_KEY,
    BatchStore,
    advance,
    line_record,
    request_line,
    request_lines,
    split_into_batches,
)
from tasks.llm.call import complete
from tasks.llm.ledger import CallLedger
from tasks.llm.request import CallOptions, ChatRequest, Prices
from tests.llm_server import LLMServer
from tests.llm_server_state import BatchScript

PRICES = Prices(input_per_token=1e-6, output_per_token=3e-6)
BATCH = CallOptions(provider="openai", mode="batch", prices=PRICES, batch_discount=0.5)
QUESTIONS = ("Is my ankle broken?", "Should I see a doctor about a rash?", "Why do I get headaches?")


@pytest.fixture
def server():
    with LLMServer() as running:
        yield running


def requests_for(server: LLMServer) -> dict[str, ChatRequest]:
    requests = [
        ChatRequest(
            model="openai/m",
            messages=({"role": "user", "content": question},),
            params={"temperature": 0},
            api_base=server.url,
        )
        for question in QUESTIONS
    ]
    return {request.key(): request for request in requests}


def submitted(server: LLMServer, tmp_path, options: CallOptions = BATCH):
    """A batch of the three questions, taken as far as it goes now; with its store and ledger."""
    store, ledger = BatchStore(tmp_path / "batches"), CallLedger(tmp_path / "ledger")
    record = store.create(1, requests_for(server), options)
    return advance(record, store, ledger), store, ledger


def test_the_input_file_holds_each_call_as_sent_alone_keyed_by_its_call_key(server):
    calls = requests_for(server)
    lines = [json.loads(line) for line in request_lines(calls).decode().splitlines()]
    first_key, first = next(iter(calls.items()))
    assert len(lines) == 3
    assert lines[0] == {
        "custom_id": first_key,
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": "m", "messages": [dict(first.messages[0])], "temperature": 0},
    }


def test_a_finished_batch_lands_in_the_ledger_as_single_calls_would_at_batch_prices(server, tmp_path):
    record, store, ledger = submitted(server, tmp_path)
    assert (record.status, record.collected, record.batch_id) == ("completed", True, "batch_1")
    assert store.records() == [record]
    single_ledger = CallLedger(tmp_path / "single")
    assert store.requests(record) == requests_for(server)
    for key, request in requests_for(server).items():
        batched = ledger.lookup(key)
        single = complete(request, BATCH.model_copy(update={"mode": "single"}), single_ledger)
        same = ("text", "prompt_tokens", "completion_tokens", "finish_reason", "status", "attempts")
        assert {f: getattr(batched, f) for f in same} == {f: getattr(single, f) for f in same}
        assert (batched.mode, batched.batch_id) == ("batch", "batch_1")
        assert batched.cost_usd == pytest.approx(single.cost_usd / 2)
    assert server.stats()["batch_requests"] == 3


def test_a_batch_in_flight_is_checked_again_never_submitted_again(server, tmp_path):
    server.hold_batches()
    record, store, ledger = submitted(server, tmp_path)
    again = advance(record, store, ledger)
    assert (again.status, again.collected, again.batch_id) == ("in_progress", False, "batch_1")
    assert list(ledger.records()) == []
    assert server.stats()["batches"] == 1
    assert store.in_flight() == [again]


def test_failed_lines_are_recorded_failures_transient_or_permanent_and_the_rest_succeed(server, tmp_path):
    server.script_batch(BatchScript(failed_lines={1: 500, 2: 400}))
    record, _, ledger = submitted(server, tmp_path)
    keys = record.keys
    assert ledger.lookup(keys[0]).status == "ok"
    outcomes = [ledger.last_failure(key) for key in keys[1:]]
    assert [(o.error_kind, o.retryable, o.attempts, o.mode) for o in outcomes] == [
        ("server_error", True, 1, "batch"),
        ("bad_request", False, 1, "batch"),
    ]
    assert record.request_counts == {"total": 3, "completed": 1, "failed": 2}


def test_the_calls_an_expired_batch_left_unanswered_get_no_record_so_they_are_sent_again(server, tmp_path):
    server.script_batch(BatchScript(expire=True, expire_completed=1))
    record, _, ledger = submitted(server, tmp_path)
    keys = record.keys
    assert (record.status, record.collected) == ("expired", True)
    assert ledger.lookup(keys[0]).status == "ok"
    assert [(ledger.lookup(key), ledger.last_failure(key)) for key in keys[1:]] == [(None, None)] * 2


def test_a_rejected_batch_fails_every_call_with_the_providers_reason(server, tmp_path):
    server.script_batch(BatchScript(fail=True))
    record, _, ledger = submitted(server, tmp_path)
    failures = [ledger.last_failure(key) for key in record.keys]
    assert {(f.error_kind, f.retryable) for f in failures} == {("batch_rejected", False)}
    assert "Scripted failure." in failures[0].error


@pytest.mark.parametrize("newer_batches", [0, 100], ids=["latest", "past-the-first-page"])
def test_a_batch_created_before_a_crash_recorded_its_id_is_found_again_not_created_twice(
    server, tmp_path, newer_batches
):
    store, ledger = BatchStore(tmp_path / "batches"), CallLedger(tmp_path / "ledger")
    record = store.create(1, requests_for(server), BATCH)
    access = {"custom_llm_provider": "openai", "api_base": server.url, "api_key": "no-key"}
    upload = io.BytesIO(request_lines(requests_for(server)))
    upload.name = "calls.jsonl"
    file_id = litellm.create_file(file=upload, purpose="batch", **access).id
    created = litellm.create_batch(
        completion_window="24h",
        endpoint="/v1/chat/completions",
        input_file_id=file_id,
        metadata={METADATA_KEY: record.local_id},
        **access,
    )
    # The process died here: the record knows the file, not the batch.
    record = store.write(record.model_copy(update={"input_file_id": file_id}))
    other = litellm.create_file(file=("other.jsonl", b""), purpose="batch", **access).id
    for _ in range(newer_batches):  # other work in the same account since: a page of 100 does not reach it
        litellm.create_batch(
            completion_window="24h", endpoint="/v1/chat/completions", input_file_id=other, **access
        )
    resumed = advance(record, store, ledger)
    assert (resumed.batch_id, resumed.collected) == (created.id, True)
    assert server.stats()["batches"] == 1 + newer_batches
    assert server.stats()["max_submissions_per_custom_id"] == 1


def test_an_answer_that_is_not_a_chat_completion_is_a_transient_failure(server, tmp_path):
    record = BatchStore(tmp_path).create(1, requests_for(server), BATCH)
    key, request = next(iter(requests_for(server).items()))
    line = {"custom_id": key, "response": {"status_code": 200, "body": {"choices": "none"}}, "error": None}
    outcome = line_record(record, request, line, None)
    assert (outcome.status, outcome.error_kind, outcome.retryable, outcome.attempts) == (
        "failed",
        "server_error",
        True,
        1,
    )
    assert outcome.error.startswith("openai/m: an answer in the batch output is not a chat completion")


def test_a_wave_is_cut_into_batches_within_the_providers_call_and_size_limits(server):
    calls = requests_for(server)
    line_sizes = [len(request_line(key, request)) for key, request in calls.items()]
    assert [list(b) for b in split_into_batches(calls, 2, 10**6)] == [list(calls)[:2], list(calls)[2:]]
    by_size = split_into_batches(calls, 10, line_sizes[0] + line_sizes[1] - 1)
    assert [list(b) for b in by_size] == [[key] for key in calls]
    assert request_lines(calls).count(b"\n") == 3


def test_a_batch_the_provider_no_longer_knows_leaves_its_calls_unanswered_to_be_sent_again(server, tmp_path):
    server.script_batch(BatchScript(delay_s=3600))
    record, store, ledger = submitted(server, tmp_path)
    server.forget_batch(record.batch_id)
    vanished = advance(record, store, ledger)
    assert (vanished.status, vanished.collected, vanished.batch_id) == ("vanished", True, "batch_1")
    assert store.in_flight() == []
    assert list(ledger.records()) == []
