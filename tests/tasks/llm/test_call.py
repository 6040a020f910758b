import json
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import litellm
import pytest

from tasks.llm import in_flight
from tasks.llm.budget import BudgetState, CapStop, ProcessStore, SpendingBudget, spending_cap
from tasks.llm.call import batch_token_costs, complete, estimated_cost_usd, retry_delay, token_costs
from tasks.llm.errors import FIXES
from tasks.llm.ledger import CallLedger, CallRecord
from tasks.llm.request import CallOptions, ChatRequest, Prices, ProviderLimits, RetryPolicy
from tests.llm_server import LLMServer, refusing_url
from tests.llm_server_state import Action, tool_call

TRICKLE_S = 60.0
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


# --- waiting ----------------------------------------------------------------------------------------------


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
    assert time.monotonic() - began < 4  # the 0.3 s asked for, well short of the 5 s cap


# The failure, its kind, and the attempt's time-out: ample where nothing should time out, since an answer
# on a busy machine can take a while; 2 s where the server hangs (six hangs, so not more).
TRANSIENT = {
    "500": (Action(status=500), "server_error", 30.0),
    "503": (Action(status=503), "server_error", 30.0),
    "429": (Action(status=429), "rate_limit", 30.0),
    "malformed-body": (Action(raw_body='{"id": "x", "choi'), "server_error", 30.0),
    "empty-reply": (Action(content=""), "empty_reply", 30.0),
    "time-out": (Action(hang=True), "timeout", 2.0),
}


@pytest.mark.parametrize(("failure", "kind", "timeout_s"), TRANSIENT.values(), ids=TRANSIENT.keys())
def test_transient_failures_are_retried(server, tmp_path, failure, kind, timeout_s):
    server.script(failure, failure)
    outcome = complete(request(server), options(timeout_s=timeout_s), CallLedger(tmp_path))
    assert (outcome.status, outcome.attempts) == ("ok", 3)

    server.script(*[failure] * 4)
    again = request(server, prompt_version="again")
    failed = complete(again, options(timeout_s=timeout_s), CallLedger(tmp_path))
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
    # A piece every 0.1 s for 60 s: only a deadline on the whole attempt ends it well before the end.
    server.script(Action(trickle_s=TRICKLE_S))
    began = time.monotonic()
    outcome = complete(request(server), options(timeout_s=3.0), CallLedger(tmp_path))
    assert (outcome.status, outcome.attempts) == ("ok", 2)
    assert time.monotonic() - began < TRICKLE_S / 2

    server.script(Action(trickle_s=TRICKLE_S))
    began = time.monotonic()
    one_try = options(timeout_s=3.0, retry=RetryPolicy(max_attempts=1))
    failed = complete(request(server, prompt_version="again"), one_try, CallLedger(tmp_path))
    assert (failed.status, failed.error_kind, failed.retryable, failed.attempts) == (
        "failed",
        "timeout",
        True,
        1,
    )
    assert time.monotonic() - began < TRICKLE_S / 2


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
    assert time.monotonic() - began < 60  # far from the hour it was asked to wait, however busy the machine


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
    with LLMServer() as server:
        server.answer_in_groups(3)  # the limit is reached, whatever the machine's speed
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


def test_requests_in_flight_are_counted_per_model_while_open():
    requests = in_flight.OpenRequests()
    with requests.open("openai/a"), requests.open("openai/a"), requests.open("openai/b"):
        assert requests.counts() == {"openai/a": 2, "openai/b": 1}
    with requests.open("openai/b"):
        assert requests.counts() == {"openai/b": 1}
    assert requests.counts() == {}


def test_no_call_is_left_counted_in_flight_after_success_or_failure(server, tmp_path):
    server.script(Action(status=400))
    complete(request(server), options(), CallLedger(tmp_path))
    complete(request(server, prompt_version="2"), options(), CallLedger(tmp_path))
    assert in_flight.calls_in_flight() == {}


