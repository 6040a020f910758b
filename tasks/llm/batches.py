"""Provider batches: calls sent together through an OpenAI-style files + batches API, via litellm.

A batch's life, each step written to its record in `<run_dir>/batches/` before anything waits on it:

    preparing   the requests are written (`<id>.requests.json`, once), then the record with their call keys
    uploaded    `input_file_id`: the JSONL of requests is at the provider
    created     `batch_id`: the provider runs the batch (its own status: validating, in_progress, ...)
    collected   a finished batch's results are in the call ledger

A process killed at any step resumes from the record: a file is uploaded again only when no id was
recorded (uploads are free); a batch created but not yet recorded is found again by the record's id in
the batch's metadata (searching every batch of the account made since the file was uploaded), so no call
is ever submitted twice. A finished batch's answers land in the ledger exactly as single calls would
(same record, `mode` 'batch', batch prices); a line that failed gets a failure record with its attempts
counted; the calls of an expired or cancelled batch that were not answered are left to be submitted
again, as are those of a batch the provider no longer knows (status 'vanished': a 404 for it or its
results), and a batch the provider rejected fails its calls.
"""

import io
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from tasks.core.files import write_bytes_atomic, write_text_atomic
from tasks.llm.call import CallTally, api_key_for, call_record, unusable_reply
from tasks.llm.errors import CallError, batch_line_error, permanent_error
from tasks.llm.ledger import CallLedger, CallRecord
from tasks.llm.providers import provider_of
from tasks.llm.request import CallOptions, ChatRequest
from tasks.llm.sdk import litellm_sdk

ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
# Our status of a batch whose id (or results) the provider answers with a 404: gone after its retention.
VANISHED = "vanished"
FINISHED = ("completed", "failed", "expired", "cancelled", VANISHED)
METADATA_KEY = "threadmed_batch"
LIST_PAGE_SIZE = 100  # OpenAI's largest page


class BatchRecord(BaseModel):
    """One provider batch of a run, as persisted: what was sent, where it is, how it ended."""

    local_id: str
    wave: int
    model: str
    api_base: str | None = None
    options: CallOptions
    keys: list[str] = Field(description="The batch's call keys (each line's custom_id).")
    input_file_id: str | None = None
    batch_id: str | None = None
    status: str = "preparing"
    request_counts: dict[str, int] = Field(default_factory=dict)
    output_file_id: str | None = None
    error_file_id: str | None = None
    errors: list[str] = Field(default_factory=list, description="Why the provider rejected the batch.")
    collected: bool = False
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    finished_at: datetime | None = None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def provider(self) -> str:
        return provider_of(self.model, self.api_base)


_REQUESTS = TypeAdapter(dict[str, ChatRequest])


class BatchStore:
    """The batches of one run folder, each written atomically: `<run_dir>/batches/<local_id>.batch.json`
    (the record, small, rewritten as the batch moves on) and `<local_id>.requests.json` (its calls, once).
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def create(self, wave: int, calls: dict[str, ChatRequest], options: CallOptions) -> BatchRecord:
        """The record of a batch about to be sent, its requests written first (every call has the same
        model, endpoint and options)."""
        first = next(iter(calls.values()))
        record = BatchRecord(
            local_id=f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}",
            wave=wave,
            model=first.model,
            api_base=first.api_base,
            options=options,
            keys=list(calls),
        )
        write_bytes_atomic(self._requests_path(record), _REQUESTS.dump_json(calls))
        return self.write(record)

    def write(self, record: BatchRecord) -> BatchRecord:
        write_text_atomic(self.root / f"{record.local_id}.batch.json", record.model_dump_json(indent=1))
        return record

    def requests(self, record: BatchRecord) -> dict[str, ChatRequest]:
        """The batch's calls by call key."""
        return _REQUESTS.validate_json(self._requests_path(record).read_bytes())

    def records(self) -> list[BatchRecord]:
        """Every batch of the run, oldest first."""
        records = []
        for path in self.root.glob("*.batch.json"):
            try:
                records.append(BatchRecord.model_validate_json(path.read_bytes()))
            except ValidationError:  # only after an OS crash (rename without fsync): never created
                continue
        return sorted(records, key=lambda record: (record.created_at, record.local_id))

    def in_flight(self) -> list[BatchRecord]:
        """Batches whose results are not in the ledger yet."""
        return [record for record in self.records() if not record.collected]

    def _requests_path(self, record: BatchRecord) -> Path:
        return self.root / f"{record.local_id}.requests.json"


