import itertools
import json
import random
import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from tasks.llm.call import (
    FIXES,
    CallOptions,
    ChatRequest,
    Prices,
    ProviderLimiter,
    ProviderLimits,
    RetryPolicy,
    complete,
    parse_retry_after,
    retry_delay,
)
from tasks.llm.ledger import CallLedger
from tests.llm_server import Action, LLMServer

FAST = RetryPolicy(max_attempts=4, base_delay_s=0.01, max_delay_s=0.05, max_retry_after_s=5)
MESSAGES = ({"role": "user", "content": "My ankle is swollen. X-ray?"},)


@pytest.fixture
def server():
    with LLMServer() as running:
        yield running


def request(server: LLMServer, model: str = "openai/m1", **fields) -> ChatRequest:
    return ChatRequest(
        model=model, messages=MESSAGES, params={"temperature": 0}, api_base=server.url, **fields
    )


def options(**fields) -> CallOptions:
    return CallOptions(provider=fields.pop("provider", "test"), retry=fields.pop("retry", FAST), **fields)


# --- call key -------------------------------------------------------------------------------------------


def test_call_key_covers_what_changes_the_reply_and_nothing_else():
    base = ChatRequest(model="openai/m1", messages=MESSAGES, params={"temperature": 0, "max_tokens": 9})
    same = ChatRequest(model="openai/m1", messages=MESSAGES, params={"max_tokens": 9, "temperature": 0})
    assert base.key() == same.key()
    changed = [
        base.model_copy(update={"model": "openai/m2"}),
        base.model_copy(update={"messages": (*MESSAGES, {"role": "user", "content": "?"})}),
        base.model_copy(update={"params": {"temperature": 1, "max_tokens": 9}}),
        base.model_copy(update={"api_base": "http://127.0.0.1:1/v1"}),
        base.model_copy(update={"prompt_version": "judge_rubric_v2"}),
    ]
    assert len({base.key(), *(c.key() for c in changed)}) == 6


# --- waiting ----------------------------------------------------------------------------------------------


def test_retry_after_is_read_in_every_form():
    in_two_minutes = format_datetime(datetime.now(UTC) + timedelta(minutes=2), usegmt=True)
    assert parse_retry_after(httpx.Headers({"Retry-After": "120"})) == 120
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "1500", "retry-after": "9"})) == 1.5
    assert parse_retry_after(httpx.Headers({"Retry-After": in_two_minutes})) == pytest.approx(120, abs=2)
    assert parse_retry_after(httpx.Headers({"Retry-After": "soon"})) is None
    assert parse_retry_after(None) is None


def test_back_off_doubles_with_jitter_up_to_the_cap():
    policy = RetryPolicy(base_delay_s=1, max_delay_s=8)
    rng = random.Random(0)
    for attempt, nominal in [(1, 1), (2, 2), (3, 4), (4, 8), (9, 8)]:
        delays = [retry_delay(attempt, policy, None, rng) for _ in range(200)]
        assert nominal / 2 <= min(delays) and max(delays) <= nominal
        assert max(delays) - min(delays) > nominal / 4  # jittered, so retries spread out


def test_a_long_retry_after_is_honoured_and_one_beyond_the_cap_gives_up():
    policy = RetryPolicy(base_delay_s=1, max_retry_after_s=900)
    rng = random.Random(0)
    assert 300 <= retry_delay(1, policy, 300.0, rng) <= 301  # five minutes, not the 1 s back-off
    assert retry_delay(1, policy, 901.0, rng) is None


# --- the HTTP path ----------------------------------------------------------------------------------------


def test_a_success_is_recorded_and_never_asked_again(server, tmp_path):
    ledger = CallLedger(tmp_path)
    first = complete(request(server), options(), ledger)
    again = complete(request(server), options(), ledger)
    assert first.status == "ok" and first.text.startswith("m1 answer")
    assert (first.attempts, first.finish_reason, first.response_id) == (1, "stop", "chatcmpl-0")
    assert again == first
    assert len(server.requests) == 1
    assert server.requests[0].params["temperature"] == 0


def test_rate_limit_waits_for_retry_after_then_succeeds(server, tmp_path):
    server.script(Action(status=429, retry_after="0.3"))
    began = time.monotonic()
    outcome = complete(request(server), options(), CallLedger(tmp_path))
    assert outcome.status == "ok" and outcome.attempts == 2
    assert server.requests[1].started - server.requests[0].finished >= 0.3
    assert time.monotonic() - began < 2


TRANSIENT = {
    "500": (Action(status=500), "server_error"),
    "503": (Action(status=503), "server_error"),
    "429": (Action(status=429), "rate_limit"),
    "malformed-body": (Action(raw_body='{"id": "x", "choi'), "server_error"),
    "empty-reply": (Action(content=""), "empty_reply"),
    "time-out": (Action(delay_s=1.0), "timeout"),
}


