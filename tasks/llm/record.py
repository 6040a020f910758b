"""`CallRecord`: the outcome of one call key, as the call ledger stores it (one JSON object per record)."""

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationInfo, model_validator

from tasks.llm.request import CallMode


class CallRecord(BaseModel):
    """The outcome of one call key. Tokens, costs and attempts add up every attempt ever made for it.

    `tool_calls` holds the reply's tool calls (OpenAI's shape: id, type, function name and arguments
    string); `structured` the reply parsed as JSON when the request asked for JSON; `mode` how the call
    was made (tasks/llm/batches.py makes batch calls). Records written before these fields existed read
    with their defaults.

    A reply is paid for, so it is always stored: text that UTF-8 cannot hold (a lone surrogate such as
    `\\ud83d`, which JSON lets a server send) is kept with those characters backslash-escaped, and
    `escaped` says so.
    """

    key: str
    model: str
    status: Literal["ok", "failed"]
    text: str | None = None
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    structured: Any = None
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    input_cost_usd: float = 0.0
    output_cost_usd: float = 0.0
    latency_s: float | None = None
    attempts: int = 0
    error_kind: str | None = None
    error: str | None = None
    retryable: bool | None = None
    response_id: str | None = None
    mode: CallMode = "single"
    batch_id: str | None = Field(None, description="The provider's batch that answered a batch-mode call.")
    escaped: bool = Field(False, description="Characters UTF-8 cannot encode were stored as \\uXXXX.")
    reused_from: str | None = Field(
        None,
        description="The ledger this success was read from, where it was made and paid; the attempts, "
        "tokens and costs here are only this ledger's own failed attempts of it, if any.",
    )
    started_at: datetime
    finished_at: datetime

    # After validation, not before: a model validator running first would make pydantic build a dict of
    # every record it reads from JSON (twice the time of a ledger lookup). And JSON cannot carry a lone
    # surrogate (pydantic refuses one), so only records built in Python can need escaping: a record read
    # from JSON (every ledger read) skips the walk over its fields.
    @model_validator(mode="after")
    def _encodable(self, info: ValidationInfo) -> "CallRecord":
        if info.mode == "json":
            return self
        fields = {name: getattr(self, name) for name in _REPLY_FIELDS}
        if not any(_unencodable(value) for value in fields.values()):
            return self
        for name, value in utf8_encodable(fields).items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "escaped", True)
        return self

    @property
    def cost_usd(self) -> float:
        return self.input_cost_usd + self.output_cost_usd

    @classmethod
    def not_made(
        cls, key: str, model: str, kind: str, reason: str, *, retryable: bool, mode: CallMode
    ) -> "CallRecord":
        """The outcome of a call that was not made (a batch call not answered yet, one a spending cap kept
        back): failed with `kind`, nothing paid; the ledger never holds it."""
        now = datetime.now(UTC)
        return cls(
            key=key,
            model=model,
            status="failed",
            error_kind=kind,
            error=f"{model}: {reason}",
            retryable=retryable,
            mode=mode,
            started_at=now,
            finished_at=now,
        )


# The fields holding what a provider sent (its reply or its error message).
_REPLY_FIELDS = ("text", "tool_calls", "structured", "error")


def _unencodable(value: Any) -> bool:
    """Whether some string in `value` (in lists and dicts too) is one UTF-8 cannot encode."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, list | tuple):
        return any(_unencodable(item) for item in value)
    if isinstance(value, dict):
        return any(_unencodable(key) or _unencodable(item) for key, item in value.items())
    return False


def utf8_encodable(value: Any) -> Any:
    """`value` with every string UTF-8 cannot encode backslash-escaped (`\\ud83d`), in lists and dicts too."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, list | tuple):
        return type(value)(utf8_encodable(item) for item in value)
    if isinstance(value, dict):
        return {utf8_encodable(key): utf8_encodable(item) for key, item in value.items()}
    return value
