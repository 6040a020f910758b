"""Offline models: plain reply functions, served through litellm as the custom provider `threadmed`.

An offline model goes through exactly the call path of a real one (call key, ledger, limiter, litellm),
so demos and tests exercise everything without keys or network. A module defining offline models
registers them when it is imported (e.g. tasks/benchmarks/threadmed/baselines.py). The call layer
imports no such module: whatever runs the call has imported it already (a flow imports its benchmark;
a Dask worker imports the benchmark's modules when it unpickles their jobs).

Token counts of offline models are whitespace word counts, and they cost nothing.
"""

import threading
from collections.abc import Callable
from typing import Any

import litellm
from litellm.llms.custom_llm import CustomLLM, CustomLLMError
from litellm.types.utils import ModelResponse

from tasks.llm.offline_names import PROVIDER

Reply = Callable[[list[dict[str, Any]], dict[str, Any]], str]
"""An offline model: (messages, request params) -> reply text."""


class OfflineBadRequest(Exception):
    """Raised by a reply function for a request it cannot answer: recorded as a bad request, not retried."""


# Process-wide, like litellm's own provider map that serves them: a registration made at import must be
# seen by every worker thread of the process.
_replies: dict[str, Reply] = {}
_replies_lock = threading.Lock()


def register_offline_model(name: str, reply: Reply) -> str:
    """Serve `reply` as the model `threadmed/<name>`; returns that model string. Idempotent per function."""
    with _replies_lock:
        known = _replies.get(name)
        if known is not None and _qualified_name(known) != _qualified_name(reply):
            raise ValueError(f"{PROVIDER}/{name} is already served by {_qualified_name(known)}")
        _replies[name] = reply
    return f"{PROVIDER}/{name}"


def _qualified_name(reply: Reply) -> str:
    return f"{reply.__module__}.{reply.__qualname__}"


def offline_reply(name: str) -> Reply:
    """The reply function of `threadmed/<name>`; a 404 naming the cause when no module registered it."""
    with _replies_lock:
        reply, known = _replies.get(name), sorted(_replies)
    if reply is None:
        raise CustomLLMError(
            status_code=404,
            message=(
                f"unknown offline model {PROVIDER}/{name}: the module that registers it is not imported "
                f"(registered: {', '.join(known) or 'none'})"
            ),
        )
    return reply


class OfflineProvider(CustomLLM):
    """litellm handler for `threadmed/<name>`: answers with the registered reply function."""

    def completion(self, *args: Any, **kwargs: Any) -> ModelResponse:
        name, messages = kwargs["model"], kwargs["messages"]
        try:
            text = offline_reply(name)(messages, kwargs["optional_params"])
        except OfflineBadRequest as exc:
            raise CustomLLMError(status_code=400, message=str(exc)) from exc
        response: ModelResponse = kwargs["model_response"]
        response.choices[0].message.content = text  # type: ignore[union-attr]
        response.choices[0].finish_reason = "stop"
        prompt_words = sum(len(str(m.get("content") or "").split()) for m in messages)
        completion_words = len(text.split())
        response.usage = litellm.Usage(  # type: ignore[attr-defined]
            prompt_tokens=prompt_words,
            completion_tokens=completion_words,
            total_tokens=prompt_words + completion_words,
        )
        return response


_install_lock = threading.Lock()


def install_provider() -> None:
    """Make `threadmed/...` model strings callable through litellm (idempotent, thread-safe)."""
    with _install_lock:
        if not any(item["provider"] == PROVIDER for item in litellm.custom_provider_map):
            litellm.custom_provider_map.append({"provider": PROVIDER, "custom_handler": OfflineProvider()})
