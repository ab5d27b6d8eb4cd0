"""OpenAI's and Azure OpenAI's Batch API through the ``openai`` SDK: a
:class:`~hr_core.models.batch_api.BatchClient`.

:meth:`OpenAIBatchClient.submit` uploads the requests as a JSONL file (``client.files.create``,
``purpose="batch"``; a line per request: ``{custom_id, method: "POST", url: endpoint, body}``)
and creates the batch (``client.batches.create``, ``completion_window="24h"``) with the run's
nonce in its ``metadata`` (``hr_nonce``) and in the file's name (``hr-batch-<tag>.jsonl``,
:func:`~.batch_files.nonce_tag`); :meth:`find` lists the batches (newest first, at most
:data:`~.batch_files.MAX_PAGES` pages) for that nonce, and for a batch of the same size
that kept no metadata (a deployment that drops it) reads its input file's name (at most
100 such lookups). The create call is never retried
(a retry after a lost reply would create a second batch: the engine finds the first by its
nonce); the other calls are retried by the SDK (``max_retries``).

:meth:`outcomes` reads the batch's output file (answers: ``succeeded``; a line whose
``status_code`` is not 200: ``errored`` with the provider's message, but Azure's
``content_filter`` refusal of a prompt is ``succeeded`` with its error body, which the adapter
reads as the live call does: a refusal reply) and error file
(``errored``; ``batch_expired``: ``expired``; ``batch_cancelled``: ``canceled``), then, for
the requests in neither (a cancelled or expired batch leaves its unanswered ones out), the
input file: ``expired`` in an expired batch, ``canceled`` in a cancelled one, ``errored`` with
the batch's reason in a failed one. Files are streamed and read within bounds
(:func:`~.batch_files.jsonl_lines`).

Limits (OpenAI's): 50,000 requests and 200 MB a batch. Azure: the same API under
``{endpoint}/openai/`` with ``api-version``; its endpoint is ``/chat/completions`` and each
body's ``model`` is a global-batch deployment.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Final

from hr_core.models.batch_api import (
    BatchLimits,
    BatchOutcome,
    BatchRequest,
    BatchState,
    BatchStatus,
    OutcomeKind,
)
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
from hr_core.models.providers.openai_wire import describe

__all__ = ["NONCE_KEY", "OPENAI_LIMITS", "OpenAIBatchClient"]

OPENAI_LIMITS: Final = BatchLimits(max_requests=50_000, max_bytes=200_000_000)
"""A batch's limits at OpenAI (and Azure OpenAI): requests and bytes of the input file
("200 MB", read as the smaller 10**6-byte megabytes)."""

NONCE_KEY: Final[str] = "hr_nonce"
"""The batch's metadata key holding the nonce hr recorded before submitting."""

_ENDED = {"completed", "expired", "cancelled", "failed"}
_MAX_FILE_LOOKUPS = 100  # input files find() reads the name of, for batches without metadata
# the outcome of a request left unanswered, by how its batch ended
_LEFT_OUT: dict[str, OutcomeKind] = {"expired": "expired", "cancelled": "canceled"}


