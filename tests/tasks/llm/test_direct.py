import json
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import litellm
import pytest

from tasks.llm import direct
from tasks.llm.call import complete
from tasks.llm.direct import direct_route, send_direct
from tasks.llm.errors import CallError, classify_error
from tasks.llm.ledger import CallLedger
from tasks.llm.request import CallOptions, ChatRequest, RetryPolicy
from tests.llm_server import LLMServer, refusing_url
from tests.llm_server_state import Action, tool_call

MESSAGES = ({"role": "user", "content": "My ankle is swollen. X-ray?"},)
ONE_TRY = CallOptions(provider="test", retry=RetryPolicy(max_attempts=1))
TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}


@pytest.fixture
def server():
    with LLMServer() as running:
        yield running


def test_openai_compatible_servers_take_the_direct_route_and_the_rest_litellm(server):
    plain = {"temperature": 0, "max_tokens": 50}
    assert direct_route("openai/m1", server.url, plain).model == "m1"
    assert direct_route("openai/gpt-4o", server.url, {"tools": [TOOL]}).model == "gpt-4o"
    assert direct_route("openai/m1", None, plain) is None  # api.openai.com: litellm's own route
    assert direct_route("openai/gpt-5", server.url, plain) is None  # litellm rewrites its params
    assert direct_route("openai/o3-mini", server.url, {"max_tokens": 50}) is None
    assert direct_route("hosted_vllm/m1", server.url, plain) is None
    assert direct_route("threadmed/echo", server.url, plain) is None
    assert direct_route("openai/m1", server.url, {"stop": {"never"}}) is None  # not JSON: litellm decides


# One failure or reply per case; each is asked through both routes and must be recorded the same.
CASES = {
    "text": Action(),
    "tool-calls": Action(tool_calls=(tool_call("lookup", {"q": "tetanus"}),), finish_reason="tool_calls"),
    "json": Action(content='{"SCORE": 0.5}'),
    "empty": Action(content=""),
    "content-filter": Action(content="", finish_reason="content_filter"),
    "400": Action(status=400),
    "401": Action(status=401),
    "404": Action(status=404),
    "429-retry-after": Action(status=429, retry_after="7"),
    "503": Action(status=503),
    "context-length": Action(
        status=400, raw_body=json.dumps({"error": {"message": "maximum context length is 8192 tokens"}})
    ),
    "overloaded-in-a-200": Action(error={"message": "Overloaded", "type": "overloaded_error"}),
    "bad-key-in-a-200": Action(error={"message": "Incorrect API key provided", "code": 401}),
}


@pytest.mark.parametrize("action", CASES.values(), ids=CASES.keys())
def test_the_direct_route_records_what_litellm_records(server, tmp_path, monkeypatch, action):
    params = {"temperature": 0, "tools": [TOOL], "response_format": {"type": "json_object"}}
    asked = ChatRequest(model="openai/m1", messages=MESSAGES, params=params, api_base=server.url)
    server.script(action)
    on_the_route = complete(asked, ONE_TRY, CallLedger(tmp_path / "direct"))
    monkeypatch.setattr(direct, "direct_route", lambda *_: None)
    server.script(action)
    through_litellm = complete(asked, ONE_TRY, CallLedger(tmp_path / "litellm"))
    timing = {"latency_s", "started_at", "finished_at", "response_id"}
    assert on_the_route.model_dump(exclude=timing) == through_litellm.model_dump(exclude=timing)
    assert [r.params for r in server.requests] == [params, params]
    assert server.requests[0].messages == server.requests[1].messages == list(MESSAGES)


def test_sdk_failures_reach_classify_error_as_litellm_exceptions_with_their_retry_after(server):
    route = direct_route("openai/m1", server.url, {})
    server.script(Action(status=429, retry_after="7"))
    with pytest.raises(litellm.RateLimitError) as raised:
        send_direct(route, list(MESSAGES), {}, "no-key", timeout_s=5)
    message = "openai/m1: litellm.RateLimitError: RateLimitError: OpenAIException - scripted 429"
    assert classify_error(raised.value, "openai/m1") == CallError("rate_limit", True, message, 7.0)


def test_requests_at_once_each_take_a_connection_that_the_next_ones_keep_using(server, monkeypatch):
    monkeypatch.setattr(direct, "_idle_clients", deque())  # none left idle by other tests
    route = direct_route("openai/m1", server.url, {})
    server.answer_in_groups(3)  # three in flight together, however slow the machine

    def three_at_once() -> None:
        with ThreadPoolExecutor(3) as threads:
            list(threads.map(lambda _: send_direct(route, list(MESSAGES), {}, "sk-test", 30.0), range(3)))

    three_at_once()
    three_at_once()
    ports = [request.client_port for request in server.requests]
    assert len(set(ports[:3])) == 3  # a connection, so a client, of its own for each request in flight
    assert set(ports[3:]) == set(ports[:3])  # kept alive, and taken again
    assert len(direct._idle_clients) == 3


def test_a_refused_connection_on_the_direct_route_is_a_connection_error():
    with refusing_url() as url, pytest.raises(litellm.InternalServerError) as raised:
        # As on litellm's route: a 500 whose cause is the transport error.
        send_direct(direct_route("openai/m1", url, {}), list(MESSAGES), {}, "no-key", timeout_s=5)
    assert classify_error(raised.value, "openai/m1").kind == "connection"


@pytest.fixture
def sent_direct(monkeypatch):
    """The calls that went out on the direct route."""
    sent = []

    def spy(*args):
        sent.append(args)
        return send_direct(*args)

    monkeypatch.setattr(direct, "send_direct", spy)
    return sent


def test_a_retry_after_is_honoured_on_the_direct_route(server, tmp_path, sent_direct):
    server.script(Action(status=429, retry_after="0.3"))
    retrying = CallOptions(provider="test", retry=RetryPolicy(max_attempts=3, base_delay_s=0.01))
    asked = ChatRequest(model="openai/m1", messages=MESSAGES, api_base=server.url)
    outcome = complete(asked, retrying, CallLedger(tmp_path))
    assert (outcome.status, outcome.attempts, len(sent_direct)) == ("ok", 2, 2)
    assert server.requests[1].started - server.requests[0].finished >= 0.3


def test_a_trickled_reply_ends_at_the_deadline_on_the_direct_route(server, tmp_path, sent_direct):
    server.script(Action(trickle_s=60.0))  # a piece every 0.1 s: no read times out, the whole attempt does
    asked = ChatRequest(model="openai/m1", messages=MESSAGES, api_base=server.url)
    began = time.monotonic()
    outcome = complete(asked, ONE_TRY.model_copy(update={"timeout_s": 1.0}), CallLedger(tmp_path))
    assert (outcome.status, outcome.error_kind, len(sent_direct)) == ("failed", "timeout", 1)
    assert time.monotonic() - began < 30
