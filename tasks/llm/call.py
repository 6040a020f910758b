"""The call layer: one chat request in, one recorded outcome out, through litellm.

`complete()` returns the ledger's record when the call already succeeded (so a re-run never pays for it
again). Otherwise it calls the provider inside the provider's limiter, retries transient failures with
exponential back-off and jitter (honouring Retry-After), fails fast on permanent ones, and records the
outcome. A provider failure never raises: it is a `CallRecord` with status 'failed'.

Retries happen here, in-process, rather than as Prefect task retries: only this loop can read a
Retry-After header, pause the whole provider for it, and keep the completed turns of a thread.
"""

import contextvars
import email.utils
import hashlib
import json
import logging
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import httpx
import litellm
from pydantic import BaseModel, Field

from tasks.benchmarks.threadmed import baselines
from tasks.llm.ledger import CallLedger, CallRecord

# litellm prints a "Give Feedback / Get Help" banner on every provider error; our records carry the error.
litellm.suppress_debug_info = True

logger = logging.getLogger(__name__)

# Keyless OpenAI-compatible servers (vLLM, gateways on localhost) still need a non-empty key in the SDK.
PLACEHOLDER_API_KEY = "no-key"

FIXES = {
    "authentication": "set the provider's key variable (e.g. OPENAI_API_KEY) or `api_key_env` in the config",
    "not_found": "check the litellm model string (provider/model) and api_base",
    "bad_request": "check the request params in the config (e.g. gpt-5 accepts only temperature 1)",
    "context_length": "the conversation exceeds the model's context window; use a longer-context model",
    "content_filter": "the provider refuses this content; only another model or provider can answer it",
    "provider_error": "the provider answered with this error instead of a reply; see its message",
}
# How an error reported in the body of an HTTP 200 reads, for the kinds that its code may not tell.
_RATE_LIMIT_TEXT = re.compile(r"rate.?limit|too many requests", flags=re.IGNORECASE)
_SERVER_TEXT = re.compile(
    r"overload|capacity|unavailable|temporar|try again|timed? ?out|internal|server.{0,15}error",
    flags=re.IGNORECASE,
)
_CONTEXT_TEXT = re.compile(r"context.?length|context window|maximum context", flags=re.IGNORECASE)


class RetryPolicy(BaseModel, frozen=True):
    """How transient failures are retried. None of this changes a reply, so none of it is in the key."""

    max_attempts: int = Field(6, ge=1, description="Attempts per call, the first one included.")
    base_delay_s: float = Field(1.0, ge=0, description="First back-off; it doubles on each retry.")
    max_delay_s: float = Field(60.0, ge=0, description="Cap of the exponential back-off.")
    max_retry_after_s: float = Field(
        900.0, ge=0, description="Longest Retry-After honoured; a longer one fails the call (re-run later)."
    )


class ProviderLimits(BaseModel, frozen=True):
    """Throttle shared by every call to one provider in this process."""

    max_concurrency: int = Field(8, ge=1, description="Calls in flight at once.")
    requests_per_minute: float | None = Field(None, gt=0, description="Start rate cap; none by default.")


class Prices(BaseModel, frozen=True):
    """USD per token, for models litellm's price table does not know (local servers, gateways)."""

    input_per_token: float = Field(0.0, ge=0)
    output_per_token: float = Field(0.0, ge=0)


class CallOptions(BaseModel, frozen=True):
    """How a call is made (provider throttle, retries, time-out, key, prices): never part of the key."""

    provider: str
    limits: ProviderLimits = ProviderLimits()
    retry: RetryPolicy = RetryPolicy()
    timeout_s: float = Field(
        120.0, gt=0, description="Seconds one attempt may take, its whole reply included."
    )
    api_key_env: str | None = None
    prices: Prices | None = None
    price_model: str | None = Field(None, description="Model string to price by, if not the one called.")


class ChatRequest(BaseModel, frozen=True):
    """Everything that determines a reply: the call key is a hash of exactly these fields."""

    model: str
    messages: tuple[dict[str, str], ...]
    params: dict[str, Any] = Field(default_factory=dict)
    api_base: str | None = None
    prompt_version: str | None = None

    def key(self) -> str:
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class CallError:
    """A classified failure: its kind, whether retrying can help, and how long the provider asked to wait."""

    kind: str
    retryable: bool
    message: str
    retry_after_s: float | None = None


