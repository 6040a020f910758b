"""A scriptable OpenAI-compatible chat server on 127.0.0.1 for tests and the benchmark.

It answers `POST /v1/chat/completions` like a provider would, and records every request so tests can
count calls at the server. Behaviour is scripted per request with `Action`s queued for a model:
latency, 429 with Retry-After, 5xx, a hang past the client's time-out, a body trickled out slowly, an
`{"error": ...}` body with any status (gateways send it with 200 when overloaded), a malformed body,
any reply text (e.g. broken judge JSON) or tool calls (see `tool_call`). Unscripted requests get a
deterministic reply after `latency_s`. With `parallel=1` it answers one request at a time and queues the
rest, like a local server with one slot (llama.cpp's `llama-server -np 1`).

It also serves OpenAI's Files and Batches APIs (`/v1/files`, `/v1/batches`, in the shapes the OpenAI SDK
parses), so batch mode runs through litellm's real calls. A batch finishes `batch_delay_s` after its
creation (held with `hold_batches`: once released), when a retrieve, cancel or list next sees it: each
line is answered with the body a chat call with a default `Action` would get, into an output file.
`BatchScript`s queued with `script_batch` make lines fail, the batch expire with some lines answered, or
fail whole; a cancelled batch answers nothing.
Answered lines are not chat requests: `batch_submissions` counts each custom_id's submissions instead.
`finish_batches` ends every batch now, and `forget_batch` makes one unknown (a 404), as a provider does
after its retention period.

`GET /stats` returns the counters as JSON, so a server started as a subprocess
(`python -m tests.llm_server --latency 0.2 --batch-delay 1`) can be read from another process; `--reply`
picks one of the named reply functions (`REPLIES`) for it, since a function cannot be passed to another
process. `--fail-rate 0.3` makes it a flaky provider (`Faults`): about 3 unscripted chat requests in 10
get a 500 (`--fail-status`), the same ones whatever the order of the requests (`--seed`).
"""

import argparse
import contextlib
import copy
import email
import email.policy
import hashlib
import json
import re
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

JUDGE_REPLY = '{"SCORE": 1.0, "REASON": "Matches the physician."}'
SNOMED_PATIENT = "patient"
# The trained patient oracle as the SNOMED README serves it (`--model_alias snomed-oracle`).
SNOMED_ORACLE = "snomed-oracle"
SNOMED_FINAL = '<Final Answer>: ["59621000", "44054006"]'
_CASE_TAG = re.compile(r"\[case ([0-9a-f]{8})\]")
CONSULT_QUESTIONS = (
    "When did it start?",
    "Have you had a fever?",
    "Where exactly is the pain, and does it spread anywhere?",
    "Is it there all the time, or does it come and go?",
    "Does anything make it better or worse?",
    "Have you had a cough or a runny nose?",
    "Do you take any medicines regularly?",
    "Have you had anything like this before?",
    "Are you allergic to anything?",
    "Does anyone in your family have a similar problem?",
    "Do you smoke or drink alcohol?",
    "Have you noticed any change in your weight or appetite?",
)
CONSULT_DIFFERENTIAL = json.dumps(
    [{"diagnosis": "Acute sinusitis", "icd11": None, "core": True, "rationale": "facial pain after a cold"}]
)
CONSULT_PLAN = json.dumps(
    [{"drug": "ibuprofen", "dose": 400, "unit": "mg", "frequency_per_day": 3, "days": 5, "route": "oral"}]
)
CONSULT_REVISED_PLAN = json.dumps(
    [{"drug": "paracetamol", "dose": 1000, "unit": "mg", "frequency_per_day": 4, "days": 5, "route": "oral"}]
)
CONSULT_ANSWER = "Take it with food, and see a doctor if it gets worse or is no better in a week."
# The FQR judge's first reply to a question's answer holds no verdict; asked again, it gives one.
CONSULT_JUDGE_NOTES = "The answer covers dosing and a safety net."
CONSULT_JUDGE_VERDICT = '{"correct": true, "reason": "Addresses the follow-up."}'


