"""The direct route: OpenAI-compatible servers called through kept-alive httpx clients; litellm does the rest.

For a call to an OpenAI-compatible server (`openai/<model>` with an `api_base`: vLLM, llama.cpp, a
gateway), `litellm.completion` spends most of a call's CPU on things the call layer does not use: its
logging objects, success handlers and its own cost calculation (which, for a model missing from its price
table, searches model-name generalisations on every call). The direct route makes the same request without
them. litellm still decides everything it is for:

- routing: `get_llm_provider` resolves the model string, and the route is taken only when litellm's
  provider config for it sends the request's params unchanged (`map_openai_params` is the identity);
  anything else (o-series and gpt-5 models, other providers, params litellm rewrites) goes through
  `litellm.completion`;
- the request body: litellm's `transform_request`, as `litellm.completion` builds it;
- the reply: litellm's `convert_to_model_response_object` makes the same `ModelResponse` (finish reasons
  mapped, an `{"error": ...}` body raised), so a record is the same whichever route made it;
- errors: raised as the OpenAI SDK raises them, then wrapped and mapped by litellm's `exception_type`
  exactly as its OpenAI handler does, so `classify_error` sees the same exception, message and
  Retry-After headers.
"""

import contextlib
import functools
import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import litellm
import openai
from litellm.litellm_core_utils.exception_mapping_utils import exception_type
from litellm.litellm_core_utils.llm_response_utils.convert_dict_to_response import (
    convert_to_model_response_object,
)
from litellm.llms.openai.chat.gpt_transformation import OpenAIGPTConfig
from litellm.llms.openai.common_utils import OpenAIError
from litellm.types.utils import LlmProviders, ModelResponse
from litellm.utils import ProviderConfigManager

# Provider configs that send an OpenAI request as it is given; their subclasses (o-series, gpt-5, audio
# models) rewrite params and stay on litellm.completion.
_PLAIN_CONFIGS = ("OpenAIGPTConfig", "OpenAIUnknownModelConfig")


@dataclass(frozen=True)
class DirectRoute:
    """Where litellm would send a request, and the provider config that builds its body."""

    model: str  # the model name the server sees (the string without its provider prefix)
    provider: str
    api_base: str
    config: OpenAIGPTConfig


def direct_route(model: str, api_base: str | None, params: dict[str, Any]) -> DirectRoute | None:
    """The direct route of a request, or None when it must go through `litellm.completion`."""
    if api_base is None:
        return None
    try:
        params_json = json.dumps(params, sort_keys=True)
    except TypeError:  # a value JSON cannot hold: leave it to litellm
        return None
    return _route(model, api_base, params_json)


@functools.lru_cache(maxsize=4096)
def _route(model: str, api_base: str, params_json: str) -> DirectRoute | None:
    """Resolved once per (model, api_base, params): litellm's routing costs more than the call itself."""
    try:
        name, provider, _, _ = litellm.get_llm_provider(model, api_base=api_base)
        config = ProviderConfigManager.get_provider_chat_config(model=name, provider=LlmProviders(provider))
    except (litellm.BadRequestError, ValueError):
        return None
    if provider != "openai" or type(config).__name__ not in _PLAIN_CONFIGS:
        return None
    params = json.loads(params_json)
    try:
        mapped = config.map_openai_params(
            non_default_params=dict(params), optional_params={}, model=name, drop_params=False
        )
    except litellm.UnsupportedParamsError:
        return None
    if mapped != params:
        return None
    return DirectRoute(model=name, provider=provider, api_base=api_base, config=config)


def send_direct(
    route: DirectRoute, messages: list[dict[str, Any]], params: dict[str, Any], api_key: str, timeout_s: float
) -> ModelResponse:
    """One HTTP call on the route's pooled client; the reply as litellm's `ModelResponse`.

    Raises the exception `litellm.completion` would raise for the same failure.
    """
    try:
        body = route.config.transform_request(
            model=route.model, messages=messages, optional_params=dict(params), litellm_params={}, headers={}
        )
        reply = _post(route.api_base, api_key, body, timeout_s)
        return convert_to_model_response_object(
            response_object=reply.json(),
            model_response_object=ModelResponse(),
            _response_headers=dict(reply.headers),
        )
    except Exception as exc:  # re-raised as litellm.completion raises it, see its OpenAI handler
        raise exception_type(
            model=route.model,
            original_exception=_as_openai_error(exc),
            custom_llm_provider=route.provider,
        ) from exc


def _as_openai_error(exc: Exception) -> OpenAIError:
    """litellm's wrapping of an OpenAI SDK failure (llms/openai/openai.py), which `exception_type` maps."""
    response = getattr(exc, "response", None)
    headers = getattr(exc, "headers", None)
    if headers is None and response is not None:
        headers = getattr(response, "headers", None)
    return OpenAIError(
        status_code=getattr(exc, "status_code", 500),
        message=getattr(exc, "text", str(exc)),
        headers=headers,
        body=getattr(exc, "body", None),
    )


def _post(api_base: str, api_key: str, body: dict[str, Any], timeout_s: float) -> httpx.Response:
    """POST `body` to the chat completions of `api_base` on an idle client, a failure raised as the OpenAI
    SDK raises it (`APITimeoutError`, `APIConnectionError`, a status error built by the SDK from the
    response). Not through the SDK's own request: its options, headers and retry loop were a third of a
    call's CPU, 0.8 ms of 2.3 (tests/perf/README.md)."""
    with _idle_client() as http:
        request = http.build_request(
            "POST",
            f"{api_base.rstrip('/')}/chat/completions",
            content=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"},
            timeout=timeout_s,
        )
        try:
            response = http.send(request)  # the body read whole: the connection is idle again
        except httpx.TimeoutException as exc:
            raise openai.APITimeoutError(request=request) from exc
        except httpx.HTTPError as exc:
            raise openai.APIConnectionError(request=request) from exc
    if response.is_error:
        raise _errors(api_base, api_key)._make_status_error_from_response(response) from None
    return response


# The process's httpx clients that no request is using, each one keeping its connection alive for the next
# request (as litellm caches its own client), with the SDK's defaults (its public `DefaultHttpxClient`):
# its connection limits, and redirects followed. One client per request in flight, not one shared by every
# thread: httpcore's pool polls each of its idle connections under its lock, twice a request (a system
# call each, which lets go of the GIL), so the threads of a busy process queued on it. At 64 calls in
# flight a call took 3.56 ms of CPU against 3.97-4.28 (tests/perf/README.md, call throughput). A deque's
# appends and pops are thread-safe and take no lock of Python's; the last client idled is the next one
# taken, so a process with fewer calls in flight keeps using fewer of them.
_idle_clients: deque[httpx.Client] = deque()


@contextlib.contextmanager
def _idle_client() -> Iterator[httpx.Client]:
    """A client for one request, made when none is idle, and idle again once the request has ended."""
    try:
        client = _idle_clients.pop()
    except IndexError:
        client = openai.DefaultHttpxClient()
    try:
        yield client
    finally:
        _idle_clients.append(client)


# The SDK's client of an (api_base, key), for its status errors only: each status as its own exception.
_clients: dict[tuple[str, str], openai.OpenAI] = {}
_clients_lock = threading.Lock()


def _errors(api_base: str, api_key: str) -> openai.OpenAI:
    with _clients_lock:
        if (api_base, api_key) not in _clients:
            _clients[(api_base, api_key)] = openai.OpenAI(base_url=api_base, api_key=api_key, max_retries=0)
        return _clients[(api_base, api_key)]
