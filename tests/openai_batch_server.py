"""Real HTTP servers on 127.0.0.1 speaking OpenAI's and Azure OpenAI's Batch API, for tests.

Beside the live ``chat/completions`` of tests/openai_server.py and tests/azure_server.py
(still served, and billed at the live rate), each serves what ``client.files`` and
``client.batches`` of the ``openai`` SDK call (shapes from OpenAI's API reference and batch
guide), under ``/v1`` (OpenAI) or ``/openai`` with ``?api-version=`` (Azure):

- ``POST files`` (multipart: ``purpose=batch`` and a JSONL ``file``, its name kept; a file over the
  book's ``max_bytes`` is refused, HTTP 400), ``GET files/{id}``, ``GET files/{id}/content``;
- ``POST batches`` (``input_file_id``, ``endpoint``, ``completion_window``, ``metadata``):
  each line of the input file must be ``{custom_id, method: POST, url: endpoint, body}``
  with unique ids (else the batch is ``failed`` with ``errors.data``, as OpenAI's
  validation says); more than ``max_requests`` lines are refused (HTTP 400);
- ``GET batches`` (``after``, ``limit`` 1..100, newest first, ``has_more``,
  ``first_id``/``last_id``), ``GET batches/{id}`` (a poll: the batch moves on, see
  tests/batch_book.py), ``POST batches/{id}/cancel`` (HTTP 400 once the batch ended).

Status: ``validating`` -> ``in_progress`` -> ``finalizing`` -> ``completed``, or
``expired``, ``cancelling`` -> ``cancelled``, ``failed``. An ended batch has an
``output_file_id`` (``{id, custom_id, response: {status_code: 200, request_id, body}, error:
null}`` per answered request) and, when some failed, an ``error_file_id`` (the same lines
with the error's status and body; an expired request as ``response: null, error: {code:
"batch_expired", ...}``, as OpenAI's guide says, unless ``book.list_expired`` is False); a
cancelled batch's unanswered requests are in neither file. ``request_counts``: ``total``,
``completed``, ``failed``.

Azure: the batch endpoint is ``/chat/completions`` and each body's ``model`` names a
global-batch deployment (``batch_deployments``; another one fails the batch's validation).
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import time
from collections import Counter
from typing import Any
from urllib.parse import parse_qs, urlsplit

from azure_server import FakeAzureServer, _AzureHandler
from batch_book import BatchBook, Job
from openai_server import FakeOpenAIServer, RecordedRequest, _Handler, completion_payload

__all__ = ["FakeAzureBatchServer", "FakeOpenAIBatchServer", "openai_usage"]

_EXPIRED = {"code": "batch_expired",
            "message": "This request could not be executed before the completion window "
                       "expired."}


def openai_usage(response: dict[str, Any]) -> Counter[str]:
    """A chat completion's tokens by kind (cached tokens are a part of the prompt's)."""
    usage = response.get("usage") or {}
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    return Counter(input=usage.get("prompt_tokens") or 0,
                   output=usage.get("completion_tokens") or 0, cache_read=cached)


class FakeOpenAIBatchServer(FakeOpenAIServer):
    """OpenAI's chat completions and Batch API: ``with FakeOpenAIBatchServer() as s:
    AsyncOpenAI(base_url=s.url)``; ``s.book`` holds the controls and counters."""

    endpoint = "/v1/chat/completions"

    def __init__(self, reply: Any = None, port: int = 0) -> None:
        super().__init__(reply, port)
        self.book = BatchBook(self._batch_answer, openai_usage)

    def _batch_answer(self, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
        value = self.reply(body)
        return (value if isinstance(value, dict) else completion_payload(body, str(value))), 200

    def check_body(self, body: dict[str, Any]) -> str | None:
        """Why a request body fails the batch's validation, or None."""
        if not isinstance(body.get("model"), str) or not isinstance(body.get("messages"), list):
            return "each body needs 'model' and 'messages'"
        return None