class OpenAIBatchClient(PerLoopClient):
    """A :class:`~hr_core.models.batch_api.BatchClient` over ``client.files`` and
    ``client.batches``.

    Args:
        client: makes the SDK's ``AsyncOpenAI`` / ``AsyncAzureOpenAI`` (its HTTP client
            bounded by :func:`~.batch_files.batch_http_client`), one per event loop.
        provider: ``"openai"`` or ``"azure-openai"`` (in messages).
        endpoint: the batch's endpoint (OpenAI: ``/v1/chat/completions``; Azure:
            ``/chat/completions``).
        max_line_bytes: the longest line of a results file read.
        extra_headers: headers sent with every call (or omitted: :func:`omitted_headers`).
        redact: removes the key from a message.
    """

    def __init__(self, client: Callable[[], Any], *, provider: str, endpoint: str,
                 max_line_bytes: int,
                 extra_headers: dict[str, Any] | None = None,
                 redact: Callable[[str], str] = str, limits: BatchLimits = OPENAI_LIMITS,
                 max_pages: int = MAX_PAGES) -> None:
        super().__init__(client)
        self.provider = provider
        self.endpoint = endpoint
        self.limits = limits
        self.max_line_bytes = int(max_line_bytes) + ENVELOPE_BYTES
        self.max_pages = int(max_pages)
        self._headers = dict(extra_headers or {})
        self._redact = redact

    def __repr__(self) -> str:
        return f"OpenAIBatchClient({self.provider!r}, endpoint={self.endpoint!r})"

    def _failed(self, action: str, exc: BaseException) -> BatchCallError:
        return failed_call(f"{self.provider} batch", action, exc, describe, self._redact)

    async def submit(self, requests: Sequence[BatchRequest], nonce: str) -> str:
        lines = [json.dumps({"custom_id": r.custom_id, "method": "POST", "url": self.endpoint,
                             "body": dict(r.body)}, separators=(",", ":"))
                 for r in requests]
        data = "".join(f"{line}\n" for line in lines).encode()
        check_batch(requests, self.limits, len(data), f"{self.provider} batch")
        if not 0 < len(nonce) <= 512:
            raise BatchCallError(f"{self.provider} batch: a nonce is 1 to 512 characters")
        try:
            uploaded = await self._client.files.create(
                file=(_filename(nonce), data, "application/jsonl"), purpose="batch",
                extra_headers=self._headers)
        except Exception as exc:
            raise self._failed("uploading the batch file", exc) from None
        try:  # never retried: a lost reply may hide a created batch (find() sees it)
            batch = await self._client.with_options(max_retries=0).batches.create(
                input_file_id=uploaded.id, endpoint=self.endpoint, completion_window="24h",
                metadata={NONCE_KEY: nonce}, extra_headers=self._headers)
        except Exception as exc:
            raise self._failed("creating the batch", exc) from None
        return str(batch.id)

    async def find(self, nonce: str, custom_ids: Sequence[str]) -> str | None:
        after: str | None = None
        filename = _filename(nonce)
        lookups = _MAX_FILE_LOOKUPS
        for _ in range(self.max_pages):
            try:
                page = await self._client.batches.list(
                    limit=100, extra_headers=self._headers,
                    **({"after": after} if after else {}))
            except Exception as exc:
                raise self._failed("listing batches", exc) from None
            batches = list(page.data or [])
            for batch in batches:
                metadata = batch.metadata or {}
                if metadata.get(NONCE_KEY) == nonce:
                    return str(batch.id)
                total = getattr(batch.request_counts, "total", None)
                if NONCE_KEY in metadata or total != len(custom_ids) or lookups <= 0:
                    continue
                lookups -= 1  # no metadata kept (a deployment without it): the file's name
                if await self._file_name(batch.input_file_id) == filename:
                    return str(batch.id)
            if not page.has_more or not batches or batches[-1].id == after:
                return None
            after = batches[-1].id
        return None

    async def _file_name(self, file_id: str) -> str | None:
        try:
            found = await self._client.files.retrieve(file_id, extra_headers=self._headers)
        except Exception as exc:
            raise self._failed(f"reading file {file_id}", exc) from None
        return getattr(found, "filename", None)

    async def _batch(self, batch_id: str) -> Any:
        try:
            return await self._client.batches.retrieve(batch_id, extra_headers=self._headers)
        except Exception as exc:
            raise self._failed(f"reading batch {batch_id}", exc) from None

    async def status(self, batch_id: str) -> BatchStatus:
        batch = await self._batch(batch_id)
        status = str(batch.status)
        counts = batch.request_counts
        total = int(getattr(counts, "total", 0) or 0)
        done = int(getattr(counts, "completed", 0) or 0)
        failed = int(getattr(counts, "failed", 0) or 0)
        rest = max(0, total - done - failed)
        tally = {"succeeded": done, "errored": failed, "processing": 0, "canceled": 0,
                 "expired": 0}
        if status not in _ENDED:
            tally["processing"] = rest
        elif status in _LEFT_OUT:
            tally[_LEFT_OUT[status]] = rest
        else:
            tally["errored"] += rest
        state: BatchState = "ended" if status in _ENDED else (
            "canceling" if status == "cancelling" else "in_progress")
        return BatchStatus(batch_id, state, tally, _why(batch) if status == "failed" else "")

    async def outcomes(self, batch_id: str) -> AsyncIterator[BatchOutcome]:
        batch = await self._batch(batch_id)
        if batch.status not in _ENDED:
            raise BatchCallError(f"{self.provider} batch {batch_id} has not ended "
                                 f"({batch.status}): no outcomes yet")
        total = int(getattr(batch.request_counts, "total", 0) or 0)
        seen: set[str] = set()
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            async for line in self._lines(file_id, "the results", self.limits.max_requests):
                outcome = _outcome(line)
                if outcome is not None and outcome.custom_id not in seen:
                    seen.add(outcome.custom_id)
                    yield outcome
        if total and len(seen) >= total:
            return
        kind: OutcomeKind = _LEFT_OUT.get(str(batch.status), "errored")
        why = {"expired": "the batch expired before this request ran",
               "canceled": "the batch was cancelled before this request ran"}.get(
            kind, f"no result for this request ({_why(batch)})")
        async for line in self._lines(batch.input_file_id, "the input",  # hr's own lines
                                      self.limits.max_requests, self.limits.max_bytes):
            custom_id = line.get("custom_id")
            if isinstance(custom_id, str) and custom_id not in seen:
                seen.add(custom_id)
                yield BatchOutcome(custom_id, kind, message=why)

    async def _lines(self, file_id: str, what: str, max_lines: int,
                     max_line_bytes: int | None = None) -> AsyncIterator[dict[str, Any]]:
        label = f"{self.provider} batch file {file_id} ({what})"
        try:
            async with self._client.files.with_streaming_response.content(
                    file_id, extra_headers=self._headers) as response:
                async for line in jsonl_lines(response.iter_bytes(),
                                              max_line_bytes=max_line_bytes
                                              or self.max_line_bytes,
                                              max_lines=max_lines, what=label):
                    yield line
        except BatchCallError:
            raise
        except Exception as exc:
            raise self._failed(f"reading {label}", exc) from None

    async def cancel(self, batch_id: str) -> None:
        try:
            await self._client.batches.cancel(batch_id, extra_headers=self._headers)
        except Exception as exc:
            failed = self._failed(f"cancelling batch {batch_id}", exc)
            batch = await self._batch(batch_id)  # refused as it ended meanwhile: done
            if batch.status in _ENDED or batch.status == "cancelling":
                return
            raise failed from None


