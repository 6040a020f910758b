"""What a call is (`ChatRequest`, whose fields make the call key) and how it is made (`CallOptions`)."""

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from tasks.core.strict import StrictModel


class RetryPolicy(StrictModel, frozen=True):
    """How transient failures are retried. None of this changes a reply, so none of it is in the key."""

    max_attempts: int = Field(6, ge=1, description="Attempts per call, the first one included.")
    base_delay_s: float = Field(1.0, ge=0, description="First back-off; it doubles on each retry.")
    max_delay_s: float = Field(60.0, ge=0, description="Cap of the exponential back-off.")
    max_retry_after_s: float = Field(
        900.0, ge=0, description="Longest Retry-After honoured; a longer one fails the call (re-run later)."
    )


class ProviderLimits(StrictModel, frozen=True):
    """Throttle shared by every call to one provider in this process."""

    max_concurrency: int = Field(8, ge=1, description="Calls in flight at once.")
    requests_per_minute: float | None = Field(None, gt=0, description="Start rate cap; none by default.")


class Prices(StrictModel, frozen=True):
    """USD per token, for models litellm's price table does not know (local servers, gateways)."""

    input_per_token: float = Field(0.0, ge=0)
    output_per_token: float = Field(0.0, ge=0)


CallMode = Literal["single", "batch"]


class CallOptions(BaseModel, frozen=True):
    """How a call is made (provider throttle, retries, time-out, key, prices, one request or through the
    provider's batch API, the reply length a spending cap reserves): never part of the key, so a call made
    either way is the same ledger entry."""

    provider: str
    limits: ProviderLimits = ProviderLimits()
    retry: RetryPolicy = RetryPolicy()
    timeout_s: float = Field(
        120.0, gt=0, description="Seconds one attempt may take, its whole reply included."
    )
    api_key_env: str | None = None
    prices: Prices | None = None
    price_model: str | None = Field(None, description="Model string to price by, if not the one called.")
    mode: CallMode = "single"
    batch_discount: float = Field(
        0.5, gt=0, le=1, description="Batch price over the single-call price, where litellm has none."
    )
    estimated_reply_tokens: int = Field(
        400, ge=0, description="Reply length a spending cap reserves for the call (tasks/llm/budget.py)."
    )


def assumed_reply_tokens(estimated_reply_tokens: int, params: Mapping[str, Any]) -> int:
    """The reply length an estimate assumes for a call (the dry run, progress, a spending cap's reserve):
    the role's `estimated_reply_tokens`, at most the `max_tokens` its params send (no reply is longer)."""
    max_tokens = params.get("max_tokens")
    if isinstance(max_tokens, int) and not isinstance(max_tokens, bool):
        return min(estimated_reply_tokens, max_tokens)
    return estimated_reply_tokens


# Fields added to the key after calls were recorded: left out while at their default, so every key made
# before they existed (and every run folder holding such calls) stays valid.
_OMITTED_AT_DEFAULT = ("scope", "epoch")


def canonical_params(params: dict[str, Any]) -> dict[str, Any]:
    """Request params as the call key reads them, and as runs are compared: a whole-number float (0.0, 1.0)
    as the integer it equals, in nested dicts and lists too (a provider reads `0.0` and `0` alike)."""
    return _whole_floats_as_ints(params)


def _whole_floats_as_ints(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {name: _whole_floats_as_ints(item) for name, item in value.items()}
    if isinstance(value, list):
        return [_whole_floats_as_ints(item) for item in value]
    return value


def _holds_whole_float(value: Any) -> bool:
    if isinstance(value, float):
        return value.is_integer()
    if isinstance(value, dict):
        return any(_holds_whole_float(item) for item in value.values())
    if isinstance(value, list | tuple):
        return any(_holds_whole_float(item) for item in value)
    return False


def _digest(fields: dict[str, Any]) -> str:
    canonical = json.dumps(fields, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


class ChatRequest(BaseModel, frozen=True):
    """Everything that determines a reply: the call key is a hash of exactly these fields.

    `scope` and `epoch` are never sent: they tell apart calls whose messages are the same, e.g. two
    roles of one benchmark (`scope="snomed/patient"`) or repeated samples at temperature > 0 (`epoch`).
    """

    model: str
    # Values are text, except in tool use (an assistant message's `tool_calls`).
    messages: tuple[dict[str, Any], ...]
    params: dict[str, Any] = Field(default_factory=dict)
    api_base: str | None = None
    prompt_version: str | None = None
    scope: str | None = Field(None, description="What the call is for, e.g. 'snomed/patient'.")
    epoch: int = Field(0, ge=0, description="Repeat index of the same request (sampling at temperature > 0).")

    def key(self) -> str:
        """The call key: a hash of the fields, a param's whole-number float read as the integer it equals
        (`temperature: 0.0` in a YAML config is the default's `0`: the same call, not a second one)."""
        fields = self._key_fields()
        fields["params"] = canonical_params(fields["params"])
        return _digest(fields)

    def legacy_key(self) -> str | None:
        """The key this request had before whole-number floats were read as integers, where it differs: a
        call recorded under it is this call (CallLedger.find looks there too), so it is never paid again."""
        if not _holds_whole_float(self.params):  # the usual request: no second hash
            return None
        return _digest(self._key_fields())

    def _key_fields(self) -> dict[str, Any]:
        fields = self.model_dump(mode="json")
        for name in _OMITTED_AT_DEFAULT:
            if fields[name] == type(self).model_fields[name].default:
                del fields[name]
        return fields

    def asks_for_json(self) -> bool:
        """Whether the params ask for a JSON reply (`response_format` of type json_object or json_schema)."""
        response_format = self.params.get("response_format")
        return isinstance(response_format, dict) and response_format.get("type") in (
            "json_object",
            "json_schema",
        )