class FakeAzureBatchServer(FakeAzureServer):
    """Azure OpenAI's chat completions and Batch API (``url``: the resource endpoint).

    Attributes:
        batch_deployments: the global-batch deployments (``None``: any model is one).
    """

    endpoint = "/chat/completions"

    def __init__(self, reply: Any = None, deployments: set[str] | None = None,
                 api_key: str | None = None, token: str | None = None,
                 batch_deployments: set[str] | None = None) -> None:
        super().__init__(reply, deployments, api_key, token)
        self.batch_deployments = batch_deployments
        self.book = BatchBook(self._batch_answer, openai_usage)

    def _batch_answer(self, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
        value = self.reply(body)
        if isinstance(value, dict):
            return value, 200
        payload = completion_payload(body, str(value))
        payload["usage"]["prompt_tokens_details"] = {"cached_tokens": 0}
        return payload, 200

    def check_body(self, body: dict[str, Any]) -> str | None:
        if not isinstance(body.get("model"), str) or not isinstance(body.get("messages"), list):
            return "each body needs 'model' and 'messages'"
        if self.batch_deployments is not None and body["model"] not in self.batch_deployments:
            return (f"The model deployment '{body['model']}' does not exist or is not a "
                    "global batch deployment")
        return None


class _BatchRoutes:
    """The Batch API's routes, mixed into a live server's handler."""

    prefix = "/v1"
    server_state: Any
    path: str
    headers: Any
    rfile: Any

    _json: Any  # the handler's
    _raw: Any

    def _fail(self, status: int, message: str, code: str | None = None) -> None:
        self._json(status, {"error": {"message": message, "type": "invalid_request_error",
                                      "param": None, "code": code}})

    def _allowed(self) -> bool:
        """Azure's checks (api-version, credentials) where they apply."""
        return True

    def _route(self, method: str) -> bool:
        """Serve a Batch API request; False when the path is not one."""
        url = urlsplit(self.path)
        if not url.path.startswith(self.prefix + "/"):
            return False
        parts = url.path[len(self.prefix) + 1:].strip("/").split("/")
        if parts[0] not in ("files", "batches"):
            return False
        state = self.server_state
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        body: Any = None
        if raw and headers.get("content-type", "").startswith("application/json"):
            body = json.loads(raw)
        state._record(RecordedRequest(self.path, headers, body))
        if not self._allowed():
            return True
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        book: BatchBook = state.book
        if parts == ["files"] and method == "POST":
            self._upload(book, headers.get("content-type", ""), raw)
        elif parts[0] == "files" and len(parts) in (2, 3) and method == "GET":
            data = book.files.get(parts[1])
            if data is None:
                self._fail(404, f"No such File object: {parts[1]}")
            elif len(parts) == 3 and parts[2] == "content":
                self._raw(200, data, "application/octet-stream")
            else:
                self._json(200, _file_object(parts[1], data, book.file_names.get(parts[1])))
        elif parts == ["batches"] and method == "POST":
            self._create(book, body if isinstance(body, dict) else {})
        elif parts == ["batches"] and method == "GET":
            self._list(book, query)
        elif parts[0] == "batches" and len(parts) in (2, 3):
            job = book.jobs.get(parts[1])
            if job is None:
                self._fail(404, f"No batch found with id '{parts[1]}'.")
            elif len(parts) == 2 and method == "GET":
                self._json(200, self._batch(book, book.retrieve(job)))
            elif parts[2:] == ["cancel"] and method == "POST" and job.state == "ended":
                self._fail(400, f"Cannot cancel a batch with status '{job.end}'.")
            elif parts[2:] == ["cancel"] and method == "POST":
                self._json(200, self._batch(book, book.cancel(job)))
            else:
                self._fail(404, f"no route {method} {url.path}")
        else:
            self._fail(404, f"no route {method} {url.path}")
        return True

    def _upload(self, book: BatchBook, content_type: str, raw: bytes) -> None:
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"content-type: {content_type}\r\n\r\n".encode() + raw)
        fields: dict[str, bytes] = {}
        filename = "upload.jsonl"
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            fields[str(name)] = part.get_payload(decode=True) or b""
            if name == "file":
                filename = part.get_filename() or filename
        if fields.get("purpose") != b"batch" or "file" not in fields:
            return self._fail(400, "a batch file needs purpose=batch and a file")
        data = fields["file"]
        if len(data) > book.max_bytes:
            book.refused += 1
            return self._fail(400, f"File is too large: {len(data)} bytes, the maximum for "
                              f"a batch is {book.max_bytes}")
        file_id = book.new_id("file-")
        with book.lock:
            book.files[file_id] = data
            book.file_names[file_id] = filename
        self._json(200, _file_object(file_id, data, filename))

    def _create(self, book: BatchBook, body: dict[str, Any]) -> None:
        data = book.files.get(str(body.get("input_file_id")))
        if data is None:
            return self._fail(400, f"No such File object: {body.get('input_file_id')}")
        endpoint = self.server_state.endpoint
        if body.get("endpoint") != endpoint or body.get("completion_window") != "24h":
            return self._fail(400, f"endpoint must be {endpoint} and completion_window 24h")
        lines = [line for line in data.splitlines() if line.strip()]
        why = book.refusal(len(lines), len(data))
        if why is not None:
            return self._fail(400, why, "batch_too_large")
        requests: list[tuple[str, dict[str, Any]]] = []
        errors: list[dict[str, Any]] = []
        seen: set[str] = set()
        for number, line in enumerate(lines, 1):
            try:
                item = json.loads(line)
            except ValueError:
                item = None
            problem = None
            if not isinstance(item, dict) or not isinstance(item.get("body"), dict):
                problem = "not a JSON object with a body"
            elif item.get("method") != "POST" or item.get("url") != endpoint:
                problem = f"method must be POST and url {endpoint}"
            elif not isinstance(item.get("custom_id"), str) or item["custom_id"] in seen:
                problem = "custom_id must be a string unique in the file"
            else:
                problem = self.server_state.check_body(item["body"])
            if problem is not None:
                errors.append({"code": "invalid_request", "message": problem, "param": None,
                               "line": number})
                continue
            seen.add(item["custom_id"])
            requests.append((item["custom_id"], item["body"]))
        metadata = (body.get("metadata") or {}) if book.keep_metadata else {}
        job = book.create("batch_", requests, metadata, input_file_id=body["input_file_id"],
                          endpoint=endpoint)
        if errors:
            book.fail_batch(job, errors[0]["message"])
            job.extra["errors"] = errors
        if book.lose_reply():  # created, but the client never hears of it
            self.close_connection = True
            return None
        self._json(200, self._batch(book, job))

    def _list(self, book: BatchBook, query: dict[str, str]) -> None:
        jobs = book.listed()
        try:
            limit = int(query.get("limit", "20"))
        except ValueError:
            limit = 0
        if not 1 <= limit <= 100:
            return self._fail(400, "limit must be between 1 and 100")
        after = query.get("after")
        if after is not None:
            ids = [j.id for j in jobs]
            jobs = jobs[ids.index(after) + 1:] if after in ids else []
        page = [self._batch(book, j) for j in jobs[:limit]]
        self._json(200, {"object": "list", "data": page,
                         "first_id": page[0]["id"] if page else None,
                         "last_id": page[-1]["id"] if page else None,
                         "has_more": len(jobs) > limit})

    def _batch(self, book: BatchBook, job: Job) -> dict[str, Any]:
        """The batch object as OpenAI shows it (its files written once it ended)."""
        with book.lock:
            if job.state == "ended" and "output_file_id" not in job.extra:
                _write_results(book, job)
            counts = job.counts()
            status = job.end if job.state == "ended" else job.state
            now = int(time.time())
            errors = job.extra.get("errors")
            return {
                "id": job.id, "object": "batch", "endpoint": job.extra["endpoint"],
                "errors": {"object": "list", "data": errors} if errors else None,
                "input_file_id": job.extra["input_file_id"], "completion_window": "24h",
                "status": status, "output_file_id": job.extra.get("output_file_id"),
                "error_file_id": job.extra.get("error_file_id"),
                "created_at": job.created_at, "in_progress_at": job.created_at,
                "expires_at": job.created_at + 86400,
                "finalizing_at": now if status in ("finalizing", "completed") else None,
                "completed_at": now if status == "completed" else None,
                "failed_at": now if status == "failed" else None,
                "expired_at": now if status == "expired" else None,
                "cancelling_at": now if status in ("cancelling", "cancelled") else None,
                "cancelled_at": now if status == "cancelled" else None,
                "request_counts": {"total": len(job.requests), "completed": counts["succeeded"],
                                   "failed": counts["errored"]},
                "metadata": job.metadata or None,
            }


