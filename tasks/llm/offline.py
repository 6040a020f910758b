"""Offline models: plain reply functions, registered by name and served through litellm as the custom
provider `threadmed` (tasks/llm/offline_provider.py).

An offline model goes through exactly the call path of a real one (call key, ledger, limiter, litellm),
so demos and tests exercise everything without keys or network. A module defining offline models
registers them when it is imported (e.g. tasks/benchmarks/threadmed/baselines.py). The call layer
imports no such module: whatever runs the call has imported it already (a flow imports its benchmark;
a Dask worker imports the benchmark's modules when it unpickles their jobs).

This module imports no litellm (seconds): a config names offline models, and every command reads one
before its first line.

Token counts of offline models are whitespace word counts, and they cost nothing.
"""

import threading
from collections.abc import Callable
from typing import Any

# The provider prefix predates other benchmarks; it stays, so that model strings in configs and the
# call keys of recorded runs stay valid.
PROVIDER = "threadmed"

Reply = Callable[[list[dict[str, Any]], dict[str, Any]], str]
"""An offline model: (messages, request params) -> reply text."""


class OfflineBadRequest(Exception):
    """Raised by a reply function for a request it cannot answer: recorded as a bad request, not retried."""


class UnknownOfflineModel(LookupError):
    """An offline model string no imported module registered: recorded as not found, not retried."""


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


def is_offline(model: str) -> bool:
    """Whether `model` is an offline model's string (registered or not: an unknown name fails when called)."""
    return model.startswith(f"{PROVIDER}/")


def offline_reply(name: str) -> Reply:
    """The reply function of `threadmed/<name>`; UnknownOfflineModel naming the cause when no module
    registered it."""
    with _replies_lock:
        reply, known = _replies.get(name), sorted(_replies)
    if reply is None:
        raise UnknownOfflineModel(
            f"unknown offline model {PROVIDER}/{name}: the module that registers it is not imported "
            f"(registered: {', '.join(known) or 'none'})"
        )
    return reply