@pytest.mark.parametrize(("failure", "kind"), TRANSIENT.values(), ids=TRANSIENT.keys())
def test_transient_failures_are_retried(server, tmp_path, failure, kind):
    server.script(failure, failure)
    outcome = complete(request(server), options(timeout_s=0.3), CallLedger(tmp_path))
    assert (outcome.status, outcome.attempts) == ("ok", 3)

    server.script(*[failure] * 4)
    failed = complete(request(server, prompt_version="again"), options(timeout_s=0.3), CallLedger(tmp_path))
    assert (failed.status, failed.error_kind, failed.retryable, failed.attempts) == ("failed", kind, True, 4)


@pytest.mark.parametrize(
    ("status", "kind", "fix"),
    [
        (400, "bad_request", "params"),
        (401, "authentication", "key"),
        (404, "not_found", "model string"),
    ],
)
def test_permanent_errors_fail_at_once_naming_model_and_fix(server, tmp_path, status, kind, fix):
    server.script(Action(status=status))
    outcome = complete(request(server), options(), CallLedger(tmp_path))
    assert len(server.requests) == 1
    assert (outcome.status, outcome.error_kind, outcome.retryable, outcome.text) == (
        "failed",
        kind,
        False,
        None,
    )
    assert outcome.error.startswith("openai/m1: ") and "Fix:" in outcome.error and fix in outcome.error


def test_a_context_length_error_is_permanent(server, tmp_path):
    error = {
        "message": "This model's maximum context length is 8192 tokens",
        "code": "context_length_exceeded",
    }
    too_long = json.dumps({"error": error})
    server.script(Action(status=400, raw_body=too_long))
    outcome = complete(request(server), options(), CallLedger(tmp_path))
    assert (outcome.error_kind, outcome.retryable, len(server.requests)) == ("context_length", False, 1)


# Gateways (OpenRouter, proxies) answer HTTP 200 with an `{"error": ...}` body, e.g. when overloaded.
TRANSIENT_IN_A_200 = {
    "overloaded": ({"message": "Overloaded", "type": "overloaded_error"}, "server_error"),
    "server-error": (
        {"message": "The server had an error while processing your request.", "type": "server_error"},
        "server_error",
    ),
    "rate-limit": ({"message": "Rate limit exceeded: free-models-per-min.", "code": 429}, "rate_limit"),
    "upstream-502": ({"message": "Upstream returned an invalid response", "code": 502}, "server_error"),
}


@pytest.mark.parametrize(("error", "kind"), TRANSIENT_IN_A_200.values(), ids=TRANSIENT_IN_A_200.keys())
def test_a_transient_error_in_a_200_body_is_retried_keeping_its_message(server, tmp_path, error, kind):
    server.script(Action(error=error), Action(error=error))
    outcome = complete(request(server), options(), CallLedger(tmp_path))
    assert (outcome.status, outcome.attempts) == ("ok", 3)

    ledger = CallLedger(tmp_path)
    server.script(*[Action(error=error)] * 4)
    failed = complete(request(server, prompt_version="again"), options(), ledger)
    assert (failed.status, failed.error_kind, failed.retryable, failed.attempts) == ("failed", kind, True, 4)
    given_up = "gave up after 4 attempts; re-run to retry"
    assert failed.error == f"openai/m1: error in an HTTP 200 reply: {error['message']} ({given_up})"
    assert ledger.last_failure(failed.key) == failed


PERMANENT_IN_A_200 = {
    "bad-key": ({"message": "Incorrect API key provided", "code": 401}, "authentication"),
    "unknown-model": ({"message": "The model `gpt-9` does not exist", "code": 404}, "not_found"),
    "context": (
        {"message": "This model's maximum context length is 8192 tokens", "code": "context_length_exceeded"},
        "context_length",
    ),
    "no-code": ({"message": "Provider returned error", "type": "invalid_request_error"}, "provider_error"),
}


@pytest.mark.parametrize(("error", "kind"), PERMANENT_IN_A_200.values(), ids=PERMANENT_IN_A_200.keys())
def test_a_permanent_error_in_a_200_body_fails_at_once_keeping_its_message(server, tmp_path, error, kind):
    server.script(Action(error=error))
    outcome = complete(request(server), options(), CallLedger(tmp_path))
    assert (outcome.status, outcome.error_kind, outcome.retryable, len(server.requests)) == (
        "failed",
        kind,
        False,
        1,
    )
    assert outcome.error == f"openai/m1: error in an HTTP 200 reply: {error['message']}. Fix: {FIXES[kind]}"


def test_the_time_out_bounds_each_whole_attempt_even_a_trickled_reply(server, tmp_path):
    server.script(Action(trickle_s=4.0))
    began = time.monotonic()
    outcome = complete(request(server), options(timeout_s=1.0), CallLedger(tmp_path))
    assert (outcome.status, outcome.attempts) == ("ok", 2)
    assert time.monotonic() - began < 2

    server.script(Action(trickle_s=4.0))
    began = time.monotonic()
    one_try = options(timeout_s=1.0, retry=RetryPolicy(max_attempts=1))
    failed = complete(request(server, prompt_version="again"), one_try, CallLedger(tmp_path))
    assert (failed.status, failed.error_kind, failed.retryable, failed.attempts) == (
        "failed",
        "timeout",
        True,
        1,
    )
    assert time.monotonic() - began < 1.5