def _write_results(book: BatchBook, job: Job) -> None:
    output: list[str] = []
    failed: list[str] = []
    for custom_id, _ in job.requests:
        answer = job.answers.get(custom_id)
        if answer is None or answer.kind == "canceled" or (
                answer.kind == "expired" and not book.list_expired):
            continue  # never answered: in neither file
        line: dict[str, Any] = {"id": book.new_id("batch_req_"), "custom_id": custom_id,
                                "response": None, "error": None}
        if answer.kind == "expired":
            line["error"] = dict(_EXPIRED)
        else:
            line["response"] = {"status_code": answer.status,
                                "request_id": book.new_id("req_"), "body": answer.payload}
        (output if answer.kind == "succeeded" else failed).append(json.dumps(line))
    if job.end != "failed" or output:
        job.extra["output_file_id"] = file_id = book.new_id("file-")
        book.files[file_id] = "".join(f"{line}\n" for line in output).encode()
    else:
        job.extra["output_file_id"] = None
    if failed:
        job.extra["error_file_id"] = file_id = book.new_id("file-")
        book.files[file_id] = "".join(f"{line}\n" for line in failed).encode()


def _file_object(file_id: str, data: bytes, filename: str | None) -> dict[str, Any]:
    return {"id": file_id, "object": "file", "bytes": len(data),
            "created_at": int(time.time()), "filename": filename or "batch_output.jsonl",
            "purpose": "batch",
            "status": "processed", "expires_at": None, "status_details": None}