def classify_error(exc: Exception, model: str) -> CallError:
    """Map a litellm exception to a kind; permanent kinds carry the fix in their message."""
    if (body_error := _error_in_body(exc)) is not None:
        code, message = body_error
        kind = _body_error_kind(code, message)
        detail = "error in an HTTP 200 reply: " + " ".join(message.split())[:300]
        if is_permanent(kind):
            return permanent_error(kind, model, detail)
        return CallError(kind, True, f"{model}: {detail}")
    kind = _error_kind(exc)
    detail = " ".join(str(exc).split())[:300] or type(exc).__name__
    if is_permanent(kind):
        return permanent_error(kind, model, detail)
    retry_after = parse_retry_after(getattr(exc, "litellm_response_headers", None))
    return CallError(kind, True, f"{model}: {detail}", retry_after)


def _error_kind(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    if isinstance(exc, litellm.ContextWindowExceededError):
        return "context_length"
    if isinstance(exc, litellm.ContentPolicyViolationError):
        return "content_filter"
    if isinstance(exc, litellm.Timeout):
        return "timeout"
    if isinstance(exc, litellm.APIConnectionError) or _raised_during(exc, httpx.TransportError):
        return "connection"
    return _status_kind(status)


def _status_kind(status: object) -> str:
    if status == 429:
        return "rate_limit"
    if isinstance(status, int) and status >= 500:
        return "server_error"
    if status in (401, 403):
        return "authentication"
    if status == 404:
        return "not_found"
    if status in (400, 422):
        return "bad_request"
    return "unexpected"


def _error_in_body(exc: BaseException) -> tuple[object, str] | None:
    """The (code, message) of an `{"error": ...}` body sent with HTTP 200, if that is what `exc` reports.

    litellm raises such a body as a bare Exception holding its code and message, then re-raises it by
    the code alone (422 when there is none), dropping the message and the error's type.
    """
    for cause in _chain(exc):
        if type(cause) is Exception and isinstance(message := getattr(cause, "message", None), str):
            return getattr(cause, "status_code", None), message
    return None


def _body_error_kind(code: object, message: str) -> str:
    """Overloaded, rate-limited and server errors are transient; the code tells the other kinds."""
    text = f"{code} {message}"
    if _RATE_LIMIT_TEXT.search(text):
        return "rate_limit"
    if _SERVER_TEXT.search(text):
        return "server_error"
    if _CONTEXT_TEXT.search(text):
        return "context_length"
    status = int(code) if str(code).isdigit() else None
    # 422 is litellm's stand-in for a body without a code: it says nothing about the request.
    if status is None or status == 422 or (kind := _status_kind(status)) == "unexpected":
        return "provider_error"
    return kind


def _raised_during(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether `kind` is in the exception's chain (litellm reports a refused connection as a 500)."""
    return any(isinstance(cause, kind) for cause in _chain(exc))


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        yield current
        seen.add(id(current))
        current = current.__cause__ or current.__context__


def is_permanent(kind: str) -> bool:
    """Whether a failure of this kind needs a fix before a re-run can help."""
    return kind in FIXES or kind == "unexpected"


def fix_for(kind: str) -> str:
    return FIXES.get(kind, "see the error message; it is not retried")


def permanent_error(kind: str, model: str, detail: str) -> CallError:
    return CallError(kind, False, f"{model}: {detail}. Fix: {fix_for(kind)}")


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date), else None."""
    if not headers:
        return None
    if (millis := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def retry_delay(
    attempt: int, policy: RetryPolicy, retry_after_s: float | None, rng: random.Random
) -> float | None:
    """Seconds to wait before attempt `attempt + 1`, or None when the provider's wait exceeds the cap.

    Exponential back-off with "equal jitter" (half fixed, half random), so that calls which failed
    together do not retry together; a Retry-After is honoured in full, plus up to one base delay.
    """
    if retry_after_s is not None:
        if retry_after_s > policy.max_retry_after_s:
            return None
        return retry_after_s + rng.uniform(0, policy.base_delay_s)
    backoff = min(policy.max_delay_s, policy.base_delay_s * 2 ** (attempt - 1))
    return backoff / 2 + rng.uniform(0, backoff / 2)


class ProviderLimiter:
    """Caps one provider's calls in flight, spaces their starts for a requests-per-minute budget, and
    holds every new start while the provider has asked us (Retry-After) to wait."""

    def __init__(self, limits: ProviderLimits) -> None:
        self._slots = threading.BoundedSemaphore(limits.max_concurrency)
        self._interval_s = 60.0 / limits.requests_per_minute if limits.requests_per_minute else 0.0
        self._lock = threading.Lock()
        self._next_start = 0.0

    @contextmanager
    def slot(self) -> Iterator[None]:
        with self._slots:
            self._wait_for_turn()
            yield

    def pause(self, seconds: float) -> None:
        """Let no call start for `seconds` from now."""
        with self._lock:
            self._next_start = max(self._next_start, time.monotonic() + seconds)

    def _wait_for_turn(self) -> None:
        with self._lock:
            start = max(time.monotonic(), self._next_start)
            self._next_start = start + self._interval_s
        time.sleep(max(0.0, start - time.monotonic()))


# One limiter per (provider, limits) for the whole process: every worker thread of a run must share it,
# the way they share litellm's HTTP connection pool.
_limiters: dict[tuple[str, ProviderLimits], ProviderLimiter] = {}
_limiters_lock = threading.Lock()


def limiter_for(provider: str, limits: ProviderLimits) -> ProviderLimiter:
    with _limiters_lock:
        if (provider, limits) not in _limiters:
            _limiters[(provider, limits)] = ProviderLimiter(limits)
        return _limiters[(provider, limits)]


@dataclass
class _Tally:
    """What the attempts of one call have cost so far (carried over from earlier runs)."""

    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    input_cost_usd: float = 0.0
    output_cost_usd: float = 0.0

    @classmethod
    def resume(cls, previous: CallRecord | None) -> "_Tally":
        if previous is None:
            return cls()
        return cls(
            previous.attempts,
            previous.prompt_tokens,
            previous.completion_tokens,
            previous.input_cost_usd,
            previous.output_cost_usd,
        )

    def add_usage(self, request: ChatRequest, options: CallOptions, response: Any) -> None:
        usage = getattr(response, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        price_model = options.price_model or request.model
        # An unpriced model (a local server without `prices`) is recorded at 0 USD.
        input_cost, output_cost = token_costs(price_model, prompt, completion, options.prices) or (0.0, 0.0)
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.input_cost_usd += input_cost
        self.output_cost_usd += output_cost


def token_costs(
    model: str, prompt_tokens: int, completion_tokens: int, prices: Prices | None
) -> tuple[float, float] | None:
    """(input, output) USD from configured prices, else litellm's price table; None if unpriced."""
    if prices is not None:
        return prompt_tokens * prices.input_per_token, completion_tokens * prices.output_per_token
    if baselines.is_offline(model):
        return 0.0, 0.0
    try:
        return litellm.cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
    except (litellm.exceptions.ModelNotMappedError, litellm.BadRequestError):
        return None


class _KeyLocks:
    """One lock per call key in use, so identical requests in flight at once are made (and paid) once."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, tuple[threading.Lock, int]] = {}

    @contextmanager
    def hold(self, key: str) -> Iterator[None]:
        with self._guard:
            lock, users = self._locks.get(key, (threading.Lock(), 0))
            self._locks[key] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self._guard:
                lock, users = self._locks[key]
                if users == 1:
                    del self._locks[key]
                else:
                    self._locks[key] = (lock, users - 1)


_key_locks = _KeyLocks()


def complete(request: ChatRequest, options: CallOptions, ledger: CallLedger) -> CallRecord:
    """The recorded outcome of `request`: from the ledger if it already succeeded, else by calling."""
    key = request.key()
    with _key_locks.hold(key):
        if (done := ledger.lookup(key)) is not None:
            return done
        return _call(key, request, options, ledger)


def _call(key: str, request: ChatRequest, options: CallOptions, ledger: CallLedger) -> CallRecord:
    """Attempt the call until it succeeds, fails permanently or runs out of attempts; record the outcome."""
    tally = _Tally.resume(ledger.last_failure(key))
    limiter = limiter_for(options.provider, options.limits)
    rng = random.Random()
    started_at = datetime.now(UTC)
    for attempt in range(1, options.retry.max_attempts + 1):
        tally.attempts += 1
        with limiter.slot():
            began = time.monotonic()
            response, error = _attempt(request, options, tally)
            latency_s = time.monotonic() - began
        if error is None:
            record = _record(key, request, tally, started_at, latency_s, response=response)
            ledger.write(record)
            return record
        delay = retry_delay(attempt, options.retry, error.retry_after_s, rng) if error.retryable else None
        if delay is None or attempt == options.retry.max_attempts:
            break
        if error.retry_after_s is not None:
            limiter.pause(delay)
        logger.info("%s: %s (attempt %d), retrying in %.1f s", request.model, error.kind, attempt, delay)
        time.sleep(delay)
    record = _record(key, request, tally, started_at, latency_s, error=_final(error, attempt, options.retry))
    ledger.write(record)
    logger.warning("call failed: %s", record.error)
    return record


def _attempt(request: ChatRequest, options: CallOptions, tally: _Tally) -> tuple[Any, CallError | None]:
    """Make one HTTP call; return the response, or the classified reason it cannot be used."""
    if baselines.is_offline(request.model):
        baselines.register()
    try:
        api_key = _api_key(request, options)
    except MissingCredentials as exc:
        return None, permanent_error("authentication", request.model, str(exc))
    try:
        response = within_deadline(
            options.timeout_s,
            lambda: litellm.completion(
                model=request.model,
                messages=list(request.messages),
                api_base=request.api_base,
                api_key=api_key,
                timeout=options.timeout_s,  # the SDK's is per read: a trickled reply would never end
                max_retries=0,  # the SDK's own retries would be invisible to our attempt count and back-off
                num_retries=0,
                **request.params,
            ),
        )
    except DeadlinePassed:
        return None, CallError(
            "timeout", True, f"{request.model}: no whole reply within {options.timeout_s} s"
        )
    except Exception as exc:  # every provider failure is classified and recorded, never raised
        return None, classify_error(exc, request.model)
    tally.add_usage(request, options, response)  # an empty reply is still billed
    return response, _unusable_reply(request.model, response)


T = TypeVar("T")


class DeadlinePassed(Exception):
    """An attempt did not finish within its time-out."""


def within_deadline(seconds: float, call: Callable[[], T]) -> T:
    """`call()`'s result, or DeadlinePassed once `seconds` have gone by.

    The call runs in a daemon thread that is abandoned at the deadline, since a blocking HTTP read cannot
    be cancelled: it ends by itself (at the latest on the SDK's read time-out), and a late reply is dropped
    without its tokens reaching the ledger's costs. Meanwhile its connection is outside the provider's
    concurrency limit.
    """
    outcome: dict[str, Any] = {}
    finished = threading.Event()
    context = contextvars.copy_context()

    def run() -> None:
        try:
            outcome["value"] = context.run(call)
        except BaseException as exc:  # handed to the caller's thread below
            outcome["error"] = exc
        finally:
            finished.set()

    threading.Thread(target=run, name="llm-attempt", daemon=True).start()
    if not finished.wait(seconds):
        raise DeadlinePassed
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _unusable_reply(model: str, response: Any) -> CallError | None:
    choices = getattr(response, "choices", None)
    if choices and choices[0].finish_reason == "content_filter":
        return permanent_error("content_filter", model, "reply withheld by the provider")
    if not choices or not (choices[0].message.content or "").strip():
        return CallError("empty_reply", True, f"{model}: the reply has no text")
    return None


class MissingCredentials(Exception):
    """No API key is available for a call; litellm would report it as a retryable 500."""


def _api_key(request: ChatRequest, options: CallOptions) -> str | None:
    """The key to send; None lets litellm read the provider's standard variable itself."""
    if options.api_key_env:
        if key := os.environ.get(options.api_key_env):
            return key
        raise MissingCredentials(f"{options.api_key_env} is not set")
    if baselines.is_offline(request.model):
        return None
    environment = litellm.validate_environment(model=request.model)
    if environment["keys_in_environment"]:
        return None
    if request.api_base:
        return PLACEHOLDER_API_KEY
    raise MissingCredentials(f"{' or '.join(environment['missing_keys'])} is not set")


def _final(error: CallError, attempts: int, policy: RetryPolicy) -> CallError:
    if not error.retryable:
        return error
    if error.retry_after_s is not None and error.retry_after_s > policy.max_retry_after_s:
        reason = f"provider asked to wait {error.retry_after_s:.0f} s, more than max_retry_after_s"
    else:
        reason = f"gave up after {attempts} attempts"
    return CallError(error.kind, True, f"{error.message} ({reason}; re-run to retry)")


def _record(
    key: str,
    request: ChatRequest,
    tally: _Tally,
    started_at: datetime,
    latency_s: float,
    *,
    response: Any = None,
    error: CallError | None = None,
) -> CallRecord:
    choice = response.choices[0] if response is not None and response.choices else None
    return CallRecord(
        key=key,
        model=request.model,
        status="ok" if error is None else "failed",
        text=choice.message.content if choice is not None and error is None else None,
        finish_reason=choice.finish_reason if choice is not None else None,
        prompt_tokens=tally.prompt_tokens,
        completion_tokens=tally.completion_tokens,
        input_cost_usd=tally.input_cost_usd,
        output_cost_usd=tally.output_cost_usd,
        latency_s=latency_s,
        attempts=tally.attempts,
        error_kind=error.kind if error else None,
        error=error.message if error else None,
        retryable=error.retryable if error else None,
        response_id=getattr(response, "id", None),
        started_at=started_at,
        finished_at=datetime.now(UTC),
    )
