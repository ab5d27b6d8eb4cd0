"""Anthropic's Message Batches through the ``anthropic`` SDK (``client.messages.batches``): a
:class:`~hr_core.models.batch_api.BatchClient`.

Anthropic keeps no metadata on a batch, so hr makes its requests' ids say whose they are:
each ``custom_id`` is sent as ``<tag>_<custom_id>``, the tag a hash of the run's nonce
(:func:`~.batch_files.nonce_tag`, 12 characters; the engine's ids may be up to 51), and read back
without it. :meth:`AnthropicBatchClient.find` lists the batches (newest first, at most
:data:`~.batch_files.MAX_PAGES` pages) holding as many requests as were recorded and reads
the first result of each ended one: the tag says whether it is this nonce's. Anthropic shows
a batch's requests only once it has ended, so a batch of that size still processing may be
the one sought: ``find`` then raises rather than answer ``None`` (a second submission would
pay twice), saying to run again once it has ended. The create call is never retried (the
engine finds a batch whose reply was lost); the other calls are retried by the SDK.

:meth:`outcomes` streams the results (JSONL: ``succeeded`` with the message, ``errored`` with
the error body, ``canceled``, ``expired``) from the batch's ``results_url``, read within
bounds, and only from the endpoint's own host (the key goes nowhere else).

Limits (Anthropic's): 100,000 requests and 256 MB a batch.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from typing import Any, Final, cast
from urllib.parse import urlsplit

import httpx2

from hr_core.models.batch_api import BatchLimits, BatchOutcome, BatchRequest, BatchStatus
from hr_core.models.providers.anthropic_wire import describe
from hr_core.models.providers.batch_files import (
    ENVELOPE_BYTES,
    MAX_PAGES,
    BatchCallError,
    PerLoopClient,
    check_batch,
    failed_call,
    jsonl_lines,
    nonce_tag,
)

__all__ = ["ANTHROPIC_LIMITS", "AnthropicBatchClient"]

ANTHROPIC_LIMITS: Final = BatchLimits(max_requests=100_000, max_bytes=256_000_000)
"""A batch's limits at Anthropic: requests and bytes of the create request ("256 MB", read
as the smaller 10**6-byte megabytes)."""

_KINDS = ("succeeded", "errored", "canceled", "expired")


class AnthropicBatchClient(PerLoopClient):
    """A :class:`~hr_core.models.batch_api.BatchClient` over ``client.messages.batches``.

    Args:
        client: makes the SDK's ``AsyncAnthropic`` (its HTTP client bounded by
            :func:`~.batch_files.batch_http_client`), one per event loop.
        base_url: the endpoint (results are read from its host only).
        max_line_bytes: the longest result line read (a reply's limit; plus the envelope).
        redact: removes the key from a message.
    """

    provider = "anthropic"

    def __init__(self, client: Callable[[], Any], *, base_url: str, max_line_bytes: int,
                 redact: Callable[[str], str] = str, limits: BatchLimits = ANTHROPIC_LIMITS,
                 max_pages: int = MAX_PAGES) -> None:
        super().__init__(client)
        self.base_url = base_url.rstrip("/")
        self.limits = limits
        self.max_line_bytes = int(max_line_bytes) + ENVELOPE_BYTES
        self.max_pages = int(max_pages)
        self._redact = redact

    def __repr__(self) -> str:
        return f"AnthropicBatchClient(base_url={self.base_url!r})"

    def _failed(self, action: str, exc: BaseException) -> BatchCallError:
        return failed_call("anthropic batch", action, exc, describe, self._redact)

    async def submit(self, requests: Sequence[BatchRequest], nonce: str) -> str:
        tag = nonce_tag(nonce)
        sent = [BatchRequest(f"{tag}_{r.custom_id}", r.body) for r in requests]
        # the create request's size: each request's body plus its id and the envelope
        size = sum(len(_json(r.body)) + len(r.custom_id) + 32 for r in sent)
        check_batch(sent, self.limits, size, "anthropic batch")
        try:  # never retried: a lost reply may hide a created batch (find() sees it)
            batch = await self._client.with_options(max_retries=0).messages.batches.create(
                requests=cast(Any, [{"custom_id": r.custom_id, "params": dict(r.body)}
                                    for r in sent]))
        except Exception as exc:
            raise self._failed("creating the batch", exc) from None
        return str(batch.id)

    async def find(self, nonce: str, custom_ids: Sequence[str]) -> str | None:
        tag = f"{nonce_tag(nonce)}_"
        processing: list[str] = []
        after: str | None = None
        for _ in range(self.max_pages):
            try:
                page = await self._client.messages.batches.list(
                    limit=100, **({"after_id": after} if after else {}))
            except Exception as exc:
                raise self._failed("listing batches", exc) from None
            batches = list(page.data or [])
            for batch in batches:
                if _total(batch.request_counts) != len(custom_ids):
                    continue
                if batch.processing_status != "ended":
                    processing.append(str(batch.id))
                    continue
                if await self._tagged(str(batch.id), tag):
                    return str(batch.id)
            last = page.last_id or (batches[-1].id if batches else None)
            if not page.has_more or not batches or last == after:
                break
            after = last
        if processing:
            raise BatchCallError(
                f"anthropic batch: batch {processing[0]} ({len(custom_ids)} requests, still "
                "processing) may be the one this run submitted before it stopped; Anthropic "
                "shows a batch's requests only once it has ended: run again when it has "
                "(nothing is submitted twice meanwhile)")
        return None

    async def _tagged(self, batch_id: str, tag: str) -> bool:
        """Whether the batch's first result carries ``tag`` (only that line is read)."""
        lines = self._results(batch_id, 1)
        try:
            async for line in lines:
                return str(line.get("custom_id", "")).startswith(tag)
            return False
        finally:
            await lines.aclose()

    async def _batch(self, batch_id: str) -> Any:
        try:
            return await self._client.messages.batches.retrieve(batch_id)
        except Exception as exc:
            raise self._failed(f"reading batch {batch_id}", exc) from None

    async def status(self, batch_id: str) -> BatchStatus:
        batch = await self._batch(batch_id)
        counts = batch.request_counts
        tally = {k: int(getattr(counts, k, 0) or 0) for k in ("processing", *_KINDS)}
        state = str(batch.processing_status)
        if state not in ("in_progress", "canceling", "ended"):
            state = "in_progress"
        return BatchStatus(batch_id, cast(Any, state), tally)

    async def outcomes(self, batch_id: str) -> AsyncIterator[BatchOutcome]:
        async for line in self._results(batch_id, self.limits.max_requests):
            outcome = _outcome(line)
            if outcome is not None:
                yield outcome

    async def _results(self, batch_id: str,
                       max_lines: int) -> AsyncGenerator[dict[str, Any], None]:
        """The batch's result lines (at most ``max_lines`` read), from its own host."""

        batch = await self._batch(batch_id)
        if batch.processing_status != "ended" or not batch.results_url:
            raise BatchCallError(f"anthropic batch {batch_id} has not ended "
                                 f"({batch.processing_status}): no results yet")
        url, base = urlsplit(str(batch.results_url)), urlsplit(self.base_url)
        if url.scheme and (url.scheme, url.netloc) != (base.scheme, base.netloc):
            raise BatchCallError(f"anthropic batch {batch_id}: its results_url is on another "
                                 f"host than {base.netloc} (not read: the key goes only there)")
        path = url.path + (f"?{url.query}" if url.query else "")
        label = f"anthropic batch {batch_id} results"
        try:
            response = await self._client.get(
                path, cast_to=httpx2.Response, stream=True,
                options={"headers": {"Accept": "application/binary"}})
        except Exception as exc:
            raise self._failed(f"reading {label}", exc) from None
        try:
            async for line in jsonl_lines(response.aiter_bytes(),
                                          max_line_bytes=self.max_line_bytes,
                                          max_lines=max_lines, what=label):
                yield line
        except BatchCallError:
            raise
        except Exception as exc:
            raise self._failed(f"reading {label}", exc) from None
        finally:
            await response.aclose()

    async def cancel(self, batch_id: str) -> None:
        try:
            await self._client.messages.batches.cancel(batch_id)
        except Exception as exc:
            failed = self._failed(f"cancelling batch {batch_id}", exc)
            batch = await self._batch(batch_id)  # refused as it ended meanwhile: done
            if batch.processing_status != "in_progress":
                return
            raise failed from None


def _total(counts: Any) -> int:
    return sum(int(getattr(counts, k, 0) or 0) for k in ("processing", *_KINDS))


def _json(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


def _outcome(line: dict[str, Any]) -> BatchOutcome | None:
    """A result line as an outcome under the engine's custom id (the tag taken off)."""
    sent = line.get("custom_id")
    result = line.get("result")
    if not isinstance(sent, str) or not isinstance(result, dict):
        return None
    custom_id = sent.split("_", 1)[1] if "_" in sent else sent
    kind = result.get("type")
    if kind == "succeeded" and isinstance(result.get("message"), dict):
        return BatchOutcome(custom_id, "succeeded", result["message"])
    if kind in ("canceled", "expired"):
        return BatchOutcome(custom_id, kind, message=f"the batch's request was {kind}")
    error = result.get("error")
    inner = error.get("error") if isinstance(error, dict) else None
    if isinstance(inner, dict):
        message = f"{inner.get('type', 'error')}: {str(inner.get('message', ''))[:500]}"
    else:
        message = f"no result for this request ({str(result)[:200]})"
    return BatchOutcome(custom_id, "errored", message=message)
