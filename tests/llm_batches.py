"""The test server's OpenAI Files and Batches APIs on its shared state: store a file, create a batch,
finish it at its deadline as its BatchScript says (answered lines, failed lines, expired, failed whole),
cancel and list batches, in the shapes the OpenAI SDK parses.
"""

import copy
import email
import email.policy
import json
import time
from typing import Any

from tests.llm_server_state import Action, BatchScript, ServerState, StoredBatch, reply_body

BATCH_EXPIRED = {
    "code": "batch_expired",
    "message": "This request could not be executed before the completion window expired.",
}


def parse_multipart(content_type: str, body: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The fields of a multipart/form-data body: name -> (file name, content)."""
    message = email.message_from_bytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + body, policy=email.policy.HTTP
    )
    return {
        part.get_param("name", header="content-disposition"): (
            part.get_filename(),
            part.get_payload(decode=True),
        )
        for part in message.iter_parts()
    }


def store_file(state: ServerState, filename: str, purpose: str, content: bytes) -> dict[str, Any]:
    """Keep `content` as a new file; its file object. Call with the state's lock held."""
    file_id = f"file-{len(state.files) + 1}"
    file = {
        "id": file_id,
        "object": "file",
        "bytes": len(content),
        "created_at": int(time.time()),
        "filename": filename,
        "purpose": purpose,
        "status": "processed",
    }
    state.files[file_id] = (file, content)
    return file


def create_batch(state: ServerState, request: dict[str, Any]) -> dict[str, Any] | None:
    """A new "validating" batch of the input file's lines, counted as submitted; None if there is no such
    file. Call with the state's lock held."""
    if request["input_file_id"] not in state.files:
        return None
    content = state.files[request["input_file_id"]][1]
    lines = [json.loads(line) for line in content.decode().splitlines() if line.strip()]
    script = state.batch_scripts.popleft() if state.batch_scripts else BatchScript()
    now = time.time()
    state.batches_created += 1
    batch_id = f"batch_{state.batches_created}"
    view = {
        "id": batch_id,
        "object": "batch",
        "endpoint": request["endpoint"],
        "errors": None,
        "input_file_id": request["input_file_id"],
        "completion_window": request["completion_window"],
        "status": "validating",
        "output_file_id": None,
        "error_file_id": None,
        "created_at": int(now),
        "in_progress_at": None,
        "expires_at": int(now) + 24 * 3600,
        "finalizing_at": None,
        "completed_at": None,
        "failed_at": None,
        "expired_at": None,
        "cancelling_at": None,
        "cancelled_at": None,
        "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
        "metadata": request.get("metadata"),
    }
    delay_s = state.batch_delay_s if script.delay_s is None else script.delay_s
    state.batches[batch_id] = StoredBatch(view, lines, script, now + delay_s, state.batch_hold)
    state.batch_submissions.update(line["custom_id"] for line in lines)
    return copy.deepcopy(view)


def advance_batch(state: ServerState, batch: StoredBatch) -> None:
    """Bring the batch's status up to now: "in_progress" before its deadline, finished after it.
    Call with the state's lock held."""
    now = time.time()
    if batch.view["status"] not in ("validating", "in_progress"):
        return
    batch.view["status"] = "in_progress"
    batch.view["in_progress_at"] = batch.view["in_progress_at"] or int(now)
    held = batch.hold is not None and not batch.hold.is_set()
    if now >= batch.deadline and not held:
        finish_batch(state, batch, int(now))


def finish_batch(state: ServerState, batch: StoredBatch, at: int) -> None:
    """Answer the batch's lines as its script says, into an output and an error file."""
    view, script = batch.view, batch.script
    if script.fail:
        error = {"code": "invalid_request", "message": "Scripted failure.", "line": None, "param": None}
        view.update(status="failed", failed_at=at, errors={"object": "list", "data": [error]})
        return
    answered = script.expire_completed if script.expire else len(batch.lines)
    output: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    for index, line in enumerate(batch.lines):
        record: dict[str, Any] = {"id": f"{view['id']}_req_{index}", "custom_id": line["custom_id"]}
        if index >= answered:
            errors.append({**record, "response": None, "error": BATCH_EXPIRED})
            continue
        status = script.failed_lines.get(index, 200)
        body = json.loads(reply_body(state, line["body"], Action(status=status)))
        response = {"status_code": status, "request_id": f"{view['id']}_request_{index}", "body": body}
        (output if status == 200 else errors).append({**record, "response": response, "error": None})
    view.update(
        status="expired" if script.expire else "completed",
        finalizing_at=at,
        request_counts={"total": len(batch.lines), "completed": len(output), "failed": len(errors)},
        output_file_id=store_lines(state, f"{view['id']}_output.jsonl", output),
        error_file_id=store_lines(state, f"{view['id']}_error.jsonl", errors),
    )
    view["expired_at" if script.expire else "completed_at"] = at


def store_lines(state: ServerState, filename: str, lines: list[dict[str, Any]]) -> str | None:
    """Keep `lines` as a JSONL batch output file; its id, None if there are no lines."""
    if not lines:
        return None
    content = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return store_file(state, filename, "batch_output", content)["id"]


def cancel_batch(state: ServerState, batch: StoredBatch) -> dict[str, Any]:
    """Cancel the batch unless it has finished: its unanswered lines are never answered."""
    advance_batch(state, batch)
    if batch.view["status"] == "in_progress":
        now = int(time.time())
        batch.view.update(status="cancelled", cancelling_at=now, cancelled_at=now)
    return copy.deepcopy(batch.view)


def list_batches(state: ServerState, limit: int, after: str | None) -> dict[str, Any]:
    """A page of `limit` batches, newest first, starting after the batch `after`."""
    newest_first = list(reversed(state.batches.values()))
    for batch in newest_first:
        advance_batch(state, batch)
    ids = [batch.view["id"] for batch in newest_first]
    start = ids.index(after) + 1 if after in ids else 0
    page = [copy.deepcopy(batch.view) for batch in newest_first[start : start + limit]]
    return {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": start + limit < len(ids),
    }
