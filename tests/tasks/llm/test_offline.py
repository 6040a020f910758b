import re

import litellm
import pytest

from tasks.llm import offline, offline_provider
from tasks.llm.call import complete
from tasks.llm.ledger import CallLedger
from tasks.llm.offline import OfflineBadRequest, is_offline, register_offline_model
from tasks.llm.request import CallOptions, ChatRequest

OPTIONS = CallOptions(provider=offline.PROVIDER)


def _echo(messages, params):
    """Repeats the last message, `times` times."""
    return " ".join([messages[-1]["content"]] * params.get("times", 1))


def _refuse(messages, params):
    raise OfflineBadRequest("test-refuse needs nothing it is given")


ECHO = register_offline_model("test-echo", _echo)
REFUSE = register_offline_model("test-refuse", _refuse)


def ask(model: str, ledger_dir, content: str = "rest and ice", **params):
    request = ChatRequest(model=model, messages=({"role": "user", "content": content},), params=params)
    return complete(request, OPTIONS, CallLedger(ledger_dir))


def test_a_registered_reply_is_a_model_of_the_offline_provider(tmp_path):
    assert ECHO == "threadmed/test-echo" and is_offline(ECHO)
    assert not is_offline("openai/gpt-4o")
    outcome = ask(ECHO, tmp_path, times=2)
    assert (outcome.status, outcome.text, outcome.finish_reason) == (
        "ok",
        "rest and ice rest and ice",
        "stop",
    )


def test_offline_usage_is_counted_in_words_and_costs_nothing(tmp_path):
    outcome = ask(ECHO, tmp_path, content="one two three", times=2)
    assert (outcome.prompt_tokens, outcome.completion_tokens) == (3, 6)
    assert (outcome.cost_usd, outcome.attempts) == (0.0, 1)


def test_registering_again_is_idempotent_but_a_name_has_one_reply():
    assert register_offline_model("test-echo", _echo) == ECHO
    with pytest.raises(ValueError, match=r"already served by .*_echo"):
        register_offline_model("test-echo", _refuse)


def test_an_unregistered_name_fails_at_once_saying_its_module_is_not_imported(tmp_path):
    outcome = ask("threadmed/nowhere", tmp_path)
    assert (outcome.status, outcome.error_kind, outcome.retryable, outcome.attempts) == (
        "failed",
        "not_found",
        False,
        1,
    )
    assert "unknown offline model threadmed/nowhere: the module that registers it is not imported" in (
        outcome.error
    )
    # The registered names follow (the record's error keeps its first 300 characters, so not all of them).
    assert re.search(r"\(registered: [a-z0-9-]+, [a-z0-9-]+", outcome.error)


def test_a_request_the_reply_cannot_answer_is_a_bad_request(tmp_path):
    outcome = ask(REFUSE, tmp_path)
    assert (outcome.error_kind, outcome.retryable, outcome.attempts) == ("bad_request", False, 1)
    assert "test-refuse needs nothing it is given" in outcome.error


def test_the_provider_is_installed_into_litellm_once():
    offline_provider.install_provider()
    offline_provider.install_provider()
    assert [p["provider"] for p in litellm.custom_provider_map].count(offline.PROVIDER) == 1
    reply = litellm.completion(model=ECHO, messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "hi"
