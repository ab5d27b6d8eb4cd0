"""Every model call bounded in time and size, whatever the server does.

:func:`bounded_client` is the ``httpx2.AsyncClient`` hr gives the providers' SDKs
(``http_client=``): its transport (:class:`BoundedTransport`, wrapping httpx's own)
gives each attempt a wall-clock deadline around the whole exchange (connection,
headers and every byte of the body: a server that trickles a byte or a header line
now and then is cut off at the deadline, which httpx's per-read timeouts never do)
and reads at most ``max_bytes`` of a reply (a ``Content-Length`` above it is refused
before the body is read; a body without one is counted as it arrives and dropped at
the limit). The request asks for an uncompressed reply; a compressed one is
decompressed here, so the limit bounds what the SDK gets, not the bytes on the wire.

Past the deadline the attempt fails with :class:`AttemptDeadline` (an httpx read
timeout, so the SDKs report a timeout and the client retries it as one); a reply over
the limit with :class:`ReplyTooLarge`, which the clients turn into the run's ``error``
without a retry (:func:`bound_failure` finds either in an SDK error's causes).

The bound is a property of the client, not of the process: a later batch path (result
files are not model replies) builds its client without it.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import httpx2._utils as httpx2_utils  # private: read with getattr (a later httpx2 may move it)

from hr_core.models.spec import DEFAULT_MAX_REPLY_BYTES

__all__ = ["DEFAULT_MAX_REPLY_BYTES", "AttemptDeadline", "BoundedTransport", "ReplyTooLarge",
           "bound_failure", "bounded_client", "size_text"]

# as the SDKs' own clients: many connections, redirects followed
_LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=100)
_DECODED = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


def size_text(n: int) -> str:
    """Bytes as people read them: ``4194304`` -> ``'4 MiB'``, ``1500`` -> ``'1500 bytes'``."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % (size // 16) == 0:
            return f"{n / size:g} {unit}"
    return f"{n} bytes"


class AttemptDeadline(httpx2.ReadTimeout):
    """An attempt's reply was not complete within its deadline (``timeout_s``)."""


class ReplyTooLarge(Exception):
    """A reply longer than the limit (``max_reply_bytes``): read no further."""


def bound_failure(exc: BaseException) -> AttemptDeadline | ReplyTooLarge | None:
    """The deadline or size failure behind an SDK's error (its causes), else ``None``."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, AttemptDeadline | ReplyTooLarge):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


class BoundedTransport(httpx2.AsyncBaseTransport):
    """httpx's transport with a deadline per request and a cap on the reply's bytes.

    Args:
        inner: the transport that speaks HTTP (httpx's ``AsyncHTTPTransport``).
        deadline_s: seconds from sending the request to the last byte of its reply.
        max_bytes: the most bytes of a reply body read (decompressed).
    """

    def __init__(self, inner: httpx2.AsyncBaseTransport, deadline_s: float,
                 max_bytes: int) -> None:
        self.inner = inner
        self.deadline_s = float(deadline_s)
        self.max_bytes = int(max_bytes)

    def _late(self) -> AttemptDeadline:
        return AttemptDeadline(f"no complete reply within the attempt's deadline "
                               f"(timeout_s={self.deadline_s:g} s)")

    def _large(self, seen: str) -> ReplyTooLarge:
        return ReplyTooLarge(f"the reply is larger than max_reply_bytes={self.max_bytes} "
                             f"({size_text(self.max_bytes)}; {seen}): not read further")

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        deadline = asyncio.get_running_loop().time() + self.deadline_s
        request.headers["accept-encoding"] = "identity"
        try:
            async with asyncio.timeout_at(deadline):
                response = await self.inner.handle_async_request(request)
        except TimeoutError:
            raise self._late() from None
        headers = response.headers
        declared = headers.get("content-length", "")
        if declared.strip().isdigit() and int(declared) > self.max_bytes:
            await response.aclose()
            raise self._large(f"Content-Length {declared}")
        encoding = headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity") and encoding not in _DECODED:
            await response.aclose()
            raise ReplyTooLarge(f"the reply is {encoding}-encoded, which hr cannot bound "
                                "(it asked for identity); not read")
        wbits = _DECODED.get(encoding)
        if wbits is not None:  # decompressed here, counted as the SDK will see it
            headers = httpx2.Headers([(k, v) for k, v in headers.multi_items()
                                      if k.lower() not in ("content-encoding", "content-length")])
        stream = _BoundedStream(self, response.stream, deadline, wbits)
        return httpx2.Response(response.status_code, headers=headers, stream=stream,
                               extensions=response.extensions, request=request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class _BoundedStream(httpx2.AsyncByteStream):
    """A reply body read until the deadline and at most ``max_bytes`` (decompressed)."""

    def __init__(self, owner: BoundedTransport, inner: Any, deadline: float,
                 wbits: int | None) -> None:
        self.owner = owner
        self.inner = inner
        self.deadline = deadline
        self.decoder = None if wbits is None else zlib.decompressobj(wbits)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        owner, count = self.owner, 0
        chunks = self.inner.__aiter__()
        while True:
            try:
                async with asyncio.timeout_at(self.deadline):
                    chunk = await chunks.__anext__()
            except StopAsyncIteration:
                break
            except TimeoutError:
                raise owner._late() from None
            if self.decoder is not None:
                # at most one byte past the limit comes out of each chunk
                chunk = self.decoder.decompress(chunk, owner.max_bytes - count + 1)
                if self.decoder.unconsumed_tail:
                    raise owner._large("decompressed")
            count += len(chunk)
            if count > owner.max_bytes:
                raise owner._large(f"more than {count} bytes sent")
            if chunk:
                yield chunk
        if self.decoder is not None:
            rest = self.decoder.flush()
            if count + len(rest) > owner.max_bytes:
                raise owner._large("decompressed")
            if rest:
                yield rest

    async def aclose(self) -> None:
        await self.inner.aclose()


def bounded_client(deadline_s: float, max_bytes: int, timeout: float) -> httpx2.AsyncClient:
    """The SDKs' HTTP client: their defaults (connection limits, redirects followed, the
    environment's proxies) with every request bounded by :class:`BoundedTransport`.

    Args:
        deadline_s: each attempt's wall-clock deadline (a model's ``timeout_s``).
        max_bytes: the largest reply body read (``max_reply_bytes``).
        timeout: httpx's per-phase timeout (connect, read, write, pool).
    """
    def bound(proxy: str | None) -> BoundedTransport:
        return BoundedTransport(httpx2.AsyncHTTPTransport(limits=_LIMITS, proxy=proxy),
                                deadline_s, max_bytes)

    mounts: dict[str, httpx2.AsyncBaseTransport | None] = {
        pattern: None if proxy is None else bound(proxy)
        for pattern, proxy in _environment_proxies().items()}
    return httpx2.AsyncClient(transport=bound(None), mounts=mounts, timeout=timeout,
                              limits=_LIMITS, follow_redirects=True)


def _environment_proxies() -> dict[str, str | None]:
    """``HTTP(S)_PROXY`` / ``ALL_PROXY`` / ``NO_PROXY`` as httpx reads them (a client given
    a transport reads none itself)."""
    found = getattr(httpx2_utils, "get_environment_proxies", None)
    return {} if found is None else dict(found())