def request_lines(calls: dict[str, ChatRequest]) -> bytes:
    """A batch's input file: one JSONL line per call, its call key as custom_id, its body as sent alone."""
    return b"".join(request_line(key, request) for key, request in calls.items())


def request_line(key: str, request: ChatRequest) -> bytes:
    model = litellm_sdk().get_llm_provider(model=request.model, api_base=request.api_base)[0]
    body = {"model": model, "messages": list(request.messages), **request.params}
    line = {"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body}
    return (json.dumps(line, ensure_ascii=False) + "\n").encode()


def split_into_batches(
    calls: dict[str, ChatRequest], max_calls: int, max_bytes: int
) -> list[dict[str, ChatRequest]]:
    """The calls in order, cut into batches of at most `max_calls` calls and `max_bytes` of input file."""
    batches: list[dict[str, ChatRequest]] = [{}]
    size = 0
    for key, request in calls.items():
        line_size = len(request_line(key, request))
        if batches[-1] and (len(batches[-1]) == max_calls or size + line_size > max_bytes):
            batches.append({})
            size = 0
        batches[-1][key] = request
        size += line_size
    return [batch for batch in batches if batch]


def advance(record: BatchRecord, store: BatchStore, ledger: CallLedger) -> BatchRecord:
    """Take the batch one step on (upload, create, check, collect); each step is recorded as it is done."""
    import openai  # the SDK litellm sends batches through, imported with it: see sdk.py

    access = _access(record)
    uploading = record.input_file_id is None
    if uploading:
        upload = io.BytesIO(request_lines(store.requests(record)))
        upload.name = f"{record.local_id}.jsonl"
        created = litellm_sdk().create_file(file=upload, purpose="batch", **access)
        record = store.write(record.model_copy(update={"input_file_id": created.id, "status": "uploaded"}))
    if record.batch_id is None:
        # No batch can be made yet from a file uploaded just now; from an older one, a crash may have
        # come between the batch's creation and this record.
        made = None if uploading else _find_created(record, access)
        batch = made or litellm_sdk().create_batch(
            completion_window=COMPLETION_WINDOW,
            endpoint=ENDPOINT,
            input_file_id=record.input_file_id,
            metadata={METADATA_KEY: record.local_id},
            **access,
        )
        record = store.write(_with_status(record.model_copy(update={"batch_id": batch.id}), batch))
    try:
        if not record.finished:
            checked = _with_status(record, litellm_sdk().retrieve_batch(batch_id=record.batch_id, **access))
            record = store.write(checked) if checked != record else record
        if record.finished and not record.collected:
            record = store.write(collect(record, store.requests(record), ledger, access))
    except openai.NotFoundError:
        # Gone for good (no wait brings it back): what it did not answer into the ledger is sent again.
        update = {"status": VANISHED, "collected": True, "finished_at": datetime.now(UTC)}
        record = store.write(record.model_copy(update=update))
    return record


def _access(record: BatchRecord) -> dict[str, Any]:
    """litellm's routing arguments for the batch's provider: provider, endpoint and key."""
    route = ChatRequest(model=record.model, messages=(), api_base=record.api_base)
    return {
        "custom_llm_provider": record.provider,
        "api_base": record.api_base,
        "api_key": api_key_for(route, record.options),
        "max_retries": 0,  # a failed step is tried again at the next poll (tasks/evals/batch_waves.py)
    }


def _find_created(record: BatchRecord, access: dict[str, Any]) -> Any:
    """The provider's batch made from this record, if one was created before a crash recorded its id.

    The account's batches are listed newest first, page by page, down to the first one older than the
    record's input file: none of those can have been made from it.
    """
    uploaded_at = litellm_sdk().file_retrieve(file_id=record.input_file_id, **access).created_at
    after = None
    while True:
        page = litellm_sdk().list_batches(after=after, limit=LIST_PAGE_SIZE, **access)
        batches = page.data or []
        for batch in batches:
            if (batch.metadata or {}).get(METADATA_KEY) == record.local_id:
                return batch
        if not batches or not page.has_more or batches[-1].created_at < uploaded_at:
            return None
        after = batches[-1].id


def _with_status(record: BatchRecord, batch: Any) -> BatchRecord:
    counts = batch.request_counts
    listed = (batch.errors.data or []) if batch.errors else []
    errors = [error.message or error.code or "" for error in listed]
    finished = record.finished_at or (datetime.now(UTC) if batch.status in FINISHED else None)
    return record.model_copy(
        update={
            "status": batch.status,
            "request_counts": counts.model_dump() if counts is not None else {},
            "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id,
            "errors": errors,
            "finished_at": finished,
        }
    )


def collect(
    record: BatchRecord, requests: dict[str, ChatRequest], ledger: CallLedger, access: dict[str, Any]
) -> BatchRecord:
    """Write the finished batch's outcomes to the ledger: answers as successes, failed lines as failures.

    Calls the provider left unanswered (an expired or cancelled batch) get no record, so they are sent
    again; the calls of a rejected batch fail, with the provider's reason.
    """
    lines = [*_file_lines(record.output_file_id, access), *_file_lines(record.error_file_id, access)]
    answered = set()
    for line in lines:
        key = line.get("custom_id")
        if key not in requests or ledger.lookup(key) is not None:
            continue
        if (outcome := line_record(record, requests[key], line, ledger.last_failure(key))) is not None:
            ledger.write(outcome)
            answered.add(key)
    if record.status == "failed":
        reason = "; ".join(record.errors) or "no reason given"
        error = permanent_error("batch_rejected", record.model, f"the provider rejected the batch: {reason}")
        for key in requests.keys() - answered:
            ledger.write(_failure(record, requests[key], error, ledger.last_failure(key)))
    return record.model_copy(update={"collected": True})


def _file_lines(file_id: str | None, access: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if file_id is None:
        return
    content = litellm_sdk().file_content(file_id=file_id, **access).content
    for line in content.splitlines():
        if line.strip():
            yield json.loads(line)


def line_record(
    record: BatchRecord, request: ChatRequest, line: dict[str, Any], previous: CallRecord | None
) -> CallRecord | None:
    """The ledger record of one line of a batch's output or error file; None for a call left unanswered.

    An answer goes through the same checks as a single call's (an empty reply or a withheld one fails).
    """
    response = line.get("response") or {}
    error = line.get("error")
    if not response:
        if error and error.get("code") == "batch_expired":
            return None
        message = (error or {}).get("message") or "the provider gave no response for this call"
        unanswered = CallError("provider_error", True, f"{record.model}: {message}")
        return _failure(record, request, unanswered, previous)
    body = response.get("body") or {}
    status = int(response.get("status_code") or 0)
    if status != 200 or "error" in body:
        return _failure(record, request, batch_line_error(status, body.get("error"), record.model), previous)
    from openai.types.chat import ChatCompletion  # see sdk.py

    try:
        completion = ChatCompletion.model_validate(body)
    except ValidationError as invalid:
        detail = (
            f"{record.model}: an answer in the batch output is not a chat completion: {invalid.errors()[0]}"
        )
        return _failure(record, request, CallError("server_error", True, detail[:400]), previous)
    tally = CallTally.resume(previous)
    tally.attempts += 1
    tally.add_usage(request, record.options, completion)
    unusable = unusable_reply(record.model, completion)
    started_at = record.created_at
    outcome = call_record(
        request.key(), request, tally, started_at, None, response=completion, error=unusable
    )
    return outcome.model_copy(update={"mode": "batch", "batch_id": record.batch_id})


def _failure(
    record: BatchRecord, request: ChatRequest, error: CallError, previous: CallRecord | None
) -> CallRecord:
    tally = CallTally.resume(previous)
    tally.attempts += 1
    outcome = call_record(request.key(), request, tally, record.created_at, None, error=error)
    return outcome.model_copy(update={"mode": "batch", "batch_id": record.batch_id})
