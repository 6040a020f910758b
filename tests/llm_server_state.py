"""What a test scripts on the test server and reads back (Action, BatchScript, RecordedRequest), the
server's shared state, and the body of a chat reply (a batch line's too).
"""

import hashlib
import json
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


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

    def action(self) -> Action:
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
    client_port: int | None = None  # the client's end of the connection: one per kept-alive connection

    @property
    def ok(self) -> bool:
        return self.status == 200


@dataclass
class StoredBatch:
    view: dict[str, Any]  # the batch object, as OpenAI sends it
    lines: list[dict[str, Any]]
    script: BatchScript
    deadline: float  # time.time() at which it finishes
    hold: threading.Event | None  # in progress, whatever the deadline, until this is set


@dataclass
class ServerState:
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
    batches: dict[str, StoredBatch] = field(default_factory=dict)  # in order of creation
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


def reply_body(state: ServerState, request: dict[str, Any], action: Action) -> str:
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
