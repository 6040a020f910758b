"""The call: one chat request in, one recorded outcome out, through litellm (or its direct route, direct.py).

`complete()` returns the ledger's record when the call already succeeded (so a re-run never pays for it
again). Otherwise it calls the provider inside the provider's limiter, retries transient failures with
exponential back-off and jitter (honouring Retry-After), fails fast on permanent ones, and records the
outcome, tool calls and JSON output included. A provider failure never raises: it is a `CallRecord`
with status 'failed'.

Retries happen here, in-process, rather than as Prefect task retries: only this loop can read a
Retry-After header, pause the whole provider for it, and keep the completed turns of a thread.
"""

import contextvars
import functools
import json
import logging
import os
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any, TypeVar

from tasks.core.tokens import count_tokens
from tasks.llm import in_flight
from tasks.llm.budget import COST_CAP, SpendingBudget, budget_for
from tasks.llm.deferral import NOT_SUBMITTED, batch_outcome
from tasks.llm.errors import CallError, classify_error, permanent_error
from tasks.llm.ledger import WITHHELD, CallLedger, CallRecord
from tasks.llm.limits import limiter_for
from tasks.llm.offline import is_offline
from tasks.llm.request import CallOptions, ChatRequest, Prices, RetryPolicy, assumed_reply_tokens
from tasks.llm.sdk import litellm_sdk

logger = logging.getLogger(__name__)

# Keyless OpenAI-compatible servers (vLLM, gateways on localhost) still need a non-empty key in the SDK.
PLACEHOLDER_API_KEY = "no-key"


@dataclass
class CallTally:
    """What the attempts of one call have cost so far (carried over from earlier runs)."""

    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    input_cost_usd: float = 0.0
    output_cost_usd: float = 0.0

    @classmethod
    def resume(cls, previous: CallRecord | None) -> "CallTally":
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
        # An unpriced model (a local server without `prices`) is recorded at 0 USD.
        input_cost, output_cost = call_costs(request, options, prompt, completion) or (0.0, 0.0)
        self.prompt_tokens += prompt
        self.completion_tokens += completion
        self.input_cost_usd += input_cost
        self.output_cost_usd += output_cost


def call_costs(
    request: ChatRequest, options: CallOptions, prompt_tokens: int, completion_tokens: int
) -> tuple[float, float] | None:
    """(input, output) USD of `request`'s tokens made as `options` say (batch prices in batch mode)."""
    model = options.price_model or request.model
    if options.mode == "batch":
        return batch_token_costs(
            model, prompt_tokens, completion_tokens, options.prices, options.batch_discount
        )
    return token_costs(model, prompt_tokens, completion_tokens, options.prices)


def estimated_cost_usd(request: ChatRequest, options: CallOptions) -> float:
    """What a spending cap reserves for `request`, estimated as --dry-run does: its messages' tokens
    (cl100k) and the role's `estimated_reply_tokens` (at most its max_tokens); 0 for an unpriced model,
    which the ledger records at 0 too."""
    prompt = sum(count_tokens(text) for message in request.messages for text in message_texts(message))
    reply = assumed_reply_tokens(options.estimated_reply_tokens, request.params)
    return sum(call_costs(request, options, prompt, reply) or (0.0, 0.0))


def message_texts(message: dict[str, Any]) -> Iterator[str]:
    """The texts of one chat message a model reads: its content (or content parts), its tool calls."""
    content = message.get("content")
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        yield from (part["text"] for part in content if isinstance(part, dict) and "text" in part)
    for call in message.get("tool_calls") or []:
        yield json.dumps(call)


def token_costs(
    model: str, prompt_tokens: int, completion_tokens: int, prices: Prices | None
) -> tuple[float, float] | None:
    """(input, output) USD from configured prices, else litellm's price table; None if unpriced."""
    if prices is not None:
        return prompt_tokens * prices.input_per_token, completion_tokens * prices.output_per_token
    if is_offline(model):
        return 0.0, 0.0
    if not _in_price_table(model):
        return None
    return litellm_sdk().cost_per_token(
        model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
    )