@dataclass(frozen=True)
class Action:
    """What the server does with one request. Defaults: a normal reply after the server's latency."""

    status: int = 200
    content: str | None = None
    delay_s: float | None = None
    retry_after: str | None = None
    raw_body: str | None = None
    finish_reason: str = "stop"
    error: dict[str, Any] | None = None  # sent as the body `{"error": error}`, with `status`
    trickle_s: float | None = None  # send the headers at once, then the body in pieces over this long
    # Answer nothing until the server stops (or `drop_held`): a hang past any client's time-out, however
    # slow the machine, where a delay could end first.
    hang: bool = False
    # The reply's tool calls (made with `tool_call`); its text is then `content`, None unless given.
    tool_calls: tuple[dict[str, Any], ...] | None = None


def tool_call(name: str, arguments: dict[str, Any], call_id: str = "call_0") -> dict[str, Any]:
    """One tool call of a reply, as an OpenAI-compatible provider sends it (arguments as a JSON string)."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


@dataclass(frozen=True)
class Faults:
    """Unscripted chat requests answered `status` at `rate`, as a flaky provider does. Which ones is a seeded
    hash of the request's body and of how many times that body was asked before, so the same requests
    fail whatever the order they come in, and a retry of one may succeed (at `rate` it fails again)."""

    rate: float
    status: int = 500
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"fail rate {self.rate}: give a share from 0 to 1")

    def fails(self, body_hash: str, asked_before: int) -> bool:
        digest = hashlib.sha256(f"{self.seed}/{body_hash}/{asked_before}".encode()).digest()
        return int.from_bytes(digest[:8]) < self.rate * 2**64

    def action(self) -> "Action":
        error = {"message": f"injected fault: {self.rate:.0%} of requests fail", "type": "server_error"}
        return Action(status=self.status, error=error, retry_after="0" if self.status == 429 else None)


@dataclass(frozen=True)
class BatchScript:
    """What the server does with one batch at its deadline, `delay_s` after creation (the server's
    `batch_delay_s` unless given; for a batch created under `LLMServer.hold_batches`, once released).
    Defaults: every line answered, "completed"."""

    delay_s: float | None = None
    failed_lines: dict[int, int] = field(default_factory=dict)  # line index -> HTTP status: the error file
    # "expired": the first `expire_completed` lines are answered, the rest go to the error file as expired.
    expire: bool = False
    expire_completed: int = 0
    fail: bool = False  # "failed" with an error, nothing answered


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it, and how it was answered."""

    model: str
    messages: list[dict[str, Any]]
    params: dict[str, Any]
    body_hash: str
    status: int
    started: float
    finished: float
    authorization: str | None = None  # the Authorization header, e.g. "Bearer sk-..."

    @property
    def ok(self) -> bool:
        return self.status == 200


def default_reply(model: str, messages: list[dict[str, Any]]) -> str:
    """A deterministic answer: judges (system prompt present) get a valid score, others a tagged text."""
    if messages and messages[0]["role"] == "system":
        return JUDGE_REPLY
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:8]
    return f"{model} answer {digest}: rest, fluids, and see a doctor if it gets worse."


def snomed_questions(model: str, case_tag: str) -> int:
    """How many questions the clinician `model` asks the patient whose answers carry `case_tag`: 5 to 20."""
    return 5 + int(hashlib.sha256(f"{model}/{case_tag}".encode()).hexdigest(), 16) % 16


