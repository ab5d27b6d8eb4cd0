"""The async chat-model protocol every judge and LLM arm talks to."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from hr_core.errors import HrError
from hr_core.results import Usage

__all__ = [
    "ChatMessage",
    "ChatModel",
    "ModelCallError",
    "ModelConfigError",
    "ModelError",
    "ModelReply",
    "UnknownProviderError",
]

ChatMessage = Mapping[str, str]
"""One chat message: ``{"role": "system" | "user" | "assistant", "content": str}``."""


class ModelError(HrError, RuntimeError):
    """A model call failed (after any retries)."""


class ModelCallError(ModelError):
    """A provider call failed for good: says the model, attempts and last error."""


class ModelConfigError(HrError, ValueError):
    """A model cannot be set up: missing API key, base URL, bad price table, ..."""


class UnknownProviderError(ModelConfigError):
    """A model string names a provider hr does not know."""


@dataclass(frozen=True)
class ModelReply:
    """What one call returned.

    Attributes:
        text: the reply's text ("" when the model gave none).
        usage: tokens in/out and cost (``None`` where unknown).
        cached: True when replayed from the response cache.
        latency_s: seconds the call took (0 for a cache hit).

    Example:
        >>> ModelReply("Paris").usage.tokens_in is None
        True
    """

    text: str
    usage: Usage = field(default_factory=Usage)
    cached: bool = False
    latency_s: float = 0.0


@runtime_checkable
class ChatModel(Protocol):
    """An async chat model: ``await model.complete(messages, schema=..., run=...)``.

    ``provider`` and ``name`` identify it (``"openai"``, ``"gpt-4o-mini"``);
    ``spec`` is ``"provider:name"``. ``schema`` asks for a JSON reply matching it
    (structured output where the provider supports it); ``params`` are sampling
    parameters (temperature, max_tokens, seed, ...); ``run`` is the run index,
    part of the cache key so that repeated runs are separate samples.
    """

    provider: str
    name: str

    @property
    def spec(self) -> str: ...

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        run: int = 1,
    ) -> ModelReply: ...