def batch_token_costs(
    model: str, prompt_tokens: int, completion_tokens: int, prices: Prices | None, discount: float
) -> tuple[float, float] | None:
    """(input, output) USD of a call made through the provider's batch API; None if unpriced.

    litellm's batch prices where its table has them (OpenAI's models), else the single-call prices
    times `discount` (configured prices included).
    """
    batch_prices = _batch_prices(model) if prices is None and not is_offline(model) else None
    if batch_prices is not None:
        return prompt_tokens * batch_prices[0], completion_tokens * batch_prices[1]
    costs = token_costs(model, prompt_tokens, completion_tokens, prices)
    return None if costs is None else (costs[0] * discount, costs[1] * discount)


@functools.lru_cache(maxsize=1024)
def _batch_prices(model: str) -> tuple[float, float] | None:
    """litellm's (input, output) batch price per token of `model`, if its table has both."""
    if not _in_price_table(model):
        return None
    info = litellm_sdk().get_model_info(model=model)
    prices = (info.get("input_cost_per_token_batches"), info.get("output_cost_per_token_batches"))
    return None if None in prices else prices


@functools.lru_cache(maxsize=1024)
def _in_price_table(model: str) -> bool:
    """Asked once per model: for a model it does not know, litellm searches name variants on every call."""
    litellm = litellm_sdk()
    try:
        litellm.cost_per_token(model=model, prompt_tokens=1, completion_tokens=1)
    except (litellm.exceptions.ModelNotMappedError, litellm.BadRequestError):
        return False
    return True


# The outcomes `complete()` returned in this context, when a job counts them (`counting_outcomes`).
_outcomes: contextvars.ContextVar[Counter[str] | None] = contextvars.ContextVar("call_outcomes", default=None)


@contextmanager
def counting_outcomes() -> Iterator[Counter[str]]:
    """Count by status ('ok', 'failed') the record of every `complete()` in the body (in this context), and
    as 'withheld' too each failure no run tries again (CallLedger.final_failure: a content-filtered reply)."""
    outcomes: Counter[str] = Counter()
    token = _outcomes.set(outcomes)
    try:
        yield outcomes
    finally:
        _outcomes.reset(token)


def complete(request: ChatRequest, options: CallOptions, ledger: CallLedger) -> CallRecord:
    """The recorded outcome of `request`: from the ledger if it already succeeded (there or in a source
    ledger, then copied into it; under its key or its legacy key), else by calling (a batch-mode call is
    deferred to its batch instead, tasks/llm/deferral.py)."""
    key = request.key()
    with in_flight.key_locks.hold(key):
        record = _recorded_under_legacy_key(request, ledger) or _outcome_of_key(key, request, options, ledger)
    if (outcomes := _outcomes.get()) is not None:
        outcomes[record.status] += 1
        outcomes["withheld"] += record.error_kind == WITHHELD
    return record


def _outcome_of_key(key: str, request: ChatRequest, options: CallOptions, ledger: CallLedger) -> CallRecord:
    """The outcome of `key`, its key held in this process: the ledger's success, else made (`_outcome`)."""
    if (others := in_flight.other_processes) is None:
        return ledger.adopt(key) or _outcome(key, request, options, ledger)
    # Across processes, the ledger as last read first (a call it has needs no key held, and no read of what
    # the others appended); then, holding the key, what they recorded of it too (the holder reads the
    # ledger when they may have).
    if (record := ledger.lookup(key) and ledger.adopt(key)) is not None:
        return record
    # The call's reservation rides on the hold (one round trip, not two).
    budget = budget_for(ledger.root)
    reservation = _reservation(budget, key, request, options, ledger)
    with others.hold(key, ledger, reservation) as reserved:
        if (record := ledger.adopt(key, fresh=False)) is None:
            return _outcome(key, request, options, ledger, reserved)
        if reserved:  # recorded meanwhile by a process outside the cluster
            budget.release(key)
        return record


