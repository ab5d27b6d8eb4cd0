"""Judging one item: one call per ordering, verdicts mapped back, unanimous vote."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from hr_core.judge.config import JudgeConfig, JudgeConfigError, JudgeMode
from hr_core.judge.jury import JudgeJury, JuryModels, jury_verdict
from hr_core.judge.parse import parse_reply
from hr_core.judge.prompts import LETTERS, build_messages, shown_verdicts
from hr_core.models.base import ChatModel
from hr_core.results import Usage

__all__ = [
    "JudgeResult",
    "JudgeStatus",
    "OrderStatus",
    "OrderVerdict",
    "gather_all",
    "judge_item",
    "map_verdict",
    "sum_usage",
]

JudgeStatus = Literal["ok", "no_consensus", "parse_failure", "error"]
"""``ok``: every order gave the same verdict; ``no_consensus``: they differ;
``parse_failure``: some reply had no valid verdict; ``error``: a call failed."""

OrderStatus = Literal["ok", "parse_failure", "error"]


class OrderVerdict(BaseModel):
    """One presentation order's call: the raw reply, the verdict as shown and mapped back."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    order: tuple[int, ...]
    status: OrderStatus
    raw: str | None = None
    shown_verdict: str | None = None
    verdict: str | None = None
    reason: str | None = None
    error: str | None = None
    cached: bool = False
    latency_s: float = 0.0


class JudgeResult(BaseModel):
    """The judgement of one item over every ordering.

    ``verdict`` is in the original candidates' terms (select: the letter of the
    candidate's given position, ``"A"`` = ``candidates[0]``; pairwise ``A``/``B``
    /``tie`` with A the first given candidate; grade: a grade), or ``None``
    unless ``status == "ok"``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    config_hash: str
    mode: JudgeMode
    n_candidates: int
    status: JudgeStatus
    verdict: str | None
    orders: tuple[OrderVerdict, ...]
    usage: Usage
    members: tuple[JudgeResult, ...] = ()
    """A jury's (:mod:`hr_core.judge.jury`): each member's result, in the members' order
    (its ``orders`` are then empty)."""

    @property
    def order_verdicts(self) -> list[str | None]:
        """Each order's verdict, mapped back to the original candidates."""
        return [o.verdict for o in self.orders]

    @property
    def consistent(self) -> bool:
        """Every order gave a verdict and they agree."""
        return self.status == "ok"


def map_verdict(mode: JudgeMode, order: Sequence[int], shown: str) -> str:
    """Map a verdict given for an ordering back to the original candidates.

    >>> map_verdict("select", (2, 0, 1), "A"), map_verdict("pairwise", (1, 0), "A")
    ('C', 'B')
    """
    if mode == "grade" or shown == "tie":
        return shown
    position = LETTERS.index(shown)
    return LETTERS[order[position]]


def sum_usage(usages: Sequence[Usage]) -> Usage:
    """Add usages; a field stays ``None`` only when every usage left it ``None``."""

    def total(name: str) -> Any:
        values = [getattr(u, name) for u in usages if getattr(u, name) is not None]
        return sum(values) if values else None

    return Usage(tokens_in=total("tokens_in"), tokens_out=total("tokens_out"),
                 cost_usd=total("cost_usd"))


async def gather_all(*awaitables: Awaitable[Any]) -> list[Any]:
    """``asyncio.gather`` that lets every awaitable finish before it raises (an
    ``Exception`` first, else any other ``BaseException``), results in order.

    A batched judge's call that waits for its batch raises a ``BaseException``
    (``hr_core.run.batch.pending.BatchPending``) after collecting its request: with a
    plain ``gather`` the first one would end the pass while the other orders and rows
    were still to be asked, and they would go in a later batch.

    Example:
        >>> async def one(x):
        ...     return x
        >>> asyncio.run(gather_all(one(1), one(2)))
        [1, 2]
    """
    results = await asyncio.gather(*awaitables, return_exceptions=True)
    raised = [r for r in results if isinstance(r, BaseException)]
    if raised:
        raise next((e for e in raised if isinstance(e, Exception)), raised[0])
    return list(results)


async def _judge_order(
    config: JudgeConfig, model: ChatModel, order: tuple[int, ...], *, item: Any,
    candidates: Sequence[str], reference: Any, run: int,
) -> tuple[OrderVerdict, Usage]:
    messages = build_messages(config, item=item, candidates=candidates, order=order,
                              reference=reference)
    try:
        reply = await model.complete(messages, schema=config.schema, run=run)
    except Exception as exc:
        message = f"{type(exc).__name__}: {exc}"
        return OrderVerdict(order=order, status="error", error=message), Usage()
    allowed = shown_verdicts(config, len(order))
    parsed = parse_reply(reply.text, allowed, config.mode)
    shown = parsed.verdict
    verdict = OrderVerdict(
        order=order,
        status="parse_failure" if shown is None else "ok",
        raw=reply.text,
        shown_verdict=shown,
        verdict=None if shown is None else map_verdict(config.mode, order, shown),
        reason=parsed.reason,
        error=parsed.error,
        cached=reply.cached,
        latency_s=reply.latency_s,
    )
    return verdict, reply.usage


