"""The provider side of a batch API: what hr asks of OpenAI's, Azure's and Anthropic's.

A batch client submits a list of request bodies, each under an opaque ``custom_id``
(``[a-zA-Z0-9_-]{1,64}``: Anthropic's rule, which OpenAI's ids also satisfy), finds a
batch again after a crash by the nonce hr recorded before submitting, reports its
request counts, streams its per-request outcomes and cancels it. Each provider's
adapter speaks through its own SDK (``client.files`` + ``client.batches``;
``client.messages.batches``); the engine that records intents, polls and journals is
provider-independent and talks only to :class:`BatchClient`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from hr_core.models.base import ModelCallError

__all__ = [
    "CUSTOM_ID",
    "BatchCallError",
    "BatchClient",
    "BatchLimits",
    "BatchOutcome",
    "BatchRequest",
    "BatchState",
    "BatchStatus",
    "OutcomeKind",
]

CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""A request's id inside a batch (Anthropic's rule; OpenAI's is looser)."""

OutcomeKind = Literal["succeeded", "errored", "canceled", "expired"]
"""One request's end in a batch (Anthropic's four result types; OpenAI's error file
and expired/cancelled batches map onto them)."""

BatchState = Literal["in_progress", "ended", "canceling"]
"""A batch's state, normalised: ``ended`` covers OpenAI's completed, expired,
cancelled and failed, and Anthropic's ``ended``; its outcomes are then final."""


class BatchCallError(ModelCallError):
    """A batch API call failed (the message says which, and the provider's words)."""


@dataclass(frozen=True)
class BatchLimits:
    """Where a provider splits a batch: requests and bytes of the uploaded file."""

    max_requests: int
    max_bytes: int


@dataclass(frozen=True)
class BatchRequest:
    """One request of a batch: its opaque id and the provider's request body (the
    same body the live call would send, no secret in it)."""

    custom_id: str
    body: Mapping[str, Any]


@dataclass(frozen=True)
class BatchStatus:
    """A batch as the provider reports it: state and request counts by kind
    (``processing``, ``succeeded``, ``errored``, ``canceled``, ``expired``)."""

    batch_id: str
    state: BatchState
    counts: Mapping[str, int] = field(default_factory=dict)
    message: str = ""  # the provider's reason when the whole batch failed


@dataclass(frozen=True)
class BatchOutcome:
    """One request's result: ``response`` is the provider's response body (a chat
    completion or a message, read by the same wire reader as a live reply) when it
    succeeded; otherwise ``message`` is the provider's error text."""

    custom_id: str
    kind: OutcomeKind
    response: Mapping[str, Any] | None = None
    message: str = ""


@runtime_checkable
class BatchClient(Protocol):
    """A provider's batch API, through its SDK."""

    provider: str
    limits: BatchLimits

    async def submit(self, requests: Sequence[BatchRequest], nonce: str) -> str:
        """Create one batch of ``requests`` (within :attr:`limits`) and return its id.
        The nonce goes where the provider keeps it (OpenAI: the batch's metadata)."""
        ...

    async def find(self, nonce: str, custom_ids: Sequence[str]) -> str | None:
        """The id of a batch created with this nonce (or, where the provider keeps no
        metadata, holding exactly these custom ids), or ``None``: the reconciliation
        after a crash between the create call and hr's record of its id."""
        ...

    async def status(self, batch_id: str) -> BatchStatus:
        """The batch's state and request counts."""
        ...

    def outcomes(self, batch_id: str) -> AsyncIterator[BatchOutcome]:
        """Each request's outcome, once the batch has ended (requests never answered
        come as ``expired`` or ``canceled``)."""
        ...

    async def cancel(self, batch_id: str) -> None:
        """Ask the provider to cancel the batch (its finished requests stay billed)."""
        ...

    async def aclose(self) -> None:
        """Close the HTTP client."""
        ...
