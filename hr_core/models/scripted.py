"""A model whose replies are a function of the messages: for tests and examples."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hr_core.models.base import ChatMessage, ModelReply
from hr_core.results import Usage

__all__ = ["ScriptedModel"]

ReplyFn = Callable[[Sequence[ChatMessage]], Any]


class ScriptedModel:
    """Replies with ``reply(messages)``: a str, a :class:`ModelReply`, or raises.

    ``reply`` may be ``async def``. Every call's messages, schema, params and run
    are kept in ``calls`` for assertions.

    Example:
        >>> import asyncio
        >>> model = ScriptedModel(lambda msgs: '{"verdict": "A", "reason": "x"}')
        >>> asyncio.run(model.complete([{"role": "user", "content": "hi"}])).text[:13]
        '{"verdict": "'
    """

    provider = "scripted"

    def __init__(self, reply: ReplyFn, name: str = "scripted", delay_s: float = 0.0) -> None:
        self.name = name
        self._reply = reply
        self._delay_s = delay_s
        self.calls: list[dict[str, Any]] = []

    @property
    def spec(self) -> str:
        return f"scripted:{self.name}"

    def __repr__(self) -> str:
        return f"ScriptedModel({self.name!r})"

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        run: int = 1,
    ) -> ModelReply:
        self.calls.append({"messages": [dict(m) for m in messages], "schema": schema,
                           "params": dict(params or {}), "run": run})
        if self._delay_s:
            await asyncio.sleep(self._delay_s)
        value = self._reply(messages)
        if inspect.isawaitable(value):
            value = await value
        if isinstance(value, ModelReply):
            return value
        text = str(value)
        words_in = sum(len(str(m.get("content", "")).split()) for m in messages)
        return ModelReply(text, Usage(tokens_in=words_in, tokens_out=len(text.split()),
                                      cost_usd=0.0))