def _filename(nonce: str) -> str:
    """The uploaded file's name: it names the nonce where a batch's metadata is lost."""
    return f"hr-batch-{nonce_tag(nonce)}.jsonl"


def _why(batch: Any) -> str:
    """The provider's reason a batch ended as it did."""
    errors = getattr(getattr(batch, "errors", None), "data", None) or []
    said = [str(getattr(e, "message", "") or "") for e in errors[:3]]
    said = [s for s in said if s]
    if said:
        return f"the batch {batch.status}: " + "; ".join(s[:300] for s in said)
    return f"the batch {batch.status}"


def _outcome(line: dict[str, Any]) -> BatchOutcome | None:
    """A line of an output or error file as an outcome (``None``: no custom id)."""
    custom_id = line.get("custom_id")
    if not isinstance(custom_id, str):
        return None
    response = line.get("response")
    error = line.get("error")
    if isinstance(response, dict) and response.get("status_code") == 200 \
            and isinstance(response.get("body"), dict):
        return BatchOutcome(custom_id, "succeeded", response["body"])
    if isinstance(error, dict):
        code = error.get("code")
        message = str(error.get("message") or code or "error")[:500]
        if code == "batch_expired":
            return BatchOutcome(custom_id, "expired", message=message)
        if code == "batch_cancelled":
            return BatchOutcome(custom_id, "canceled", message=message)
        return BatchOutcome(custom_id, "errored", message=f"{code}: {message}")
    status = response.get("status_code") if isinstance(response, dict) else None
    body = response.get("body") if isinstance(response, dict) else None
    said = body.get("error") if isinstance(body, dict) else None
    if isinstance(said, dict) and said.get("code") == "content_filter" and isinstance(
            body, dict):  # Azure's filter refused the prompt: an answer (a refusal), as live
        return BatchOutcome(custom_id, "succeeded", body)
    reason = said.get("message") if isinstance(said, dict) else None
    return BatchOutcome(custom_id, "errored",
                        message=f"HTTP {status}: {str(reason or body)[:500]}")