def snomed_reply(model: str, messages: list[dict[str, Any]]) -> str:
    """Both roles of a SNOMED interview, by model name, with replies of realistic length.

    `patient` (or `snomed-oracle`) answers every question, tagging its answer with its case (a digest of its
    system prompt, which holds the record). Any other model is a clinician: it asks `snomed_questions`
    questions, then gives its final answer, at once when a user turn is not a patient's answer (the forced
    final prompt).
    """
    if model in (SNOMED_PATIENT, SNOMED_ORACLE):
        case_tag = hashlib.sha256(str(messages[0]["content"]).encode()).hexdigest()[:8]
        answered = sum(m["role"] == "assistant" for m in messages)
        return (
            f"[case {case_tag}] Answer {answered + 1}: it started a few weeks ago, comes and goes, is worse "
            "at night and after climbing the stairs, and resting for a while makes it a little better."
        )
    asked = sum(m["role"] == "assistant" for m in messages)
    tags = [_CASE_TAG.search(str(m["content"])) for m in messages if m["role"] == "user"]
    if asked and tags[-1] is None:
        return SNOMED_FINAL
    case_tag = next((tag.group(1) for tag in tags if tag), None)
    if case_tag is None or asked < snomed_questions(model, case_tag):
        # Each clinician words its questions its own way, or two interviews of a case would send the patient
        # the same requests, and the ledger would answer the second without a call.
        return f"{model}, question {asked + 1}: when did it start, how often does it come, what eases it?"
    return SNOMED_FINAL


def consult_questions(model: str, opening: str) -> int:
    """How many questions the agent `model` asks the patient who opened with `opening`: 3 to 12."""
    return 3 + int(hashlib.sha256(f"{model}/{opening}".encode()).hexdigest(), 16) % 10


def consult_reply(model: str, messages: list[dict[str, Any]]) -> str:
    """Both called roles of a consultation episode (the simulated patient is local to the solver).

    The FQR judge (its request holds the rubric's `<follow_up>` block): a verdict in prose around JSON for
    a new fact, and for a question first notes with no verdict, then the verdict when asked again. The
    agent: it asks `consult_questions` history questions, says `<Ready to diagnose>`, gives its ranked
    differential as JSON, then its plan (ibuprofen), and after that answers each follow-up: a new allergy
    with a revised plan (paracetamol), anything else with advice."""
    last = str(messages[-1]["content"])
    rubric = str(messages[1]["content"]) if len(messages) > 1 else ""
    if "<follow_up>" in rubric:
        if len(messages) > 2:  # asked again
            return CONSULT_JUDGE_VERDICT
        return f"Verdict: {CONSULT_JUDGE_VERDICT}" if "allergic" in rubric else CONSULT_JUDGE_NOTES
    if "ranked differential" in last:
        return CONSULT_DIFFERENTIAL
    if "treatment plan" in last:
        return f"{CONSULT_PLAN}\nRest, fluids, and see a doctor if it gets worse."
    if any("treatment plan" in str(m["content"]) for m in messages if m["role"] == "user"):
        if "allergic" in last:
            return f"Then avoid it: take this instead.\n{CONSULT_REVISED_PLAN}"
        return CONSULT_ANSWER
    asked = sum(m["role"] == "assistant" for m in messages)
    opening = str(messages[1]["content"]) if len(messages) > 1 else ""
    if asked >= consult_questions(model, opening):
        return "<Ready to diagnose>"
    # Each agent words its questions its own way, as real agents do, so two agents' requests differ.
    return f"{CONSULT_QUESTIONS[asked % len(CONSULT_QUESTIONS)]} ({model}, question {asked + 1})"


REPLIES: dict[str, Callable[[str, list[dict[str, Any]]], str]] = {
    "default": default_reply,
    "snomed": snomed_reply,
    "consult": consult_reply,
}
BATCH_EXPIRED = {
    "code": "batch_expired",
    "message": "This request could not be executed before the completion window expired.",
}
TRICKLE_GAP_S = 0.1
_FILE = re.compile(r"/v1/files/([^/]+)")
_FILE_CONTENT = re.compile(r"/v1/files/([^/]+)/content")
_BATCH = re.compile(r"/v1/batches/([^/]+)")
_BATCH_CANCEL = re.compile(r"/v1/batches/([^/]+)/cancel")


