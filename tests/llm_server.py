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

The reply texts are in llm_replies.py, what a test scripts and reads back (and the server's state) in
llm_server_state.py, and the Files and Batches APIs in llm_batches.py; this module holds the HTTP handler,
`LLMServer` and the command line.
"""

import argparse
import contextlib
import copy
import hashlib
import json
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

from tests.llm_batches import (
    advance_batch,
    cancel_batch,
    create_batch,
    list_batches,
    parse_multipart,
    store_file,
)
from tests.llm_replies import REPLIES, default_reply
from tests.llm_server_state import Action, BatchScript, Faults, RecordedRequest, ServerState, reply_body

TRICKLE_GAP_S = 0.1
_FILE = re.compile(r"/v1/files/([^/]+)")
_FILE_CONTENT = re.compile(r"/v1/files/([^/]+)/content")
_BATCH = re.compile(r"/v1/batches/([^/]+)")
_BATCH_CANCEL = re.compile(r"/v1/batches/([^/]+)/cancel")


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
    def _batch_api_reply(state: ServerState, path: str, query: dict[str, list[str]]) -> str | bytes | None:
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

    def _answer(self, state: ServerState, request: dict[str, Any], body: bytes, started: float) -> None:
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
            client_port=self.client_address[1],
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


@contextlib.contextmanager
def refusing_url() -> Iterator[str]:
    """An OpenAI-compatible base URL whose port refuses every connection while it is held: bound here and
    never listened on, so no other test's server can take it (a stopped server's port can be taken)."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{held.getsockname()[1]}/v1"


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
        self.state = ServerState(
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
        """Once `ok_replies` requests have succeeded, hold every new request unanswered. Decided as each
        request arrives, counting the replies that have ended: with several calls in flight, one that arrives
        while the last of those replies is being answered passes too."""
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