def _reservation(
    budget: SpendingBudget | None, key: str, request: ChatRequest, options: CallOptions, ledger: CallLedger
) -> Any:
    """The call's reservation in the run's budget, for the holder of its key to carry (in_flight.KeyHolder);
    None without a cap, or for a batch call (reserved with its batch)."""
    if budget is None or options.mode == "batch":
        return None
    return budget.reservation(key, estimated_cost_usd(request, options), ledger.recorded_cost_usd(key))


def _outcome(
    key: str, request: ChatRequest, options: CallOptions, ledger: CallLedger, reserved: bool | None = None
) -> CallRecord:
    """The outcome of a call the ledger has no success of: its recorded refusal by the provider's content
    filter (final), deferred to its batch, refused by the run's spending cap, or made. `reserved`: the
    answer to its reservation, if it was made already (with the hold of its key)."""
    if (withheld := ledger.final_failure(key)) is not None:
        return withheld
    budget = budget_for(ledger.root)
    if options.mode == "batch":
        record = batch_outcome(key, request, options, ledger)
        if record.error_kind == NOT_SUBMITTED and budget is not None and budget.stopped:
            record = capped_record(key, request, options, budget)  # the cap kept it from its batch
        return record
    if budget is not None:
        return _call_within(budget, key, request, options, ledger, reserved)
    return _call(key, request, options, ledger)


def _recorded_under_legacy_key(request: ChatRequest, ledger: CallLedger) -> CallRecord | None:
    """The final outcome a run before whole-number floats were read as integers recorded of this request
    (ChatRequest.legacy_key): its success (a source ledger's copied in) or its withheld reply. Recorded
    before this run began, so the ledger as last read has it."""
    if (legacy := request.legacy_key()) is None:
        return None
    if ledger.lookup(legacy) is not None:
        return ledger.adopt(legacy, fresh=False)
    return ledger.final_failure(legacy)


def _call_within(
    budget: SpendingBudget,
    key: str,
    request: ChatRequest,
    options: CallOptions,
    ledger: CallLedger,
    reserved: bool | None = None,
) -> CallRecord:
    """The call made if its estimate fits the budget (its recorded cost then replaces the estimate), else
    its refusal, which is not written to the ledger. `reserved`: as `_outcome`'s."""
    if reserved is None:
        reserved = reserve_call(budget, key, request, options, ledger)
    if not reserved:
        return capped_record(key, request, options, budget)
    record = None
    try:
        record = _call(key, request, options, ledger)
    finally:
        budget.settle(key, None if record is None else record.cost_usd)
    return record


def reserve_call(
    budget: SpendingBudget, key: str, request: ChatRequest, options: CallOptions, ledger: CallLedger
) -> bool:
    """Reserve the call's estimate in `budget` unless it would pass the cap; what the ledger already
    records for the call (earlier attempts) is spent, so settling it later adds only the new cost."""
    return budget.reserve(key, estimated_cost_usd(request, options), ledger.recorded_cost_usd(key))


def capped_record(key: str, request: ChatRequest, options: CallOptions, budget: SpendingBudget) -> CallRecord:
    """The outcome of a call the spending cap kept from being made: failed, kind `cost_cap`, unpaid. What the
    run spent is the summary's to say, once every call in flight has ended (`SpendingBudget.stop_after`)."""
    reason = (
        f"not made: stopped at the spending cap of USD {budget.cap_usd:,.4f}; raise --max-cost "
        "(max_cost_usd) and re-run to go on"
    )
    return CallRecord.not_made(key, request.model, COST_CAP, reason, retryable=False, mode=options.mode)


def _call(key: str, request: ChatRequest, options: CallOptions, ledger: CallLedger) -> CallRecord:
    """Attempt the call until it succeeds, fails permanently or runs out of attempts; record the outcome.
    Once sending has stopped, a call none of whose attempts was sent waits for the process to exit."""
    record = _attempt_until_done(key, request, options, ledger)
    if record is None:
        threading.Event().wait()  # never set: this thread ends with the process
    return record