@dataclass
class _Batch:
    view: dict[str, Any]  # the batch object, as OpenAI sends it
    lines: list[dict[str, Any]]
    script: BatchScript
    deadline: float  # time.time() at which it finishes
    hold: threading.Event | None  # in progress, whatever the deadline, until this is set


@dataclass
class _State:
    latency_s: float
    reply: Callable[[str, list[dict[str, Any]]], str]
    scripts: dict[str | None, deque[Action]] = field(default_factory=lambda: defaultdict(deque))
    requests: list[RecordedRequest] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    hold_after_ok: int | None = None
    held: int = 0
    release: threading.Event = field(default_factory=threading.Event)
    answer_released: bool = False  # held requests are answered once released (`answer_held`), else dropped
    lock: threading.Lock = field(default_factory=threading.Lock)
    batch_delay_s: float = 0.0
    batch_scripts: deque[BatchScript] = field(default_factory=deque)
    batch_hold: threading.Event | None = None  # held by each batch created while it is not None
    gate: threading.Barrier | None = None  # chat requests are answered in groups of its size
    files: dict[str, tuple[dict[str, Any], bytes]] = field(default_factory=dict)  # id -> (object, content)
    batches: dict[str, _Batch] = field(default_factory=dict)  # in order of creation
    batches_created: int = 0  # forgotten ones included, so no batch id is given twice
    batch_submissions: Counter[str] = field(default_factory=Counter)  # custom_id -> lines submitted
    # Requests answered at once; the others wait their turn, as on llama.cpp's `llama-server -np 1`.
    slots: threading.Semaphore | None = None
    faults: Faults | None = None
    asked: Counter[str] = field(default_factory=Counter)  # body hash -> chat requests with that body

    def next_action(self, model: str, body_hash: str) -> Action:
        """The scripted action of the request, else a fault (`faults`), else a normal reply."""
        with self.lock:
            asked_before = self.asked[body_hash]
            self.asked[body_hash] += 1
            for queue_key in (model, None):
                if self.scripts[queue_key]:
                    return self.scripts[queue_key].popleft()
        if self.faults is not None and self.faults.fails(body_hash, asked_before):
            return self.faults.action()
        return Action()

    def should_hold(self) -> bool:
        with self.lock:
            if self.hold_after_ok is None:
                return False
            if sum(r.ok for r in self.requests) < self.hold_after_ok:
                return False
            self.held += 1
            return True


def reply_body(state: _State, request: dict[str, Any], action: Action) -> str:
    """The body the server sends for a chat `request` answered with `action` (a batch line's too)."""
    if action.raw_body is not None:
        return action.raw_body
    if action.error is not None:
        return json.dumps({"error": action.error})
    if action.status != 200:
        return json.dumps({"error": {"message": f"scripted {action.status}", "type": "test"}})
    text = (
        action.content
        if action.content is not None or action.tool_calls is not None
        else state.reply(request["model"], request["messages"])
    )
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if action.tool_calls is not None:
        message["tool_calls"] = list(action.tool_calls)
    prompt_words = sum(len(str(m.get("content") or "").split()) for m in request["messages"])
    completion_words = len((text or "").split())
    return json.dumps(
        {
            "id": f"chatcmpl-{len(state.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request["model"],
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": action.finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_words,
                "completion_tokens": completion_words,
                "total_tokens": prompt_words + completion_words,
            },
        }
    )


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


def store_file(state: _State, filename: str, purpose: str, content: bytes) -> dict[str, Any]:
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


def create_batch(state: _State, request: dict[str, Any]) -> dict[str, Any] | None:
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
    state.batches[batch_id] = _Batch(view, lines, script, now + delay_s, state.batch_hold)
    state.batch_submissions.update(line["custom_id"] for line in lines)
    return copy.deepcopy(view)


