"""An in-memory fake batch provider for the batch engine's tests (named as a fake).

:class:`FakeBatchServer` is the provider's side: batches created (with the nonce as
OpenAI keeps it in metadata), their status after a number of polls, each request
answered by hr's deterministic mock model (:class:`~hr_core.models.mock.MockModel`)
unless ``fate`` says errored/expired; its counters are what the tests check (batches
created, each custom id's submissions). :class:`FakeBatchAdapter` is the duck-typed
adapter ``hr_core.models.batching`` gives for a real provider; it is registered for
the ``mock`` provider with :func:`use_fake_batches`. The real wire formats are tested
against the HTTP servers of ``tests/*_server.py``.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hr_core.models import Price
from hr_core.models.base import ModelCallError, ModelReply
from hr_core.models.batch_api import (
    BatchLimits,
    BatchOutcome,
    BatchRequest,
    BatchStatus,
)
from hr_core.models.mock import MockModel
from hr_core.results import Usage
from hr_core.run.batch.adapters import ADAPTERS, register_adapter

LIVE_PRICE = Price(1.0, 2.0)


@dataclass
class FakeBatch:
    batch_id: str
    nonce: str
    requests: list[BatchRequest]
    polls_left: int
    canceled: bool = False
    outcomes: list[BatchOutcome] = field(default_factory=list)


class CrashAfterCreate(Exception):
    """The fake's stand-in for a kill at one moment of a batch's life (by default between
    the create call and hr's record of it)."""


class FakeBatchServer:
    """The fake provider: batches, counters, fates."""

    def __init__(self, limits: BatchLimits | None = None, polls: int = 2,
                 fate: Callable[[Mapping[str, Any]], str] | None = None) -> None:
        self.limits = limits or BatchLimits(max_requests=50_000, max_bytes=200 << 20)
        self.polls = polls
        self.fate = fate or (lambda body: "succeeded")
        self.batches: dict[str, FakeBatch] = {}
        self.submissions: Counter[str] = Counter()  # request key -> times submitted
        self.billed_tokens = 0
        self.crash_next_create = False
        self.crash_before_create = False
        self.crash_status = False
        self.crash_outcomes_after: int | None = None
        self.status_calls = 0

    @property
    def created(self) -> int:
        return len(self.batches)

    @property
    def requests(self) -> int:
        return sum(len(b.requests) for b in self.batches.values())

    def create(self, requests: Sequence[BatchRequest], nonce: str) -> str:
        assert len(requests) <= self.limits.max_requests
        if self.crash_before_create:
            self.crash_before_create = False
            raise CrashAfterCreate("before the create call reached the provider")
        batch_id = f"batch_{len(self.batches) + 1}"
        self.batches[batch_id] = FakeBatch(batch_id, nonce, list(requests), self.polls)
        for request in requests:
            self.submissions[_identity(request.body)] += 1
        if self.crash_next_create:
            self.crash_next_create = False
            raise CrashAfterCreate(batch_id)
        return batch_id

    async def finish(self, batch: FakeBatch) -> None:
        for request in batch.requests:
            kind = "canceled" if batch.canceled else self.fate(request.body)
            if kind == "succeeded":
                body = request.body
                reply = await MockModel(body["model"]).complete(
                    body["messages"], schema=body.get("schema"), params=body.get("params"))
                usage = reply.usage
                self.billed_tokens += (usage.tokens_in or 0) + (usage.tokens_out or 0)
                batch.outcomes.append(BatchOutcome(request.custom_id, "succeeded", {
                    "text": reply.text, "tokens_in": usage.tokens_in,
                    "tokens_out": usage.tokens_out}))
            elif kind == "expired":
                batch.outcomes.append(BatchOutcome(request.custom_id, "expired"))
            else:
                batch.outcomes.append(BatchOutcome(request.custom_id, kind,
                                                   message=f"the fake says {kind}"))


def _identity(body: Mapping[str, Any]) -> str:
    return repr((body["model"], body["messages"], body.get("schema"), body.get("run")))


class FakeBatchClient:
    """The fake provider's batch client (a :class:`~hr_core.models.batch_api.BatchClient`)."""

    provider = "mock"

    def __init__(self, server: FakeBatchServer) -> None:
        self.server = server
        self.limits = server.limits

    async def submit(self, requests: Sequence[BatchRequest], nonce: str) -> str:
        await asyncio.sleep(0)
        return self.server.create(requests, nonce)

    async def find(self, nonce: str, custom_ids: Sequence[str]) -> str | None:
        for batch in self.server.batches.values():
            if batch.nonce == nonce:
                return batch.batch_id
        return None

    async def status(self, batch_id: str) -> BatchStatus:
        self.server.status_calls += 1
        if self.server.crash_status:
            self.server.crash_status = False
            raise CrashAfterCreate("while polling")
        batch = self.server.batches[batch_id]
        if batch.polls_left > 0 and not batch.canceled:
            batch.polls_left -= 1
            return BatchStatus(batch_id, "in_progress", {"processing": len(batch.requests)})
        if not batch.outcomes:
            await self.server.finish(batch)
        counts = Counter(o.kind for o in batch.outcomes)
        return BatchStatus(batch_id, "ended", dict(counts))

    async def outcomes(self, batch_id: str) -> AsyncIterator[BatchOutcome]:
        for number, outcome in enumerate(self.server.batches[batch_id].outcomes):
            if number == self.server.crash_outcomes_after:
                self.server.crash_outcomes_after = None
                raise CrashAfterCreate("while reading the outcomes")
            yield outcome

    async def cancel(self, batch_id: str) -> None:
        self.server.batches[batch_id].canceled = True

    async def aclose(self) -> None:
        return None


class FakeBatchAdapter:
    """The fake provider's batch adapter: a body the mock model answers, its reply priced
    at the batch rate of :data:`LIVE_PRICE`."""

    def __init__(self, server: FakeBatchServer | None, model: str,
                 client: Any = None) -> None:
        self.client = client if client is not None else FakeBatchClient(server)  # type: ignore[arg-type]
        self.price: Price | None = LIVE_PRICE
        self.model = model

    def request_body(self, messages: Sequence[Mapping[str, str]],
                     schema: Mapping[str, Any] | None,
                     params: Mapping[str, Any] | None) -> dict[str, Any]:
        return {"model": self.model, "messages": [dict(m) for m in messages],
                "schema": None if schema is None else dict(schema),
                "params": dict(params or {}), "max_tokens": 64}

    def reply(self, response: Mapping[str, Any]) -> ModelReply:
        tokens_in, tokens_out = response["tokens_in"], response["tokens_out"]
        assert self.price is not None
        cost = self.price.batch().cost(tokens_in, tokens_out)
        return ModelReply(response["text"], Usage(tokens_in=tokens_in, tokens_out=tokens_out,
                                                  cost_usd=cost))

    def failure(self, outcome: BatchOutcome) -> ModelCallError:
        return ModelCallError(f"mock:{self.model}: batch request {outcome.kind}: "
                              f"{outcome.message}")


def use_fake_batches(server: FakeBatchServer) -> Callable[[], None]:
    """Register the fake's adapter for the ``mock`` provider; returns the undo."""
    register_adapter("mock", lambda spec, model: FakeBatchAdapter(server, spec.model))
    return lambda: ADAPTERS.pop("mock", None)  # type: ignore[func-returns-value]
