"""The call ledger: every LLM call of a run directory, stored by its call key.

Layout under `<run_dir>/ledger/`:

    ok/<k[:2]>/<key>.json       a call that succeeded: "done" means "this file exists"
    failed/<k[:2]>/<key>.json   the latest failure of a call that has not succeeded yet
    sources.json                other ledgers whose successful calls this one reuses (optional)

One file per call key, written to a unique temporary name in the same folder and then renamed, so a
reader sees a whole record or nothing: a kill -9 at any point leaves at most a stray `*.tmp`, never a
partial success. Each file has exactly one writer at a time (the task making that call); there is no
shared database file, so parallel tasks and processes never contend for a lock, and a re-run finds
every finished call by its key, whichever task, condition or earlier run made it.

A ledger may name source ledgers (`reuse_calls_of`; a re-judge names the runs it re-judges): a call one of
them holds a success for is that success, never made again. `complete()` copies it into this ledger
(`adopt`), marked `reused_from`, with none of its cost: it was paid where it was made.
"""

import json
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from tasks.core.files import write_text_atomic
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

    @model_validator(mode="before")
    @classmethod
    def _encodable(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        fields = {name: data[name] for name in _REPLY_FIELDS if name in data}
        encodable = utf8_encodable(fields)
        if encodable == fields:
            return data
        return {**data, **encodable, "escaped": True}

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


# What the attempts of a call consumed: a reused call's are this ledger's own, not its source's.
_SPENDING_FIELDS = ("attempts", "prompt_tokens", "completion_tokens", "input_cost_usd", "output_cost_usd")
# The fields holding what a provider sent (its reply or its error message).
_REPLY_FIELDS = ("text", "tool_calls", "structured", "error")


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


SOURCES_FILE = "sources.json"


class CallLedger:
    """Read and write call records under one ledger folder; read the successes of its source ledgers."""

    def __init__(self, root: Path, sources: Sequence[Path] | None = None) -> None:
        """`sources`: the ledgers whose successes this one reuses; None reads them from its SOURCES_FILE."""
        self.root = Path(root)
        if sources is not None:
            self.sources = [Path(source) for source in sources]

    @cached_property
    def sources(self) -> list[Path]:
        """The ledgers whose successful calls are this one's too, searched in order (none by default)."""
        path = self.root / SOURCES_FILE
        if not path.is_file():
            return []
        return [Path(source) for source in json.loads(path.read_text(encoding="utf-8"))["ledgers"]]

    def reuse_calls_of(self, sources: Sequence[Path]) -> None:
        """Reuse the successful calls of the `sources` ledgers from now on (written in SOURCES_FILE)."""
        self.sources = [Path(source).resolve() for source in sources]
        listed = json.dumps({"ledgers": [str(source) for source in self.sources]}, indent=2)
        write_text_atomic(self.root / SOURCES_FILE, listed)

    def lookup(self, key: str) -> CallRecord | None:
        """The successful record of `key`: this ledger's, else the first source ledger's (as `adopt` would
        copy it); None if the call has not succeeded in any."""
        return read_record(self._path("ok", key)) or self._reused(key)

    def adopt(self, key: str) -> CallRecord | None:
        """`lookup`, a source ledger's success written into this ledger: the folder then holds every call its
        outputs rest on, and a re-run reads it here."""
        record = read_record(self._path("ok", key))
        if record is None and (record := self._reused(key)) is not None:
            self.write(record)
        return record

    def _reused(self, key: str) -> CallRecord | None:
        """The first source ledger's success of `key`, as this ledger records it: reused, made and paid
        there; its attempts, tokens and costs are this ledger's own failed attempts of it (none, mostly)."""
        for source in self.sources:
            found = read_record(source / "ok" / key[:2] / f"{key}.json")
            if found is not None:
                own = self.last_failure(key)
                spent_here = {name: getattr(own, name) if own else 0 for name in _SPENDING_FIELDS}
                paid_in = found.reused_from or str(source)
                return found.model_copy(update={**spent_here, "reused_from": paid_in})
        return None

    def last_failure(self, key: str) -> CallRecord | None:
        """The latest failed record of `key` (its attempts and costs carry over into the next try)."""
        return read_record(self._path("failed", key))

    def write(self, record: CallRecord) -> None:
        """Store `record` atomically; a success also retires the call's failure record."""
        write_text_atomic(self._path(record.status, record.key), record.model_dump_json())
        if record.status == "ok":
            self._path("failed", record.key).unlink(missing_ok=True)

    def records(self) -> Iterator[CallRecord]:
        """Every readable record: successes, then failures of calls that never succeeded."""
        for path in sorted(self.root.glob("ok/*/*.json")):
            if (record := read_record(path)) is not None:
                yield record
        yield from self.failures()

    def failures(self) -> Iterator[CallRecord]:
        """The latest failure of every call that has not succeeded (reads no success)."""
        for path in sorted(self.root.glob("failed/*/*.json")):
            if (record := read_record(path)) is not None and self.lookup(record.key) is None:
                yield record

    def recorded_cost_usd(self, key: str) -> float:
        """What the ledger records `key` has cost so far: its success, else its latest failure, else 0."""
        record = self.lookup(key) or self.last_failure(key)
        return 0.0 if record is None else record.cost_usd

    def total_cost_usd(self) -> float:
        """What every call in the ledger has cost, every attempt counted."""
        return sum(record.cost_usd for record in self.records())

    def count_succeeded(self) -> int:
        """How many calls have succeeded (cheap: counts files, reads none)."""
        return sum(1 for _ in self.root.glob("ok/*/*.json"))

    def _path(self, status: str, key: str) -> Path:
        return self.root / status / key[:2] / f"{key}.json"


def read_record(path: Path) -> CallRecord | None:
    try:
        return CallRecord.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except ValidationError:
        # Only reachable after an OS crash (rename without fsync): treat the call as not made.
        return None
