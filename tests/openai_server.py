"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests (no mocks of the network).

``POST /v1/chat/completions`` answers with ``reply(body)`` (default: hr's
offline mock model on the request's messages and schema). Faults queued with
:meth:`FakeOpenAIServer.inject` are served one per request, in order, before
normal replies resume:

- ``Fault("429", retry_after="1")``: rate limited, with a ``Retry-After`` header;
- ``Fault("500")`` / ``Fault("503")``: server errors;
- ``Fault("slow", delay_s=0.5)``: the normal reply, after a delay;
- ``Fault("truncated")``: a ``Content-Length`` longer than the body, then close;
- ``Fault("malformed")``: 200 with a body that is not JSON;
- ``Fault("empty")``: 200 with a JSON body without ``choices``.
- ``Fault("trickle-headers", delay_s=0.5)``: the status line, then one header line every
  ``delay_s`` for ``duration_s``, then the normal reply;
- ``Fault("trickle-body", delay_s=0.5)``: the headers, then one byte of the body every
  ``delay_s`` for ``duration_s`` (leading blanks of the JSON), then the normal reply;
- ``Fault("huge", size=N)``: 200 with a valid completion ``N`` bytes long (its text is
  padding), ``Content-Length`` given; ``Fault("huge-unsized", size=N)``: the same body
  with no ``Content-Length``, ended by closing the connection; ``Fault("gzip", size=N)``:
  the reply gzip-compressed (``Content-Encoding: gzip``), ``N`` bytes once unpacked
  (0: the normal reply).

``every = Fault(...)`` serves that fault to every request once the queue is empty.

``reject_response_format = True`` makes every request carrying
``response_format`` fail with HTTP 400, like servers without structured output.
Every request is recorded (path, headers, JSON body) in ``requests``.

Use it as the ``openai_server`` pytest fixture (tests/conftest.py).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["BOUNDED_FAULTS", "FakeOpenAIServer", "Fault", "RecordedRequest", "completion_payload",
           "mock_reply"]

BOUNDED_FAULTS = ("trickle-headers", "trickle-body", "huge", "huge-unsized", "gzip")
"""The faults a reply's deadline and size limit are for (served by ``_Handler._bounded``)."""


@dataclass(frozen=True)
class Fault:
    """One injected fault (see the module docstring for the kinds)."""

    kind: str
    retry_after: str | None = None
    delay_s: float = 0.0
    size: int = 0
    duration_s: float = 30.0


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    fault: str | None = None
    at: float = field(default_factory=time.monotonic)


def mock_reply(body: dict[str, Any]) -> str:
    """hr's offline mock model on the request (judge rules, document answers)."""
    from hr_core.models.mock import MockModel

    schema = None
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        schema = fmt.get("json_schema", {}).get("schema")
    reply = asyncio.run(MockModel().complete(body.get("messages", []), schema=schema))
    return reply.text


def completion_payload(body: dict[str, Any], text: str) -> dict[str, Any]:
    """The ``chat.completion`` the server answers ``body`` with (``text`` its content;
    usage counts words: the prompt's in, the reply's out)."""
    words_in = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model", "test"),
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": words_in, "completion_tokens": len(text.split()),
                  "total_tokens": words_in + len(text.split())},
    }