def test_a_missing_key_fails_before_any_request(server, tmp_path, monkeypatch):
    monkeypatch.delenv("THREADMED_TEST_KEY", raising=False)
    outcome = complete(request(server), options(api_key_env="THREADMED_TEST_KEY"), CallLedger(tmp_path))
    assert (outcome.error_kind, outcome.attempts, len(server.requests)) == ("authentication", 1, 0)
    assert "THREADMED_TEST_KEY is not set" in outcome.error


def test_giving_up_is_recorded_and_a_rerun_continues_the_count(server, tmp_path):
    ledger = CallLedger(tmp_path)
    server.script(*[Action(status=500)] * 4)
    failed = complete(request(server), options(), ledger)
    assert (failed.status, failed.error_kind, failed.retryable, failed.attempts) == (
        "failed",
        "server_error",
        True,
        4,
    )
    assert "gave up after 4 attempts" in failed.error

    done = complete(request(server), options(), ledger)
    assert (done.status, done.attempts) == ("ok", 5)
    assert ledger.last_failure(done.key) is None


def test_a_retry_after_beyond_the_cap_fails_without_waiting(server, tmp_path):
    server.script(Action(status=429, retry_after="3600"))
    began = time.monotonic()
    outcome = complete(request(server), options(), CallLedger(tmp_path))
    assert (outcome.error_kind, outcome.attempts) == ("rate_limit", 1)
    assert "asked to wait 3600 s" in outcome.error
    assert time.monotonic() - began < 1


def test_costs_add_every_paid_attempt(server, tmp_path):
    server.script(Action(content=" "))  # an empty reply is billed, then retried
    prices = Prices(input_per_token=1e-3, output_per_token=2e-3)
    outcome = complete(request(server), options(prices=prices), CallLedger(tmp_path))
    prompt_words = len(MESSAGES[0]["content"].split())
    reply_words = len(outcome.text.split())
    assert (outcome.prompt_tokens, outcome.completion_tokens) == (2 * prompt_words, reply_words)
    assert outcome.input_cost_usd == pytest.approx(2 * prompt_words * 1e-3)
    assert outcome.output_cost_usd == pytest.approx(reply_words * 2e-3)


def test_a_known_model_is_priced_from_litellm(server, tmp_path):
    outcome = complete(request(server), options(price_model="openai/gpt-4o"), CallLedger(tmp_path))
    assert outcome.input_cost_usd == pytest.approx(outcome.prompt_tokens * 2.5e-6)
    assert outcome.output_cost_usd == pytest.approx(outcome.completion_tokens * 1e-5)


def test_concurrency_per_provider_never_exceeds_its_limit(tmp_path):
    limits = ProviderLimits(max_concurrency=3)
    with LLMServer(latency_s=0.1) as server:
        calls = [
            threading.Thread(
                target=complete,
                args=(request(server, prompt_version=str(i)), options(limits=limits), CallLedger(tmp_path)),
            )
            for i in range(12)
        ]
        for call in calls:
            call.start()
        for call in calls:
            call.join()
    assert len(server.requests) == 12
    assert server.state.max_in_flight == 3


def test_requests_per_minute_spaces_call_starts():
    limiter = ProviderLimiter(ProviderLimits(max_concurrency=5, requests_per_minute=600))
    starts = []
    for _ in range(4):
        with limiter.slot():
            starts.append(time.monotonic())
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= 0.095


def test_a_pause_holds_every_new_call():
    limiter = ProviderLimiter(ProviderLimits(max_concurrency=5))
    limiter.pause(0.2)
    began = time.monotonic()
    with limiter.slot():
        assert time.monotonic() - began >= 0.19


def test_a_withheld_reply_is_a_permanent_failure(server, tmp_path):
    server.script(Action(content="", finish_reason="content_filter"))
    outcome = complete(request(server), options(), CallLedger(tmp_path))
    assert (outcome.error_kind, outcome.retryable, len(server.requests)) == ("content_filter", False, 1)


def test_identical_requests_in_flight_together_are_made_once(tmp_path):
    with LLMServer(latency_s=0.2) as server:
        outcomes = []
        calls = [
            threading.Thread(
                target=lambda: outcomes.append(complete(request(server), options(), CallLedger(tmp_path)))
            )
            for _ in range(3)
        ]
        for call in calls:
            call.start()
        for call in calls:
            call.join()
    assert len(server.requests) == 1
    assert len(outcomes) == 3 and len({o.model_dump_json() for o in outcomes}) == 1


def test_a_provider_outage_is_retried_then_recorded(tmp_path):
    with LLMServer() as gone:
        url = gone.url
    outage = ChatRequest(model="openai/m1", messages=MESSAGES, api_base=url)
    outcome = complete(outage, options(), CallLedger(tmp_path))
    assert (outcome.status, outcome.error_kind, outcome.attempts) == ("failed", "connection", 4)
    assert outcome.retryable and "re-run to retry" in outcome.error
