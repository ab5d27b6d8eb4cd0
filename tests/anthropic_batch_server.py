"""A real HTTP server on 127.0.0.1 speaking Anthropic's Message Batches API, for tests.

Beside the live ``POST /v1/messages`` of tests/anthropic_server.py (still served, and
billed at the live rate), it serves what ``client.messages.batches`` of the ``anthropic``
SDK calls (shapes from Anthropic's API reference and batch-processing guide):

- ``POST /v1/messages/batches`` (``{requests: [{custom_id, params}]}``): each
  ``custom_id`` must match ``^[a-zA-Z0-9_-]{1,64}$`` and be unique, each ``params`` a
  Messages API body (the live server's checks; a bad one is that request's
  ``invalid_request_error`` once the batch runs); more than the book's ``max_requests``
  requests (HTTP 400) or a body over ``max_bytes`` (HTTP 413 ``request_too_large``) are
  refused;
- ``GET /v1/messages/batches`` (``limit`` 1..1000 default 20, ``after_id`` / ``before_id``,
  newest first, ``has_more``, ``first_id``/``last_id``);
- ``GET /v1/messages/batches/{id}`` (a poll: the batch moves on, see tests/batch_book.py;
  ``results_url`` once it ended), ``POST /v1/messages/batches/{id}/cancel``;
- ``GET /v1/messages/batches/{id}/results``: JSONL, one ``{custom_id, result}`` per request,
  ``result.type`` ``succeeded`` (``message``), ``errored`` (``error``: an error body),
  ``canceled`` or ``expired``; HTTP 400 before the batch ended.

``processing_status``: ``in_progress``, ``canceling``, ``ended``; ``request_counts``:
``processing``, ``succeeded``, ``errored``, ``canceled``, ``expired``. The key is checked
on every route as on ``/v1/messages`` (``api_key``; ``anthropic-version`` required).
``results_host`` (default: this server) is where ``results_url`` points.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import Counter
from typing import Any
from urllib.parse import parse_qs, urlsplit

from anthropic_server import (
    FakeAnthropicServer,
    _AnthropicHandler,
    error_body,
    invalid,
    reply_message,
)
from batch_book import BatchBook, Job
from openai_server import RecordedRequest

__all__ = ["FakeAnthropicBatchServer", "anthropic_usage"]

_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def anthropic_usage(message: dict[str, Any]) -> Counter[str]:
    """A message's tokens by kind (``input`` counts cached ones too, as hr's usage does)."""
    usage = message.get("usage") or {}
    written = usage.get("cache_creation_input_tokens") or 0
    read = usage.get("cache_read_input_tokens") or 0
    return Counter(input=(usage.get("input_tokens") or 0) + written + read,
                   output=usage.get("output_tokens") or 0, cache_read=read,
                   cache_write=written)


class FakeAnthropicBatchServer(FakeAnthropicServer):
    """The Messages API and Message Batches: ``with FakeAnthropicBatchServer() as s:
    AsyncAnthropic(base_url=s.url)``; ``s.book`` holds the controls and counters."""

    def __init__(self, reply: Any = None, api_key: str | None = None) -> None:
        super().__init__(reply, api_key)
        self.book = BatchBook(self._batch_answer, anthropic_usage)
        self.book.max_requests = 100_000
        self.book.max_bytes = 256 * 1_000_000
        self.results_host: str | None = None

    def _batch_answer(self, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
        problem = invalid(body)
        if problem is not None:
            return error_body(400, problem), 400
        return reply_message(body, self.reply(body), self.cache_tokens), 200


def _time(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat().replace("+00:00", "Z")


class _AnthropicBatchHandler(_AnthropicHandler):
    server_state: FakeAnthropicBatchServer

    def do_GET(self) -> None:
        if not self._route("GET"):
            self._error(404, f"Not Found: {self.path}")

    def do_POST(self) -> None:
        if not self._route("POST"):
            super().do_POST()

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        if status == 200 and isinstance(payload, dict) and payload.get("type") == "message" \
                and self.path.split("?")[0].rstrip("/") == "/v1/messages":
            self.server_state.book.bill("live", payload)
        super()._json(status, payload, headers)

    def _route(self, method: str) -> bool:
        url = urlsplit(self.path)
        if not url.path.startswith("/v1/messages/batches"):
            return False
        state = self.server_state
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        state._record(RecordedRequest(self.path, headers, body))
        if state.api_key is not None and headers.get("x-api-key") != state.api_key:
            self._error(401, "invalid x-api-key")
            return True
        if "anthropic-version" not in headers:
            self._error(400, "anthropic-version: header is required")
            return True
        book = state.book
        parts = url.path.strip("/").split("/")[3:]  # after v1/messages/batches
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        if not parts and method == "POST":
            self._create(book, body, len(raw))
        elif not parts and method == "GET":
            self._list(book, query)
        else:
            job = book.jobs.get(parts[0])
            if job is None:
                self._json(404, {"type": "error", "error": {
                    "type": "not_found_error", "message": f"batch {parts[0]} not found"}})
            elif len(parts) == 1 and method == "GET":
                self._json(200, self._batch(book.retrieve(job)))
            elif parts[1:] == ["cancel"] and method == "POST":
                self._json(200, self._batch(book.cancel(job)))
            elif parts[1:] == ["results"] and method == "GET":
                self._results(job)
            else:
                self._error(404, f"Not Found: {url.path}")
        return True

    def _create(self, book: BatchBook, body: Any, size: int) -> None:
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list) or not requests:
            return self._error(400, "requests: Field required")
        if size > book.max_bytes:
            book.refused += 1
            return self._json(413, {"type": "error", "error": {
                "type": "request_too_large",
                "message": f"Request exceeds the maximum allowed number of bytes "
                           f"({book.max_bytes})."}})
        why = book.refusal(len(requests), size)
        if why is not None:
            return self._error(400, f"requests: {why}")
        seen: set[str] = set()
        for i, item in enumerate(requests):
            custom_id = item.get("custom_id") if isinstance(item, dict) else None
            if not isinstance(custom_id, str) or not _CUSTOM_ID.match(custom_id):
                return self._error(400, f"requests.{i}.custom_id: String should match "
                                   "pattern '^[a-zA-Z0-9_-]{1,64}$'")
            if custom_id in seen:
                return self._error(400, f"requests.{i}.custom_id: duplicate custom_id "
                                   f"{custom_id!r}")
            if not isinstance(item.get("params"), dict):
                return self._error(400, f"requests.{i}.params: Field required")
            seen.add(custom_id)
        job = book.create("msgbatch_", [(r["custom_id"], r["params"]) for r in requests])
        job.state = "in_progress"  # Anthropic's batches start processing at once
        if book.lose_reply():  # created, but the client never hears of it
            self.close_connection = True
            return None
        self._json(200, self._batch(job))

    def _list(self, book: BatchBook, query: dict[str, str]) -> None:
        jobs = book.listed()
        try:
            limit = int(query.get("limit", "20"))
        except ValueError:
            limit = 0
        if not 1 <= limit <= 1000:
            return self._error(400, "limit: Input should be between 1 and 1000")
        ids = [j.id for j in jobs]
        if "after_id" in query:
            after = query["after_id"]
            jobs = jobs[ids.index(after) + 1:] if after in ids else []
            page, more = jobs[:limit], len(jobs) > limit
        elif "before_id" in query:
            before = query["before_id"]
            jobs = jobs[:ids.index(before)] if before in ids else []
            page, more = jobs[-limit:], len(jobs) > limit
        else:
            page, more = jobs[:limit], len(jobs) > limit
        data = [self._batch(j) for j in page]
        self._json(200, {"data": data, "has_more": more,
                         "first_id": data[0]["id"] if data else None,
                         "last_id": data[-1]["id"] if data else None})

    def _batch(self, job: Job) -> dict[str, Any]:
        state = self.server_state
        with state.book.lock:
            counts = job.counts()
            status = {"ended": "ended", "cancelling": "canceling"}.get(job.state, "in_progress")
            host = state.results_host or state.url
            return {
                "id": job.id, "type": "message_batch", "processing_status": status,
                "request_counts": {k: counts[k] for k in (
                    "processing", "succeeded", "errored", "canceled", "expired")},
                "created_at": _time(job.created_at),
                "expires_at": _time(job.created_at + 86400),
                "ended_at": _time(job.created_at) if status == "ended" else None,
                "cancel_initiated_at": _time(job.created_at)
                if job.end == "cancelled" or status == "canceling" else None,
                "archived_at": None,
                "results_url": f"{host}/v1/messages/batches/{job.id}/results"
                if status == "ended" else None,
            }

    def _results(self, job: Job) -> None:
        book = self.server_state.book
        with book.lock:
            if job.state != "ended":
                return self._error(400, f"batch {job.id} is still processing: its results "
                                   "are not available yet")
            lines = []
            for custom_id, _ in job.requests:
                answer = job.answers[custom_id]
                result: dict[str, Any] = {"type": answer.kind}
                if answer.kind == "succeeded":
                    result["message"] = answer.payload
                elif answer.kind == "errored":
                    payload = answer.payload or {}
                    result["error"] = payload if payload.get("type") == "error" else \
                        error_body(answer.status, str((payload.get("error") or {}).get(
                            "message", "error")))
                lines.append(json.dumps({"custom_id": custom_id, "result": result}))
        self._raw(200, "".join(f"{line}\n" for line in lines).encode(),
                  "application/binary", self._limits())


FakeAnthropicBatchServer.handler_class = _AnthropicBatchHandler