def test_a_withheld_reply_is_a_permanent_failure(server, tmp_path):
    server.script(Action(content="", finish_reason="content_filter"))
    outcome = complete(request(server), options(), CallLedger(tmp_path))
    assert (outcome.error_kind, outcome.retryable, len(server.requests)) == ("content_filter", False, 1)
    # A re-run gets the recorded refusal: sent again, the same request was refused and billed again.
    again = complete(request(server), options(), CallLedger(tmp_path))
    assert (again, len(server.requests)) == (outcome, 1)
    # Another model (another key) is asked.
    other = complete(request(server, model="openai/b"), options(), CallLedger(tmp_path))
    assert (other.status, len(server.requests)) == ("ok", 2)


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
    with refusing_url() as url:
        outage = ChatRequest(model="openai/m1", messages=MESSAGES, api_base=url)
        outcome = complete(outage, options(), CallLedger(tmp_path))
    assert (outcome.status, outcome.error_kind, outcome.attempts) == ("failed", "connection", 4)
    assert outcome.retryable and "re-run to retry" in outcome.error


# --- repeats, tool calls, JSON ------------------------------------------------------------------------------


def test_each_epoch_is_its_own_call_and_a_rerun_resumes_them_all(server, tmp_path):
    sampled = ChatRequest(
        model="openai/m1", messages=MESSAGES, params={"temperature": 0.7}, api_base=server.url
    )
    epochs = [sampled.model_copy(update={"epoch": epoch}) for epoch in range(2)]
    first = [complete(r, options(), CallLedger(tmp_path)) for r in epochs]
    assert len({r.key for r in first}) == 2
    # The epoch is never sent: the provider sees the same request twice, as repeated sampling needs.
    assert list(server.ok_counts().values()) == [2]
    assert server.requests[0].params["temperature"] == 0.7

    again = [complete(r, options(), CallLedger(tmp_path)) for r in epochs]
    assert again == first
    assert len(server.requests) == 2


def test_a_param_written_0_0_or_0_is_one_call_and_one_recorded_under_its_legacy_key_is_not_paid_again(
    server, tmp_path, monkeypatch
):
    ledger = CallLedger(tmp_path)
    as_float = request(server).model_copy(update={"params": {"temperature": 0.0}})
    first = complete(request(server), options(), ledger)
    assert (complete(as_float, options(), ledger), len(server.requests)) == (first, 1)

    # A run before whole-number floats were read as integers recorded a call under its legacy key.
    sampled = request(server).model_copy(update={"params": {"temperature": 1.0}})
    legacy = sampled.legacy_key()
    with monkeypatch.context() as old_code:
        old_code.setattr(ChatRequest, "key", lambda self: legacy)
        recorded = complete(sampled, options(), CallLedger(tmp_path))
    assert (recorded.key, len(server.requests)) == (legacy, 2)
    resumed = CallLedger(tmp_path)
    assert resumed.lookup(sampled.key()) is None
    assert resumed.find(sampled) == recorded
    assert (complete(sampled, options(), resumed), len(server.requests)) == (recorded, 2)


def test_a_reply_withheld_under_the_legacy_key_is_not_asked_again(server, tmp_path, monkeypatch):
    server.script(Action(content="", finish_reason="content_filter"))
    sampled = request(server).model_copy(update={"params": {"temperature": 1.0}})
    legacy = sampled.legacy_key()
    with monkeypatch.context() as old_code:
        old_code.setattr(ChatRequest, "key", lambda self: legacy)
        withheld = complete(sampled, options(), CallLedger(tmp_path))
    assert (withheld.error_kind, len(server.requests)) == ("content_filter", 1)
    assert (complete(sampled, options(), CallLedger(tmp_path)), len(server.requests)) == (withheld, 1)


def test_the_scope_tells_apart_calls_with_the_same_messages(server, tmp_path):
    ledger = CallLedger(tmp_path)
    for scope in ("snomed/patient", "snomed/clinician", "snomed/patient"):
        complete(request(server, scope=scope), options(), ledger)
    assert len(server.requests) == 2