def _attempt_until_done(
    key: str, request: ChatRequest, options: CallOptions, ledger: CallLedger
) -> CallRecord | None:
    """The call's recorded outcome; None when sending stopped before its first attempt (nothing to record)."""
    tally = CallTally.resume(ledger.last_failure(key))
    _sending_modules()  # litellm's import, once per process, is neither a call's latency nor held in its slot
    limiter = limiter_for(options.provider, options.limits)
    rng = random.Random()
    started_at = datetime.now(UTC)
    counted = interrupted = False
    try:
        for attempt in range(1, options.retry.max_attempts + 1):
            with limiter.slot(), in_flight.open_requests.open(request.model):
                if not counted:
                    if not (counted := in_flight.sending.start()):
                        return None
                elif interrupted := in_flight.sending.stopped:
                    break
                tally.attempts += 1
                began = time.monotonic()
                response, error = _attempt(request, options, tally)
                latency_s = time.monotonic() - began
            if error is None:
                record = call_record(key, request, tally, started_at, latency_s, response=response)
                ledger.write(record)
                return record
            delay = retry_delay(attempt, options.retry, error.retry_after_s, rng) if error.retryable else None
            if delay is None or attempt == options.retry.max_attempts:
                break
            if error.retry_after_s is not None:
                limiter.pause(delay)
            logger.info("%s: %s (attempt %d), retrying in %.1f s", request.model, error.kind, attempt, delay)
            in_flight.sending.pause(delay)
        final = _final(error, attempt, options.retry, interrupted)
        record = call_record(key, request, tally, started_at, latency_s, error=final)
        ledger.write(record)
        logger.warning("call failed: %s", record.error)
        return record
    finally:
        if counted:
            in_flight.sending.end()


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


def _final(error: CallError, attempts: int, policy: RetryPolicy, interrupted: bool = False) -> CallError:
    if not error.retryable:
        return error
    if interrupted:
        reason = "interrupted before its next attempt"
    elif error.retry_after_s is not None and error.retry_after_s > policy.max_retry_after_s:
        reason = f"provider asked to wait {error.retry_after_s:.0f} s, more than max_retry_after_s"
    else:
        reason = f"gave up after {attempts} attempts"
    return CallError(error.kind, True, f"{error.message} ({reason}; re-run to retry)")


def _attempt(request: ChatRequest, options: CallOptions, tally: CallTally) -> tuple[Any, CallError | None]:
    """Make one HTTP call; return the response, or the classified reason it cannot be used."""
    if is_offline(request.model):
        _sending_modules().offline_provider.install_provider()
    try:
        api_key = api_key_for(request, options)
    except MissingCredentials as exc:
        return None, permanent_error("authentication", request.model, str(exc))
    try:
        response = within_deadline(options.timeout_s, _sender(request, options, api_key))
    except DeadlinePassed:
        return None, CallError(
            "timeout", True, f"{request.model}: no whole reply within {options.timeout_s} s"
        )
    except Exception as exc:  # every provider failure is classified and recorded, never raised
        return None, classify_error(exc, request.model)
    tally.add_usage(request, options, response)  # an empty reply is still billed
    return response, unusable_reply(request.model, response)


def import_sending_modules() -> None:
    """Import what sending a call needs (litellm: 2.5-3 s of CPU) ahead of a process's first call: a Dask
    worker does it in the background as it joins the cluster, while the flow sends its tasks."""
    _sending_modules()


@functools.cache
def _sending_modules() -> SimpleNamespace:
    """The modules that send a request, imported at a process's first call: they import litellm, which is
    configured first (sdk.py)."""
    litellm_sdk()
    from tasks.llm import direct, offline_provider

    return SimpleNamespace(direct=direct, offline_provider=offline_provider)