class _OpenAIBatchHandler(_BatchRoutes, _Handler):
    server_state: FakeOpenAIBatchServer  # type: ignore[assignment]

    def do_GET(self) -> None:
        if not self._route("GET"):
            self._fail(404, f"no route GET {self.path}")

    def do_POST(self) -> None:
        if not self._route("POST"):
            super().do_POST()

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        if status == 200 and isinstance(payload, dict) and payload.get("object") == \
                "chat.completion" and self.path.split("?")[0].endswith("/chat/completions"):
            self.server_state.book.bill("live", payload)
        _Handler._json(self, status, payload, headers)


class _AzureBatchHandler(_BatchRoutes, _AzureHandler):
    prefix = "/openai"
    server_state: FakeAzureBatchServer  # type: ignore[assignment]

    def do_GET(self) -> None:
        if not self._route("GET"):
            self._error(404, "404", "Resource not found")

    def do_POST(self) -> None:
        if not self._route("POST"):
            super().do_POST()

    def _allowed(self) -> bool:
        query = parse_qs(urlsplit(self.path).query)
        if not query.get("api-version"):
            self._error(400, "MissingApiVersionParameter", "The api-version query parameter "
                        "(?api-version=) is required for all requests.")
            return False
        headers = {k.lower(): v for k, v in self.headers.items()}
        if not self._authorised(self.server_state, headers):
            self._error(401, "401", "Access denied due to invalid subscription key or wrong "
                        "API endpoint.")
            return False
        return True

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        if status == 200 and isinstance(payload, dict) and payload.get("object") == \
                "chat.completion" and "/chat/completions" in self.path \
                and "/deployments/" in self.path:
            self.server_state.book.bill("live", payload)
        _Handler._json(self, status, payload, headers)


FakeOpenAIBatchServer.handler_class = _OpenAIBatchHandler
FakeAzureBatchServer.handler_class = _AzureBatchHandler