VACCINE_TOOL = {
    "type": "function",
    "function": {
        "name": "lookup_vaccine",
        "description": "Look up a vaccine schedule.",
        "parameters": {"type": "object", "properties": {"vaccine": {"type": "string"}}},
    },
}


def test_a_reply_made_only_of_tool_calls_is_recorded_not_retried(server, tmp_path):
    calls = (tool_call("lookup_vaccine", {"vaccine": "tetanus"}), tool_call("lookup_vaccine", {}, "call_1"))
    server.script(Action(tool_calls=calls, finish_reason="tool_calls"))
    with_tools = request(server).model_copy(update={"params": {"temperature": 0, "tools": [VACCINE_TOOL]}})
    ledger = CallLedger(tmp_path)
    outcome = complete(with_tools, options(), ledger)
    assert (outcome.status, outcome.attempts, outcome.finish_reason) == ("ok", 1, "tool_calls")
    assert not outcome.text
    assert outcome.tool_calls == [
        {
            "id": "call_0",
            "type": "function",
            "function": {"name": "lookup_vaccine", "arguments": '{"vaccine": "tetanus"}'},
        },
        {"id": "call_1", "type": "function", "function": {"name": "lookup_vaccine", "arguments": "{}"}},
    ]
    assert server.requests[0].params["tools"] == [VACCINE_TOOL]
    assert set(server.requests[0].params) == {"temperature", "tools"}
    assert ledger.lookup(outcome.key) == outcome


def test_tool_calls_go_back_to_the_model_in_the_next_request(server, tmp_path):
    ledger = CallLedger(tmp_path)
    server.script(Action(tool_calls=(tool_call("lookup_vaccine", {"vaccine": "tetanus"}),)))
    asked = complete(request(server), options(), ledger)
    follow_up = request(server).model_copy(
        update={
            "messages": (
                *MESSAGES,
                {"role": "assistant", "content": None, "tool_calls": asked.tool_calls},
                {"role": "tool", "tool_call_id": "call_0", "content": "every 10 years"},
            )
        }
    )
    answered = complete(follow_up, options(), ledger)
    assert answered.text.startswith("m1 answer") and answered.tool_calls == []
    assert server.requests[1].messages[1]["tool_calls"] == asked.tool_calls


def test_a_reply_with_neither_text_nor_tool_calls_is_still_empty(server, tmp_path):
    server.script(Action(tool_calls=()), Action(content=""))
    outcome = complete(request(server), options(), CallLedger(tmp_path))
    assert (outcome.status, outcome.attempts) == ("ok", 3)


def test_a_json_reply_is_stored_parsed_when_the_request_asks_for_json(server, tmp_path):
    ledger = CallLedger(tmp_path)
    as_json = {"temperature": 0, "response_format": {"type": "json_object"}}
    server.script(Action(content='{"SCORE": 0.5, "REASON": "partly"}'), Action(content="SCORE: 0.5"))
    parsed = complete(request(server).model_copy(update={"params": as_json}), options(), ledger)
    not_json = complete(
        request(server, prompt_version="p2").model_copy(update={"params": as_json}), options(), ledger
    )
    free_text = complete(request(server), options(), ledger)
    assert parsed.structured == {"SCORE": 0.5, "REASON": "partly"}
    assert (not_json.status, not_json.text, not_json.structured) == ("ok", "SCORE: 0.5", None)
    assert free_text.structured is None
    assert server.requests[0].params["response_format"] == {"type": "json_object"}


def test_an_unpriced_model_is_looked_up_in_litellms_price_table_once(monkeypatch):
    looked_up = []

    def cost_per_token(**kwargs):
        looked_up.append(kwargs["model"])
        raise litellm.exceptions.ModelNotMappedError(kwargs["model"])

    monkeypatch.setattr(litellm, "cost_per_token", cost_per_token)
    costs = [token_costs("openai/local-only-model", 10, 5, None) for _ in range(3)]
    assert (costs, looked_up) == ([None, None, None], ["openai/local-only-model"])


