"""A small scriptable OpenAI-compatible server for the judge's fault tests.

A real HTTP server on 127.0.0.1 in a thread. Tests queue `Reply`s (status, body, headers, delay); each
request takes the next one, or, when the queue is empty, whatever `default` makes of the request.
Every request is recorded (path, headers, JSON body, arrival time), and the peak number of requests
in flight is tracked so concurrency limits can be checked.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted HTTP response."""

    status: int = 200
    body: Any = None  # dict/list -> JSON, str -> sent as is
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (longer than the client timeout = a timeout)
    cut_at: int | None = None  # send only this many bytes of the body, then close (a reply cut off)


@dataclass
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float


def completion(
    content: str | None,
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
    refusal: str | None = None,
    finish_reason: str = "stop",
    model: str = "scripted",
    cached_tokens: int | None = None,
) -> dict[str, Any]:
    """A chat.completion body; `cached_tokens` adds usage.prompt_tokens_details as OpenAI reports it."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": refusal},
                "finish_reason": finish_reason,
            }
        ],
        "usage": usage,
    }


def error_body(message: str, kind: str = "server_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": None}}


_CLAIM_ID = re.compile(r'<claim id="([^"]+)"')


def asked_claim_ids(request: dict[str, Any]) -> list[str]:
    """The claim ids a judge request asks about, read from its first user message."""
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    return _CLAIM_ID.findall(user)


def asked_abstract(request: dict[str, Any]) -> str:
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    return user.split("<abstract>", 1)[1].rsplit("</abstract>", 1)[0]


def answer(
    request: dict[str, Any], label: str = "SUPPORTS", evidence: str | None = None, confidence: float = 0.8
) -> str:
    """A valid JSON answer for every claim asked; evidence defaults to the abstract's first 40 characters."""
    quote = asked_abstract(request)[:40] if evidence is None else evidence
    return json.dumps(
        {
            "assessments": [
                {
                    "claim_id": cid,
                    "label": label,
                    "strength": "none" if label == "UNRELATED" else "direct",
                    "confidence": confidence,
                    "rationale": "scripted",
                    "evidence": quote,
                }
                for cid in asked_claim_ids(request)
            ]
        }
    )


def research_questions(request: dict[str, Any]) -> str | None:
    """A valid answer when `request` is a digest's research-questions request (no paper abstract in it)."""
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    if "<abstract>" in user:
        return None
    return json.dumps({"questions": ["What becomes possible now?", "What is newly uncertain?"]})


def answering(
    label: str = "SUPPORTS", evidence: str | None = None, delay: float = 0.0
) -> Callable[[Any], Reply]:
    """A default responder that answers every judge request validly with `label` (and the digest's
    research questions too)."""

    def respond(request: Any) -> Reply:
        text = research_questions(request) or answer(request, label, evidence)
        return Reply(body=completion(text), delay=delay)

    return respond


class ScriptedLLM:
    """The server. Use as a context manager; `url` is the base_url for the openai client."""

    def __init__(self) -> None:
        self.queue: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self.default: Callable[[Any], Reply] = lambda _req: Reply(500, error_body("nothing scripted"))
        self.in_flight = 0
        self.peak_in_flight = 0
        self._lock = threading.Lock()
        self.batches = ScriptedBatches(self)
        self.routes: dict[str, Reply] = {}  # fixed answers to GET paths (/v1/models, /props)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self.queue.extend(replies)

    def chat_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def __enter__(self) -> ScriptedLLM:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next(self, body: Any) -> Reply:
        with self._lock:
            if self.queue:
                return self.queue.popleft()
        return self.default(body)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                if self.path.endswith("/files"):
                    self._answer(None, server.batches.upload(self.headers.get("content-type", ""), raw))
                    return
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                if self.path.endswith("/batches"):
                    self._answer(body, server.batches.create(body))
                else:
                    self._answer(body)

            def do_GET(self) -> None:
                self._answer(None, server.routes.get(self.path) or server.batches.get(self.path))

            def _answer(self, body: Any, fixed: Reply | None = None) -> None:
                with server._lock:
                    server.requests.append(
                        Recorded(
                            self.command,
                            self.path,
                            {k.lower(): v for k, v in self.headers.items()},
                            body,
                            time.monotonic(),
                        )
                    )
                    server.in_flight += 1
                    server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
                try:
                    _write_reply(self, fixed or server._next(body))
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)
                finally:
                    with server._lock:
                        server.in_flight -= 1

        return Handler


def _write_reply(handler: BaseHTTPRequestHandler, reply: Reply) -> None:
    if reply.delay:
        time.sleep(reply.delay)
    payload = reply.body if isinstance(reply.body, (str, bytes)) else json.dumps(reply.body)
    data = payload if isinstance(payload, bytes) else payload.encode()
    handler.send_response(reply.status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(data)))
    for name, value in reply.headers.items():
        handler.send_header(name, value)
    handler.end_headers()
    if reply.cut_at is not None:
        handler.wfile.write(data[: reply.cut_at])
        handler.wfile.flush()
        handler.close_connection = True
        handler.connection.shutdown(socket.SHUT_RDWR)
        return
    handler.wfile.write(data)


class ScriptedBatches:
    """The Batch API's minimal endpoints: upload a file, create a batch, poll it, read its output.

    A batch stays `in_progress` until the test sets `ready = True`; then each of its requests is
    answered by the server's `default` responder, as if it had been sent on its own.
    """

    def __init__(self, server: ScriptedLLM) -> None:
        self.server = server
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.ready = False
        self.final_status = "completed"

    def upload(self, content_type: str, raw: bytes) -> Reply:
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"content-type: " + content_type.encode() + b"\r\n\r\n" + raw
        )
        data = next(p.get_payload(decode=True) for p in message.iter_parts() if p.get_filename())
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = data
        return Reply(
            body={
                "id": file_id,
                "object": "file",
                "bytes": len(data),
                "created_at": int(time.time()),
                "filename": "input.jsonl",
                "purpose": "batch",
                "status": "processed",
            }
        )

    def create(self, body: dict[str, Any]) -> Reply:
        batch_id = f"batch_{len(self.batches) + 1}"
        self.batches[batch_id] = {
            "id": batch_id,
            "object": "batch",
            "endpoint": body["endpoint"],
            "input_file_id": body["input_file_id"],
            "completion_window": body["completion_window"],
            "status": "in_progress",
            "created_at": int(time.time()),
        }
        return Reply(body=self.batches[batch_id])

    def get(self, path: str) -> Reply:
        parts = path.strip("/").split("/")
        if parts[-2:-1] == ["batches"] and parts[-1] in self.batches:
            batch = self.batches[parts[-1]]
            if self.ready and batch["status"] == "in_progress":
                self._finish(batch)
            return Reply(body=batch)
        if parts[-1] == "content" and parts[-2] in self.files:
            return Reply(body=self.files[parts[-2]])
        return Reply(404, error_body(f"no such thing: {path}", "invalid_request_error"))

    def _finish(self, batch: dict[str, Any]) -> None:
        batch["status"] = self.final_status
        if self.final_status != "completed":
            return
        out = []
        for line in self.files[batch["input_file_id"]].decode().splitlines():
            request = json.loads(line)
            reply = self.server.default(request["body"])
            out.append(
                json.dumps(
                    {
                        "id": f"r-{request['custom_id']}",
                        "custom_id": request["custom_id"],
                        "error": None,
                        "response": {"status_code": reply.status, "request_id": "req", "body": reply.body},
                    }
                )
            )
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = ("\n".join(out) + "\n").encode()
        batch["output_file_id"] = file_id