class FakeOpenAIServer:
    """The server; start with ``with FakeOpenAIServer() as server: server.url``."""

    handler_class: type[BaseHTTPRequestHandler]
    """The request handler (a subclass serves another API's wire format)."""

    def __init__(self, reply: Callable[[dict[str, Any]], Any] | None = None,
                 port: int = 0) -> None:
        self.reply = reply or mock_reply
        self.port = port  # 0: any free port
        self.reject_response_format = False
        self.every: Fault | None = None
        self.requests: list[RecordedRequest] = []
        self._faults: list[Fault] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- control -----------------------------------------------------------------
    def inject(self, *faults: Fault | str) -> None:
        """Queue faults, served one per request in order."""
        with self._lock:
            self._faults.extend(f if isinstance(f, Fault) else Fault(f) for f in faults)

    @property
    def pending_faults(self) -> int:
        with self._lock:
            return len(self._faults)

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAIServer:
        handler = type("Handler", (self.handler_class,), {"server_state": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next_fault(self) -> Fault | None:
        with self._lock:
            return self._faults.pop(0) if self._faults else self.every

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_state: FakeOpenAIServer

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr
        return

    def do_POST(self) -> None:
        state = self.server_state
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        fault = state._next_fault()
        headers = {k.lower(): v for k, v in self.headers.items()}
        state._record(RecordedRequest(self.path, headers, body, fault.kind if fault else None))
        try:
            self._answer(state, body, fault)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _bounded(self, fault: Fault, payload: dict[str, Any], text: str) -> None:
        """Serve a trickle or huge fault; ``payload`` is a reply whose text is ``@PAD@``."""
        head, tail = json.dumps(payload).encode().split(b"@PAD@")
        self.close_connection = True
        self.wfile.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                         b"connection: close\r\n")
        if fault.kind == "gzip":  # compressed though hr asks for identity (size: unpacked)
            pad = max(0, fault.size - len(head) - len(tail))
            body = head + (b"x" * pad if pad else json.dumps(text).encode()[1:-1]) + tail
            packed = gzip.compress(body)
            self.wfile.write(f"content-encoding: gzip\r\ncontent-length: {len(packed)}"
                             "\r\n\r\n".encode() + packed)
            self.wfile.flush()
            return
        if fault.kind.startswith("huge"):  # a reply fault.size bytes long, 1 MB at a time
            pad = max(0, fault.size - len(head) - len(tail))
            if fault.kind == "huge":
                self.wfile.write(f"content-length: {len(head) + pad + len(tail)}\r\n".encode())
            self.wfile.write(b"\r\n" + head)
            block = b"x" * (1 << 20)
            while pad > 0:
                self.wfile.write(block[:pad])
                pad -= len(block)
            self.wfile.write(tail)
            self.wfile.flush()
            return
        # a header line, or a byte of the body, every delay_s for duration_s
        data = head + json.dumps(text).encode()[1:-1] + tail
        steps = max(1, int(fault.duration_s / max(fault.delay_s, 0.01)))
        if fault.kind == "trickle-headers":
            for step in range(steps):
                self.wfile.write(f"x-trickle-{step}: wait\r\n".encode())
                self.wfile.flush()
                time.sleep(fault.delay_s)
            self.wfile.write(f"content-length: {len(data)}\r\n\r\n".encode() + data)
            return
        self.wfile.write(f"content-length: {len(data) + steps}\r\n\r\n".encode())
        for _ in range(steps):
            self.wfile.write(b" ")
            self.wfile.flush()
            time.sleep(fault.delay_s)
        self.wfile.write(data)

    def _answer(self, state: FakeOpenAIServer, body: Any, fault: Fault | None) -> None:
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._json(404, {"error": {"message": f"no route {self.path}"}})
        if not isinstance(body, dict):
            return self._json(400, {"error": {"message": "body is not a JSON object"}})
        kind = fault.kind if fault else None
        if kind in ("429", "500", "502", "503"):
            headers = {"retry-after": fault.retry_after} if fault and fault.retry_after else {}
            message = "rate limited" if kind == "429" else "server error"
            return self._json(int(kind), {"error": {"message": message, "type": kind}}, headers)
        if kind == "slow" and fault is not None:
            time.sleep(fault.delay_s)
        if kind == "malformed":
            return self._raw(200, b'{"id": "x", "choices": [ {"mess', "application/json")
        if kind == "empty":
            return self._json(200, {"id": "x", "object": "chat.completion"})
        if state.reject_response_format and "response_format" in body:
            return self._json(400, {"error": {
                "message": "response_format is not supported by this server",
                "type": "invalid_request_error", "param": "response_format"}})
        value = state.reply(body)
        if isinstance(value, dict):
            return self._json(200, value)
        text = str(value)
        payload = completion_payload(body, text)
        if kind in BOUNDED_FAULTS and fault is not None:
            payload["choices"][0]["message"]["content"] = "@PAD@"
            return self._bounded(fault, payload, text)
        if kind == "truncated":
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data) + 100))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return None
        return self._json(200, payload)

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._raw(status, json.dumps(payload).encode(), "application/json", headers)

    def _raw(self, status: int, data: bytes, content_type: str,
             headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


FakeOpenAIServer.handler_class = _Handler