def aggregate(orders: Sequence[OrderVerdict]) -> tuple[JudgeStatus, str | None]:
    """Unanimous aggregation: error > parse_failure > no_consensus > ok."""
    statuses = {o.status for o in orders}
    if "error" in statuses:
        return "error", None
    if "parse_failure" in statuses:
        return "parse_failure", None
    verdicts = {o.verdict for o in orders}
    if len(verdicts) == 1:
        return "ok", orders[0].verdict
    return "no_consensus", None


async def judge_item(
    config: JudgeConfig | JudgeJury,
    model: ChatModel | JuryModels,
    *,
    item: Any,
    candidates: Sequence[str],
    reference: str | Sequence[str] | None = None,
    run: int = 1,
) -> JudgeResult:
    """Judge one item in every presentation order and combine the verdicts.

    Args:
        config: the judge configuration, or a jury (each member judges the item, their
            verdicts combined by the jury's aggregation).
        model: the chat model to call (e.g. ``resolve_model(config.model)``); for a jury
            its :class:`~hr_core.judge.jury.JuryModels` (``jury.chat_model()``), or one
            model every member calls.
        item: what was asked (a string or a JSON-able payload).
        candidates: grade: ``[response]``; pairwise: ``[a, b]``; select: 2-26 texts.
        reference: the accepted answer(s); required for grade.
        run: the run index (part of the model's cache key).

    Returns:
        A :class:`JudgeResult`; model errors and bad replies become its status,
        they are not raised.

    Example:
        >>> import asyncio
        >>> from hr_core.judge.config import hr_judge_config
        >>> from hr_core.models.mock import MockModel
        >>> cfg = hr_judge_config("mock-model", "Which is right?", mode="pairwise")
        >>> res = asyncio.run(judge_item(cfg, MockModel(), item="2+2?",
        ...                              candidates=["5", "4"], reference="4"))
        >>> res.status, res.verdict, res.order_verdicts
        ('ok', 'B', ['B', 'B'])
    """
    if isinstance(config, JudgeJury):
        return await _judge_jury(config, model, item=item, candidates=candidates,
                                 reference=reference, run=run)
    if isinstance(model, JuryModels):
        raise JudgeConfigError("a single judge takes one chat model, not a jury's models")
    texts = [str(c) for c in candidates]
    if config.mode == "grade":
        if len(texts) != 1:
            raise JudgeConfigError(f"grade judges exactly one response, got {len(texts)}")
        if reference is None:
            raise JudgeConfigError("grade needs a reference to grade the response against")
        orderings = config.orderings(2)[: config.orders]
    else:
        orderings = config.orderings(len(texts))
    outcomes = await gather_all(*(
        _judge_order(config, model, order, item=item, candidates=texts,
                     reference=reference, run=run)
        for order in orderings
    ))
    orders = tuple(o for o, _ in outcomes)
    status, verdict = aggregate(orders)
    return JudgeResult(
        config_hash=config.hash, mode=config.mode, n_candidates=len(texts), status=status,
        verdict=verdict, orders=orders, usage=sum_usage([u for _, u in outcomes]),
    )


async def _judge_jury(jury: JudgeJury, model: ChatModel | JuryModels, *, item: Any,
                      candidates: Sequence[str], reference: Any, run: int) -> JudgeResult:
    """Every member judges the item (at once); their verdicts combined."""
    models = model.members if isinstance(model, JuryModels) else (model,) * len(jury.members)
    if len(models) != len(jury.members):
        raise JudgeConfigError(f"a jury of {len(jury.members)} needs as many chat models, "
                               f"not {len(models)}")
    members = await gather_all(*(
        judge_item(member, chosen, item=item, candidates=candidates, reference=reference,
                   run=run) for member, chosen in zip(jury.members, models, strict=True)))
    status, verdict = jury_verdict(jury.aggregation, jury.grades,
                                   [(m.status, m.verdict) for m in members])
    return JudgeResult(config_hash=jury.hash, mode="grade", n_candidates=len(candidates),
                       status=status, verdict=verdict, orders=(),
                       usage=sum_usage([m.usage for m in members]), members=tuple(members))