def _sender(request: ChatRequest, options: CallOptions, api_key: str | None) -> Callable[[], Any]:
    """The HTTP call of one attempt: the direct route when litellm resolves the request to one, else
    `litellm.completion`. Either way the SDK's time-out is per read (a trickled reply would never end), so
    `within_deadline` bounds the whole reply."""
    direct = _sending_modules().direct
    route = direct.direct_route(request.model, request.api_base, request.params)
    if route is not None:
        key = api_key or PLACEHOLDER_API_KEY  # a route has an api_base: see api_key_for
        messages = list(request.messages)
        return lambda: direct.send_direct(route, messages, request.params, key, options.timeout_s)
    return lambda: litellm_sdk().completion(
        model=request.model,
        messages=list(request.messages),
        api_base=request.api_base,
        api_key=api_key,
        timeout=options.timeout_s,
        max_retries=0,  # the SDK's own retries would be invisible to our attempt count and back-off
        num_retries=0,
        **_litellm_flags(request),
        **request.params,
    )


def _litellm_flags(request: ChatRequest) -> dict[str, Any]:
    """litellm's internal flags for this request (it strips them before sending).

    Our tools are functions the caller runs, never litellm's MCP gateway; without the flag, litellm
    imports its gateway (and the optional `mcp` package) for every request that has tools.
    """
    return {"_skip_mcp_handler": True} if "tools" in request.params else {}


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


def unusable_reply(model: str, response: Any) -> CallError | None:
    choices = getattr(response, "choices", None)
    if choices and choices[0].finish_reason == "content_filter":
        return permanent_error(WITHHELD, model, "reply withheld by the provider")
    # A reply made only of tool calls is a whole reply: the model asks for a tool instead of answering.
    if not choices or not ((choices[0].message.content or "").strip() or tool_calls_of(choices[0].message)):
        return CallError("empty_reply", True, f"{model}: the reply has no text and no tool call")
    return None


def tool_calls_of(message: Any) -> list[dict[str, Any]]:
    """A reply's tool calls as plain dicts, in the shape an assistant message sends them back."""
    return [
        {
            "id": call.id,
            "type": call.type or "function",
            "function": {"name": call.function.name, "arguments": call.function.arguments},
        }
        for call in getattr(message, "tool_calls", None) or []
    ]


def parse_structured(request: ChatRequest, text: str | None) -> Any:
    """The reply text as JSON when the request asked for JSON, else None.

    Text that is not JSON also gives None, with the call still 'ok': as with free text, what an
    invalid answer means is for the caller to decide (a scorer marks it unparseable).
    """
    if not request.asks_for_json() or text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


class MissingCredentials(Exception):
    """No API key is available for a call; litellm would report it as a retryable 500."""


def api_key_for(request: ChatRequest, options: CallOptions) -> str | None:
    """The key to send: the variable named by `api_key_env`; for a custom `api_base` without one, a
    placeholder; else None, which lets litellm read the provider's standard variable itself."""
    if options.api_key_env:
        if key := os.environ.get(options.api_key_env):
            return key
        raise MissingCredentials(f"{options.api_key_env} is not set")
    if is_offline(request.model):
        return None
    if request.api_base:
        # A custom endpoint gets a key only when named for it: the provider's own (OPENAI_API_KEY) is a
        # secret of that provider, and litellm would send it to any api_base.
        return PLACEHOLDER_API_KEY
    environment = litellm_sdk().validate_environment(model=request.model)
    if environment["keys_in_environment"]:
        return None
    raise MissingCredentials(f"{' or '.join(environment['missing_keys'])} is not set")


def call_record(
    key: str,
    request: ChatRequest,
    tally: CallTally,
    started_at: datetime,
    latency_s: float | None,
    *,
    response: Any = None,
    error: CallError | None = None,
) -> CallRecord:
    choice = response.choices[0] if response is not None and response.choices else None
    message = choice.message if choice is not None and error is None else None
    text = message.content if message is not None else None
    return CallRecord(
        key=key,
        model=request.model,
        status="ok" if error is None else "failed",
        text=text,
        tool_calls=tool_calls_of(message),
        structured=parse_structured(request, text),
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
