"""What the batch adapters (:mod:`.openai_batch`, :mod:`.anthropic_batch`) share: the HTTP
client their SDK gets, a batch's requests checked against the provider's limits, JSONL read
within bounds, and the one-line error of a failed batch call.

A batch's files are not model replies: the client's deadline covers a whole upload or
download (:data:`FILE_DEADLINE_S`) and its size limit a whole results file
(:data:`MAX_FILE_BYTES`); each line is at most ``max_line_bytes`` (a reply's limit plus the
envelope) and a file has at most as many lines as the batch had requests: a server cannot
make hr read without end. Listing batches is bounded by ``max_pages`` pages.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Final

from hr_core.models._bounded import bounded_client, size_text
from hr_core.models.batch_api import CUSTOM_ID, BatchCallError, BatchLimits, BatchRequest

__all__ = ["ENVELOPE_BYTES", "FILE_DEADLINE_S", "MAX_FILE_BYTES", "MAX_PAGES", "BatchCallError",
           "PerLoop", "PerLoopClient", "REQUEST_ENVELOPE", "request_bytes", "split_batches",
           "batch_http_client", "check_batch", "failed_call", "jsonl_lines", "nonce_tag"]

FILE_DEADLINE_S: Final[float] = 1800.0
"""The longest one batch call may take, upload or download included (200 MB at 1 Mbit/s
would not fit: such a link is not a batch client's)."""

MAX_FILE_BYTES: Final[int] = 4 * 1024 ** 3
"""The largest file (results or input) read from a batch API."""

ENVELOPE_BYTES: Final[int] = 64 * 1024
"""What a results line may hold besides the reply (ids, status, error)."""

MAX_PAGES: Final[int] = 100
"""The most pages of batches :meth:`find` lists (newest first) before it gives up."""


class PerLoop:
    """An SDK client per event loop, made on demand by ``make`` (an HTTP client belongs to
    the loop it first ran in: an engine that submits in one ``asyncio.run`` and polls in
    another gets a client in each); :meth:`aclose` closes the running loop's."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary())

    def get(self) -> Any:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = self._make()
        return client

    async def aclose(self) -> None:
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()


class PerLoopClient:
    """A batch client's SDK client, one per event loop (:class:`PerLoop`), and its close."""

    def __init__(self, client: Callable[[], Any]) -> None:
        self._sdk = PerLoop(client)

    @property
    def _client(self) -> Any:
        """The SDK client of the running event loop."""
        return self._sdk.get()

    async def aclose(self) -> None:
        """Close the running event loop's SDK client (another is made on demand)."""
        await self._sdk.aclose()


def nonce_tag(nonce: str) -> str:
    """A short name of a nonce (12 hex characters) for where a provider keeps no metadata:
    Anthropic's custom ids, the name of an uploaded batch file.

    Example:
        >>> nonce_tag("n-1") == nonce_tag("n-1") != nonce_tag("n-2")
        True
    """
    return hashlib.sha256(nonce.encode()).hexdigest()[:12]


def batch_http_client(timeout: float) -> Any:
    """The SDK's HTTP client for batch calls: :func:`bounded_client` with a whole file's
    deadline and size; ``timeout`` is httpx's per-phase timeout (a model's ``timeout_s``)."""
    return bounded_client(FILE_DEADLINE_S, MAX_FILE_BYTES, timeout)


def check_batch(requests: Sequence[BatchRequest], limits: BatchLimits, size: int,
                where: str) -> None:
    """Refuse a batch the provider would: empty, over its limits, or an id it rejects."""
    if not requests:
        raise BatchCallError(f"{where}: a batch needs at least one request")
    if len(requests) > limits.max_requests:
        raise BatchCallError(f"{where}: {len(requests)} requests in one batch; the provider "
                             f"takes at most {limits.max_requests} (split it)")
    if size > limits.max_bytes:
        raise BatchCallError(f"{where}: the batch is {size / 1e6:.1f} MB; the provider "
                             f"takes at most {limits.max_bytes / 1e6:g} MB (split it)")
    seen: set[str] = set()
    for request in requests:
        if not CUSTOM_ID.fullmatch(request.custom_id) or request.custom_id in seen:
            raise BatchCallError(f"{where}: custom_id {request.custom_id[:80]!r} is not "
                                 "[a-zA-Z0-9_-]{1,64} or repeats in the batch")
        seen.add(request.custom_id)


REQUEST_ENVELOPE: Final[int] = 128
"""Bytes a request takes in a batch besides its body and id, at most (an OpenAI JSONL line's
``custom_id``, ``method``, ``url`` and ``body`` keys; Anthropic's ``params`` and the id's tag)."""


def request_bytes(request: BatchRequest) -> int:
    """At most the bytes ``request`` adds to a batch in any provider's format (its body as
    ASCII-escaped JSON, no shorter than the UTF-8 the SDKs send, its id, the envelope)."""
    body = json.dumps(request.body, separators=(",", ":"))
    return len(body) + len(request.custom_id) + REQUEST_ENVELOPE


def split_batches(requests: Sequence[BatchRequest],
                  limits: BatchLimits) -> list[list[BatchRequest]]:
    """``requests`` in order, cut into batches within ``limits`` (requests and bytes, by
    :func:`request_bytes`): each is accepted by :meth:`submit` of any provider's client.

    Example:
        >>> reqs = [BatchRequest(f"r{i}", {"n": i}) for i in range(5)]
        >>> [len(b) for b in split_batches(reqs, BatchLimits(2, 10_000))]
        [2, 2, 1]
    """
    batches: list[list[BatchRequest]] = []
    current: list[BatchRequest] = []
    size = 0
    for request in requests:
        need = request_bytes(request)
        if need > limits.max_bytes:
            raise BatchCallError(f"request {request.custom_id[:80]} is {need / 1e6:.1f} MB "
                                 f"in a batch; the provider takes at most "
                                 f"{limits.max_bytes / 1e6:g} MB a batch")
        if current and (len(current) >= limits.max_requests or size + need > limits.max_bytes):
            batches.append(current)
            current, size = [], 0
        current.append(request)
        size += need
    if current:
        batches.append(current)
    return batches


async def jsonl_lines(chunks: AsyncIterator[bytes], *, max_line_bytes: int, max_lines: int,
                      what: str) -> AsyncIterator[dict[str, Any]]:
    """The JSON objects of a JSONL body, one per line (blank lines skipped), read within
    bounds: a longer line, more lines or a line that is not a JSON object is a
    :class:`BatchCallError` naming ``what`` and the line."""
    buffer = b""
    number = 0

    def parse(line: bytes) -> dict[str, Any] | None:
        nonlocal number
        if not line.strip():
            return None
        number += 1
        if number > max_lines:
            raise BatchCallError(f"{what}: more than {max_lines} lines (the batch's "
                                 "requests): not read further")
        try:
            value = json.loads(line)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            raise BatchCallError(f"{what}: line {number} is not a JSON object")
        return value

    async for chunk in chunks:
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        if len(buffer) > max_line_bytes:
            raise BatchCallError(f"{what}: line {number + 1} is longer than "
                                 f"{size_text(max_line_bytes)}: not read further")
        for line in lines:
            if len(line) > max_line_bytes:
                raise BatchCallError(f"{what}: line {number + 1} is longer than "
                                     f"{size_text(max_line_bytes)}: not read further")
            value = parse(line)
            if value is not None:
                yield value
    value = parse(buffer)
    if value is not None:
        yield value


def failed_call(where: str, action: str, exc: BaseException, describe: Callable[
        [BaseException], str], redact: Callable[[str], str]) -> BatchCallError:
    """The one-line error of a failed batch call (the key never in it)."""
    return BatchCallError(redact(f"{where}: {action} failed: {describe(exc)}"))