def test_batch_calls_cost_litellms_batch_prices_else_the_single_price_times_the_discount():
    assert batch_token_costs("openai/gpt-4o", 1000, 1000, None, 0.5) == pytest.approx((0.00125, 0.005))
    assert batch_token_costs("openai/local", 1000, 1000, Prices(input_per_token=1e-6), 0.4) == pytest.approx(
        (0.0004, 0.0)
    )
    assert batch_token_costs("openai/not-a-known-model", 1000, 1000, None, 0.5) is None


def test_a_reply_utf8_cannot_hold_is_stored_escaped_and_never_paid_for_again(server, tmp_path):
    # JSON lets a server send a lone surrogate ("\ud83d", half an emoji); UTF-8 cannot store it.
    server.script(Action(content="Rest it \ud83d and ice it."))
    ledger = CallLedger(tmp_path)
    first = complete(request(server), options(), ledger)
    assert (first.status, first.text, first.escaped) == ("ok", "Rest it \\ud83d and ice it.", True)
    assert complete(request(server), options(), CallLedger(tmp_path)) == first
    assert len(server.requests) == 1


def test_a_custom_endpoint_gets_only_the_key_named_for_it(server, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret")
    monkeypatch.setenv("LOCAL_SERVER_KEY", "local-key")
    complete(request(server), options(), CallLedger(tmp_path / "unnamed"))
    complete(request(server), options(api_key_env="LOCAL_SERVER_KEY"), CallLedger(tmp_path / "named"))
    # An o-series model goes through litellm.completion rather than the direct route: the same rule holds.
    reasoning = request(server, model="openai/o3-mini").model_copy(update={"params": {}})
    complete(reasoning, options(), CallLedger(tmp_path / "litellm"))
    assert [r.authorization for r in server.requests] == [
        "Bearer no-key",
        "Bearer local-key",
        "Bearer no-key",
    ]


# --- the spending cap -------------------------------------------------------------------------------------

# Input tokens alone are priced: the server counts the prompt's 5 words, the estimate its 8 cl100k tokens.
INPUT_PRICED = Prices(input_per_token=1e-3, output_per_token=0.0)


def test_the_estimate_a_cap_reserves_is_the_prompt_and_the_expected_reply_at_the_call_s_prices(server):
    priced = options(prices=Prices(input_per_token=1e-3, output_per_token=2e-3), estimated_reply_tokens=50)
    assert estimated_cost_usd(request(server), priced) == pytest.approx(8 * 1e-3 + 50 * 2e-3)
    capped_reply = request(server).model_copy(update={"params": {"max_tokens": 20}})
    assert estimated_cost_usd(capped_reply, priced) == pytest.approx(8 * 1e-3 + 20 * 2e-3)
    batch = priced.model_copy(update={"mode": "batch", "batch_discount": 0.5})
    assert estimated_cost_usd(request(server), batch) == pytest.approx((8 * 1e-3 + 50 * 2e-3) / 2)
    assert estimated_cost_usd(request(server), options()) == 0.0  # unpriced: recorded at 0 too


def test_calls_stop_before_the_one_that_would_pass_the_cap_and_the_refused_are_not_recorded(server, tmp_path):
    ledger = CallLedger(tmp_path)
    budget = SpendingBudget(cap_usd=0.0195)  # 0.008 reserved per call, 0.005 paid: the 4th would pass it
    with spending_cap(tmp_path, budget):
        records = [
            complete(request(server, epoch=epoch), options(prices=INPUT_PRICED), ledger) for epoch in range(5)
        ]
    assert [(r.status, r.error_kind) for r in records] == [("ok", None)] * 3 + [("failed", "cost_cap")] * 2
    assert records[3].error == (
        "openai/m1: not made: stopped at the spending cap of USD 0.0195; raise --max-cost (max_cost_usd) and "
        "re-run to go on"
    )
    assert (records[3].attempts, records[3].cost_usd, records[3].retryable) == (0, 0.0, False)
    assert len(server.requests) == 3
    assert [record.key for record in ledger.records()] == sorted(r.key for r in records[:3])
    assert (budget.spent_usd, ledger.total_cost_usd()) == (pytest.approx(0.015), pytest.approx(0.015))
    spent = ledger.total_cost_usd()
    assert budget.stop_after(spent) == CapStop(cap_usd=0.0195, spent_usd=spent, refused_usd=0.008)


def test_a_call_in_flight_counts_against_the_cap_until_it_returns(server, tmp_path):
    ledger = CallLedger(tmp_path)
    budget = SpendingBudget(cap_usd=0.012)  # one estimate (0.008) fits, two do not
    server.hold_after(0)  # the first call stays in flight until the test lets it go
    with spending_cap(tmp_path, budget), ThreadPoolExecutor(1) as pool:
        first = pool.submit(complete, request(server, epoch=0), options(prices=INPUT_PRICED), ledger)
        deadline = time.monotonic() + 600  # a liveness bound only: a busy machine is slow, not wrong
        while budget.reserved_usd == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        second = complete(request(server, epoch=1), options(prices=INPUT_PRICED), ledger)
        server.drop_held()
        assert first.result().status == "ok"
    assert second.error_kind == "cost_cap"
    # The call in flight when the second was refused is paid: what the run spent counts it.
    assert (budget.reserved_usd, budget.spent_usd) == (0.0, pytest.approx(0.005))
    spent = ledger.total_cost_usd()
    assert budget.stop_after(spent) == CapStop(cap_usd=0.012, spent_usd=spent, refused_usd=0.008)


def test_a_failed_call_gives_back_its_reservation_keeping_only_what_was_billed(server, tmp_path):
    server.script(Action(status=400))
    budget = SpendingBudget(cap_usd=0.01)
    with spending_cap(tmp_path, budget):
        failed = complete(request(server), options(prices=INPUT_PRICED), CallLedger(tmp_path))
        assert (failed.error_kind, budget.reserved_usd, budget.spent_usd) == ("bad_request", 0.0, 0.0)
        assert (
            complete(request(server, epoch=1), options(prices=INPUT_PRICED), CallLedger(tmp_path)).status
            == "ok"
        )


def test_a_batch_call_the_cap_kept_from_its_batch_reads_as_stopped_by_the_cap(server, tmp_path):
    batch = options(prices=INPUT_PRICED, mode="batch")
    budget = SpendingBudget(cap_usd=0.0)
    with spending_cap(tmp_path, budget):
        assert complete(request(server), batch, CallLedger(tmp_path)).error_kind == "not_submitted"
        assert not budget.reserve("too-dear", 0.01)
        assert complete(request(server), batch, CallLedger(tmp_path)).error_kind == "cost_cap"
    assert server.requests == []


class CarryingStore(ProcessStore):
    """A budget kept in this process whose changes another request can carry, as a Dask scheduler's can: the
    message is the rule itself."""

    def change_message(self, rule):
        return rule


class OtherProcesses:
    """A Dask worker's holder of call keys across the cluster (in_flight.KeyHolder), stood in: it makes the
    change a hold carries, and may have another process record the call first (`recorded_meanwhile`)."""

    def __init__(self, store: CarryingStore, recorded_meanwhile: CallRecord | None = None) -> None:
        self.store, self.recorded_meanwhile, self.carried = store, recorded_meanwhile, []

    @contextmanager
    def hold(self, key, ledger, change=None):
        if self.recorded_meanwhile is not None:
            ledger.write(self.recorded_meanwhile)
        self.carried.append(change is not None)
        yield None if change is None else self.store.change(change)


def test_a_capped_call_in_a_cluster_worker_reserves_with_the_hold_of_its_key(server, tmp_path, monkeypatch):
    store = CarryingStore(BudgetState(cap_usd=0.01))
    monkeypatch.setattr(in_flight, "other_processes", holder := OtherProcesses(store))
    budget = SpendingBudget(0.01, store=store)
    with spending_cap(tmp_path, budget):
        record = complete(request(server), options(prices=INPUT_PRICED), CallLedger(tmp_path))
    assert (record.status, holder.carried, len(server.requests)) == ("ok", [True], 1)
    assert (budget.reserved_usd, budget.spent_usd) == (0.0, record.cost_usd)


def test_a_call_another_process_recorded_during_the_hold_gives_back_the_reservation_it_carried(
    server, tmp_path, monkeypatch
):
    made_elsewhere = complete(request(server), options(prices=INPUT_PRICED), CallLedger(tmp_path / "other"))
    store = CarryingStore(BudgetState(cap_usd=0.01))
    monkeypatch.setattr(in_flight, "other_processes", holder := OtherProcesses(store, made_elsewhere))
    budget = SpendingBudget(0.01, store=store)
    with spending_cap(tmp_path / "run", budget):
        record = complete(request(server), options(prices=INPUT_PRICED), CallLedger(tmp_path / "run"))
    assert (record, holder.carried, len(server.requests)) == (made_elsewhere, [True], 1)
    assert (budget.reserved_usd, budget.spent_usd, budget.stopped) == (0.0, 0.0, False)


# --- Ctrl-C: no attempt sent once sending stops, every reply on its way recorded --------------------------


def in_background(function, *arguments) -> tuple[threading.Thread, dict]:
    """`function(*arguments)` in a daemon thread (a call that waits for its process to exit never returns);
    its result lands in the dict under "result"."""
    outcome: dict = {}
    thread = threading.Thread(target=lambda: outcome.update(result=function(*arguments)), daemon=True)
    thread.start()
    return thread, outcome


def wait_until(done, what: str) -> None:
    deadline = time.monotonic() + 600  # a liveness bound only
    while not done():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_once_sending_stops_no_attempt_is_sent_and_every_reply_on_its_way_is_recorded(
    server, tmp_path, monkeypatch
):
    monkeypatch.setattr(in_flight, "sending", in_flight.Sending())  # this test's own: stopped for good
    ledger = CallLedger(tmp_path)
    server.script(Action(status=500), model="m2")
    slow_retry = options(retry=RetryPolicy(max_attempts=3, base_delay_s=600, max_delay_s=600))
    _, retried = in_background(complete, request(server, model="openai/m2"), slow_retry, ledger)
    wait_until(lambda: len(server.requests) == 1, "m2's first attempt never reached the server")
    server.hold_after(0)
    _, answered = in_background(complete, request(server), options(), ledger)
    wait_until(lambda: server.stats()["held"] == 1, "m1 never reached the server")

    in_flight.stop_sending()  # Ctrl-C: m1 is in flight, m2 waits 600 s for its next attempt
    unsent, never = in_background(complete, request(server, model="openai/m3"), options(), ledger)
    server.answer_held()
    assert in_flight.wait_for_calls(600) == 0  # a liveness bound: m1 recorded, m2's wait cut short
    assert answered["result"] == ledger.lookup(request(server).key())
    failure = retried["result"]
    assert (failure.status, failure.attempts, failure.error_kind) == ("failed", 1, "server_error")
    assert failure.error.endswith("(interrupted before its next attempt; re-run to retry)")
    assert ledger.last_failure(request(server, model="openai/m2").key()) == failure
    assert [r.model for r in server.requests] == ["m2", "m1"]  # m2's retry and m3 never sent
    unsent.join(0.5)
    assert unsent.is_alive() and never == {}  # m3 waits for the process to exit: nothing to record
    assert in_flight.wait_for_calls(0) == 0