def advance_batch(state: _State, batch: _Batch) -> None:
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


def finish_batch(state: _State, batch: _Batch, at: int) -> None:
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


def store_lines(state: _State, filename: str, lines: list[dict[str, Any]]) -> str | None:
    """Keep `lines` as a JSONL batch output file; its id, None if there are no lines."""
    if not lines:
        return None
    content = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return store_file(state, filename, "batch_output", content)["id"]


def cancel_batch(state: _State, batch: _Batch) -> dict[str, Any]:
    """Cancel the batch unless it has finished: its unanswered lines are never answered."""
    advance_batch(state, batch)
    if batch.view["status"] == "in_progress":
        now = int(time.time())
        batch.view.update(status="cancelled", cancelling_at=now, cancelled_at=now)
    return copy.deepcopy(batch.view)


def list_batches(state: _State, limit: int, after: str | None) -> dict[str, Any]:
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


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes; avoid a 40 ms stall
    server: "_HTTPServer"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read the records instead
        pass

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if url.path.rstrip("/") == "/stats":
            self._send(200, json.dumps(self.server.owner.stats()))
            return
        state = self.server.owner.state
        with state.lock:
            reply = self._batch_api_reply(state, url.path, parse_qs(url.query))
        if reply is None:
            self._send_not_found()
            return
        self._send(200, reply)

    @staticmethod
    def _batch_api_reply(state: _State, path: str, query: dict[str, list[str]]) -> str | bytes | None:
        """A file, its content, a batch or a page of batches; None for an unknown one."""
        if match := _FILE_CONTENT.fullmatch(path):
            return state.files[match[1]][1] if match[1] in state.files else None
        if match := _FILE.fullmatch(path):
            return json.dumps(state.files[match[1]][0]) if match[1] in state.files else None
        if path == "/v1/batches":
            limit = int(query.get("limit", ["20"])[0])
            return json.dumps(list_batches(state, limit, query.get("after", [None])[0]))
        if (match := _BATCH.fullmatch(path)) and match[1] in state.batches:
            advance_batch(state, state.batches[match[1]])
            return json.dumps(state.batches[match[1]].view)
        return None

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path in ("/v1/files", "/v1/batches") or _BATCH_CANCEL.fullmatch(self.path):
            self._post_batch_api(body)
            return
        if not self.path.endswith("/chat/completions"):
            self._send_not_found()
            return
        state = self.server.owner.state
        request = json.loads(body)
        started = time.monotonic()
        with state.lock:
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
        try:
            if state.slots is None:
                self._answer(state, request, body, started)
            else:
                with state.slots:
                    self._answer(state, request, body, started)
        finally:
            with state.lock:
                state.in_flight -= 1

    def _answer(self, state: _State, request: dict[str, Any], body: bytes, started: float) -> None:
        """Send the scripted answer, recorded first: a client holding its reply finds its request counted.
        A dropped connection takes its record back."""
        if state.should_hold():
            state.release.wait()
            if not state.answer_released:
                self.close_connection = True
                return
        if state.gate is not None:
            # Too few came together in time: answered all the same, and the test sees the count.
            with contextlib.suppress(threading.BrokenBarrierError):
                state.gate.wait()
        body_hash = hashlib.sha256(body).hexdigest()
        action = state.next_action(request["model"], body_hash)
        if action.hang:
            state.release.wait()
            self.close_connection = True
            return
        time.sleep(state.latency_s if action.delay_s is None else action.delay_s)
        record = RecordedRequest(
            model=request["model"],
            messages=request["messages"],
            params={k: v for k, v in request.items() if k not in ("model", "messages")},
            body_hash=body_hash,
            status=action.status,
            started=started,
            finished=time.monotonic(),
            authorization=self.headers.get("Authorization"),
        )
        reply = reply_body(state, request, action)
        with state.lock:
            state.requests.append(record)
        headers = {"Retry-After": action.retry_after} if action.retry_after is not None else {}
        try:
            self._send(action.status, reply, headers, action.trickle_s)
        except (BrokenPipeError, ConnectionResetError):
            with state.lock:
                state.requests.remove(record)

    def _post_batch_api(self, body: bytes) -> None:
        """Upload a file, create a batch or cancel one; 404 for an unknown file or batch."""
        state = self.server.owner.state
        with state.lock:
            if self.path == "/v1/files":
                fields = parse_multipart(self.headers["Content-Type"], body)
                filename, content = fields["file"]
                purpose = fields["purpose"][1].decode()
                reply: dict[str, Any] | None = store_file(state, filename or "upload", purpose, content)
            elif self.path == "/v1/batches":
                reply = create_batch(state, json.loads(body))
            else:
                found = state.batches.get(self.path.split("/")[-2])
                reply = None if found is None else cancel_batch(state, found)
        if reply is None:
            self._send_not_found()
            return
        self._send(200, json.dumps(reply))

    def _send_not_found(self) -> None:
        error = {"message": f"unknown path {self.path}", "type": "invalid_request_error", "code": None}
        self._send(404, json.dumps({"error": error}))

    def _send(
        self,
        status: int,
        body: str | bytes,
        headers: dict[str, str] | None = None,
        trickle_s: float | None = None,
    ) -> None:
        payload = body if isinstance(body, bytes) else body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if trickle_s is None:
            self.wfile.write(payload)
            return
        # Pieces TRICKLE_GAP_S apart, each arriving well within any per-read time-out of the client.
        pieces = max(1, min(len(payload), round(trickle_s / TRICKLE_GAP_S)))
        size = -(-len(payload) // pieces)
        for start in range(0, len(payload), size):
            self.wfile.write(payload[start : start + size])
            self.wfile.flush()
            time.sleep(trickle_s / pieces)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    owner: "LLMServer"


class LLMServer:
    """The server, run in a background thread: `with LLMServer(latency_s=0.01) as server: server.url`."""

    def __init__(
        self,
        latency_s: float = 0.0,
        reply: Callable[[str, list[dict[str, Any]]], str] = default_reply,
        port: int = 0,
        batch_delay_s: float = 0.0,
        parallel: int | None = None,
        faults: Faults | None = None,
    ) -> None:
        """`parallel`: how many chat requests are answered at once (None: all); the others queue.
        `faults`: the share of unscripted requests that fail (None: none)."""
        slots = None if parallel is None else threading.Semaphore(parallel)
        self.state = _State(
            latency_s=latency_s, reply=reply, batch_delay_s=batch_delay_s, slots=slots, faults=faults
        )
        self._http = _HTTPServer(("127.0.0.1", port), _Handler)
        self._http.owner = self
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        """The OpenAI-compatible base URL (what litellm's `api_base` expects)."""
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.state.release.set()
        self._http.shutdown()
        self._http.server_close()

    def script(self, *actions: Action, model: str | None = None) -> None:
        """Queue actions for the next requests of `model` (any model when None), in order."""
        with self.state.lock:
            self.state.scripts[model].extend(actions)

    def script_batch(self, *scripts: BatchScript) -> None:
        """Queue scripts for the next batches created, in order."""
        with self.state.lock:
            self.state.batch_scripts.extend(scripts)

    def hold_batches(self) -> None:
        """Keep every batch created from now on in progress until `release_batches`: a test sees a batch in
        flight for as long as it needs, where a delay could run out first on a slow machine."""
        with self.state.lock:
            self.state.batch_hold = self.state.batch_hold or threading.Event()

    def release_batches(self) -> None:
        """Let the held batches finish when next seen (a cancelled one stays cancelled); hold no new one."""
        with self.state.lock:
            if self.state.batch_hold is not None:
                self.state.batch_hold.set()
            self.state.batch_hold = None

    def answer_in_groups(self, size: int, timeout_s: float = 60.0) -> None:
        """Hold each chat request until `size` are in flight together, then answer them: a test of a
        concurrency limit sees it reached however slow the machine. A group still short of `size` after
        `timeout_s` is answered as it is (the gate is then open for good)."""
        self.state.gate = threading.Barrier(size, timeout=timeout_s)

    def finish_batches(self) -> None:
        """Bring every batch's deadline to now: each finishes when a retrieve, cancel or list next sees it
        (so a test decides when a batch ends, without waiting on the clock)."""
        with self.state.lock:
            for batch in self.state.batches.values():
                batch.deadline = min(batch.deadline, time.time())

    def forget_batch(self, batch_id: str) -> None:
        """Drop the batch as a provider does after its retention period: from now on it is a 404."""
        with self.state.lock:
            del self.state.batches[batch_id]

    def hold_after(self, ok_replies: int) -> None:
        """Once `ok_replies` requests have succeeded, hold every new request unanswered."""
        self.state.hold_after_ok = ok_replies

    def drop_held(self) -> None:
        """Stop holding: held requests are closed without an answer, new ones are served normally."""
        self.state.hold_after_ok = None
        self.state.release.set()

    def answer_held(self) -> None:
        """Stop holding: held requests are answered as if never held (their replies paid for, whoever is
        still there to read them), new ones are served normally."""
        self.state.hold_after_ok = None
        self.state.answer_released = True
        self.state.release.set()

    @property
    def requests(self) -> list[RecordedRequest]:
        with self.state.lock:
            return list(self.state.requests)

    def ok_counts(self) -> Counter[str]:
        """How many times each distinct request body was answered successfully."""
        return Counter(r.body_hash for r in self.requests if r.ok)

    @property
    def batches(self) -> list[dict[str, Any]]:
        """The batch objects, oldest first, as a retrieve would return them now."""
        with self.state.lock:
            for batch in self.state.batches.values():
                advance_batch(self.state, batch)
            return [copy.deepcopy(batch.view) for batch in self.state.batches.values()]

    def batch_submissions(self) -> Counter[str]:
        """How many times each custom_id was submitted, in any batch."""
        with self.state.lock:
            return Counter(self.state.batch_submissions)

    def stats(self) -> dict[str, Any]:
        requests = self.requests
        submissions = self.batch_submissions()
        return {
            "requests": len(requests),
            "ok": sum(r.ok for r in requests),
            "max_in_flight": self.state.max_in_flight,
            "held": self.state.held,
            "max_ok_per_body": max(self.ok_counts().values(), default=0),
            "batches": self.state.batches_created,
            "batch_requests": submissions.total(),
            "max_submissions_per_custom_id": max(submissions.values(), default=0),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.0, help="Seconds before each reply.")
    parser.add_argument("--port", type=int, default=0, help="Port on 127.0.0.1 (0: any free port).")
    parser.add_argument("--reply", choices=sorted(REPLIES), default="default", help="How to answer.")
    parser.add_argument("--batch-delay", type=float, default=0.0, help="Seconds before a batch finishes.")
    parser.add_argument("--parallel", type=int, help="Chat requests answered at once; the others queue.")
    parser.add_argument(
        "--fail-rate", type=float, default=0.0, help="Share of chat requests that fail, from 0 to 1."
    )
    parser.add_argument("--fail-status", type=int, default=500, help="The status a failed request gets.")
    parser.add_argument("--seed", type=int, default=0, help="Which requests fail, for a given fail rate.")
    args = parser.parse_args()
    faults = Faults(args.fail_rate, args.fail_status, args.seed) if args.fail_rate else None
    server = LLMServer(
        latency_s=args.latency,
        reply=REPLIES[args.reply],
        port=args.port,
        batch_delay_s=args.batch_delay,
        parallel=args.parallel,
        faults=faults,
    )
    with server:
        print(server.url, flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
