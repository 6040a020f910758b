"""What went wrong with a call: a kind, whether retrying can help, the wait the provider asked for, a fix."""

import email.utils
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import httpx

from tasks.llm.sdk import litellm_sdk

FIXES = {
    "authentication": "set the provider's key variable (e.g. OPENAI_API_KEY) or `api_key_env` in the config",
    "not_found": "check the litellm model string (provider/model) and api_base",
    "bad_request": "check the request params in the config (e.g. gpt-5 accepts only temperature 1)",
    "context_length": "the conversation exceeds the model's context window; use a longer-context model",
    "content_filter": "the provider refuses this content; only another model or provider can answer it",
    "provider_error": "the provider answered with this error instead of a reply; see its message",
    "batch_rejected": "the provider rejected the whole batch; see its reason, or run the role in single mode",
    "cost_cap": "not made: the run stopped at its spending cap; raise --max-cost (max_cost_usd) to go on",
}
# How an error reported in the body of an HTTP 200 reads, for the kinds that its code may not tell.
_RATE_LIMIT_TEXT = re.compile(r"rate.?limit|too many requests", flags=re.IGNORECASE)
_SERVER_TEXT = re.compile(
    r"overload|capacity|unavailable|temporar|try again|timed? ?out|internal|server.{0,15}error",
    flags=re.IGNORECASE,
)
_CONTEXT_TEXT = re.compile(r"context.?length|context window|maximum context", flags=re.IGNORECASE)


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
    litellm = litellm_sdk()  # imported already by the call that raised `exc`
    if isinstance(exc, litellm.ContextWindowExceededError):
        return "context_length"
    if isinstance(exc, litellm.ContentPolicyViolationError):
        return "content_filter"
    if isinstance(exc, litellm.Timeout):
        return "timeout"
    if isinstance(exc, litellm.APIConnectionError) or _raised_during(exc, httpx.TransportError):
        return "connection"
    return _status_kind(status)


def batch_line_error(status: int, error: object, model: str) -> CallError:
    """A failed line of a batch's error file: its HTTP status and `{"message", "type", "code"}` error."""
    message = str(error.get("message") or "") if isinstance(error, dict) else ""
    kind = _status_kind(status)
    if kind == "unexpected" and message:
        kind = _body_error_kind(status, message)
    detail = f"batch line HTTP {status}: " + (" ".join(message.split())[:300] or "no message")
    if is_permanent(kind):
        return permanent_error(kind, model, detail)
    return CallError(kind, True, f"{model}: {detail}")


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
