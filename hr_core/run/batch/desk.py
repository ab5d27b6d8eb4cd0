"""The batch desk: a model wrapper whose calls are answered from the batch ledger.

:class:`BatchModel` stands where a batched arm's or judge's provider model stood (inside
the response cache, so a cache hit costs nothing and a batch's answer is cached as a
live one). Its ``complete()`` asks the :class:`BatchDesk`:

- the call's request has an outcome: ``succeeded`` -> the adapter's reply (priced at
  the batch rate); ``errored``/``canceled`` -> the adapter's failure with the
  provider's message, raised as a live call's failure is;
- its request is in a batch not ended, or it expired in this invocation (submitted
  again by the next ``hr run``, never scored as wrong), or the budget refused it ->
  :class:`~hr_core.run.batch.pending.BatchPending`;
- otherwise its request body is collected for the next batch -> ``BatchPending``.

A call's identity is the response cache's :func:`~hr_core.models.cache.cache_key` (one
definition of "the same call").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hr_core.models._prices import Price
from hr_core.models.base import ChatMessage, ModelCallError, ModelReply
from hr_core.models.batch_api import BatchClient, BatchOutcome
from hr_core.models.cache import cache_key
from hr_core.run.batch.ledger import BatchLedger
from hr_core.run.batch.pending import BatchPending
from hr_core.run.context import CURRENT_RUN, RunContext

__all__ = ["BatchAdapter", "BatchDesk", "BatchModel", "Collected"]


class BatchAdapter(Protocol):
    """A provider's side of a batched model (``hr_core.models.batching``)."""

    client: BatchClient
    price: Price | None

    def request_body(self, messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None,
                     params: Mapping[str, Any] | None) -> dict[str, Any]: ...

    def reply(self, response: Mapping[str, Any]) -> ModelReply: ...

    def failure(self, outcome: BatchOutcome) -> ModelCallError: ...


@dataclass(frozen=True)
class Collected:
    """A request collected for the next batch: the model's label, the call's key and
    body, and the run it is for."""

    label: str
    key: str
    body: dict[str, Any]
    run: RunContext
    role: str


class BatchModel:
    """A chat model whose calls go through the provider's batch API (see the module)."""

    def __init__(self, inner: Any, adapter: BatchAdapter, desk: BatchDesk, label: str,
                 role: str) -> None:
        self.inner = inner
        self.adapter = adapter
        self.desk = desk
        self.label = label
        self.role = role
        self.provider = inner.provider
        self.name = inner.name

    @property
    def spec(self) -> str:
        return str(self.inner.spec)

    def __repr__(self) -> str:
        return f"BatchModel({self.inner!r})"

    async def aclose(self) -> None:
        """Close the provider model's client (the batch client is the engine's)."""
        close = getattr(self.inner, "aclose", None)
        if callable(close):
            await close()

    async def complete(self, messages: Sequence[ChatMessage], *,
                       schema: Mapping[str, Any] | None = None,
                       params: Mapping[str, Any] | None = None, run: int = 1) -> ModelReply:
        decided = {**dict(getattr(self.inner, "params", None) or {}), **dict(params or {})}
        identity = getattr(self.inner, "request_identity", None)
        key = cache_key(self.provider, self.name, messages, decided, schema, run,
                        getattr(self.inner, "base_url", None),
                        identity() if callable(identity) else None)
        return self.desk.answer(self, key, messages, schema, params)


class BatchDesk:
    """What one invocation's calls ask of the ledger, and what they left to collect."""

    def __init__(self, ledger: BatchLedger) -> None:
        self.ledger = ledger
        self.collected: dict[str, Collected] = {}
        self.refused: set[str] = set()
        self.expired_now: set[str] = set()  # custom ids that expired in this invocation
        self.pending_runs: set[tuple[str, str, int]] = set()  # arm runs to run again
        self.judge_pending: set[tuple[str, str, int]] = set()  # runs to score again
        self.answered = 0

    def answer(self, model: BatchModel, key: str, messages: Sequence[ChatMessage],
               schema: Mapping[str, Any] | None,
               params: Mapping[str, Any] | None) -> ModelReply:
        """The call's reply from the ledger, its failure raised, or ``BatchPending``."""
        state, outcome = self.ledger.state(key)
        if state == "answered":
            assert outcome is not None
            self.answered += 1
            if outcome.kind == "succeeded" and outcome.response is not None:
                return model.adapter.reply(outcome.response)
            raise model.adapter.failure(outcome)
        run = CURRENT_RUN.get() or RunContext("", "", 0)
        if state == "expired" and self.ledger.by_key[key] in self.expired_now:
            raise BatchPending  # not answered: the next `hr run` submits it again
        if key in self.refused:
            raise BatchPending  # the budget refused it: a budget_stop row
        if state != "waiting" and key not in self.collected:
            self.collected[key] = Collected(model.label, key,
                                            model.adapter.request_body(messages, schema,
                                                                       params),
                                            run, model.role)
        (self.judge_pending if model.role == "judge" else self.pending_runs).add(
            (run.arm, run.item_id, run.run))
        raise BatchPending
