"""The async chat-model protocol every judge and LLM arm talks to."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from hr_core.core.errors import HrError
from hr_core.core.failures import FailureKind
from hr_core.results import Usage

__all__ = [
    "PREFIX_MARK",
    "ChatMessage",
    "ChatModel",
    "ModelCallError",
    "ModelConfigError",
    "ModelError",
    "ModelReply",
    "StructuredOutputRejectedError",
    "UnknownProviderError",
]

ChatMessage = Mapping[str, str]
"""One chat message: ``{"role": "system" | "user" | "assistant", "content": str}``."""

PREFIX_MARK = "hr_prefix"
"""A chat message with this key (value ``"cache"``) ends the stable prefix of a prompt
(an LLM arm's ``cached_prefix``): a provider with a prompt cache to ask for marks it
(Anthropic's ``cache_control``); the key itself is never sent."""


class ModelError(HrError, RuntimeError):
    """A model call failed (after any retries)."""


class ModelCallError(ModelError):
    """A provider call failed for good: says the model, attempts and last error.

    ``usage``: the tokens and cost its failed attempts reported (``None``: none did);
    the engine counts them as the run's.
    """

    usage: Usage | None = None


class ModelConfigError(HrError, ValueError):
    """A model cannot be set up: missing API key, base URL, bad price table, ..."""


class UnknownProviderError(ModelConfigError):
    """A model string names a provider hr does not know."""


class StructuredOutputRejectedError(ModelCallError):
    """The server rejected a request's JSON schema (``response_format``): a
    configuration error, never silently answered with another prompt."""


@dataclass(frozen=True)
class ModelReply:
    """What one call returned.

    Attributes:
        text: the reply's text ("" when the model gave none).
        usage: tokens in/out and cost (``None`` where unknown).
        cached: True when replayed from the response cache.
        latency_s: seconds the call took (0 for a cache hit).
        finish_reason: why the model stopped, as the provider said (``"stop"``,
            ``"length"``, ``"content_filter"``, ...; ``None`` when it did not say).
        refusal: the provider's refusal message, when it sent one.
        content_null: the reply's content was ``null`` (not a string).

    Example:
        >>> ModelReply("Paris").usage.tokens_in is None
        True
        >>> ModelReply("The capit", finish_reason="length").truncated
        True
    """

    text: str
    usage: Usage = field(default_factory=Usage)
    cached: bool = False
    latency_s: float = 0.0
    finish_reason: str | None = None
    refusal: str | None = None
    content_null: bool = False

    @property
    def truncated(self) -> bool:
        """The model stopped at its token limit (``finish_reason`` ``"length"``): the
        text is kept and scored, and the run is marked ``truncated``."""
        return self.finish_reason == "length"

    def failure(self) -> tuple[FailureKind, str] | None:
        """Why this reply is no answer, as ``(failure kind, message)``, else ``None``.

        A ``refusal`` field or ``finish_reason`` ``"content_filter"``/``"refusal"`` is a
        ``refusal``; content ``null`` with nothing else is a ``parse_failure``
        saying so (an empty string is left to the scorer's rules, a parse failure
        too). A truncated reply with text is an answer (see :attr:`truncated`).

        Example:
            >>> ModelReply("", finish_reason="content_filter").failure()[0]
            'refusal'
            >>> ModelReply("", content_null=True, finish_reason="stop").failure()[1]
            "the model's reply had no content (content null, finish_reason 'stop')"
        """
        if self.refusal:
            return "refusal", f"the model refused: {' '.join(self.refusal.split())[:300]}"
        if self.finish_reason == "content_filter":
            return "refusal", ("the provider's content filter stopped the reply "
                               "(finish_reason 'content_filter')")
        if self.finish_reason == "refusal":  # e.g. Anthropic's stop_reason refusal
            return "refusal", "the model refused (finish_reason 'refusal')"
        if self.content_null and not self.text:
            return "parse_failure", ("the model's reply had no content (content null, "
                                     f"finish_reason {self.finish_reason!r})")
        return None


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


async def close_client(model: Any) -> None:
    """Close the HTTP client ``model`` keeps for the running event loop (it makes a new
    one on its next call), through a cache wrapper's ``inner`` model; a model without
    one (mock, scripted) is left as it is.

    A client left open when its loop ends is garbage-collected in a later loop, which
    then tries to close the first loop's connections ("Event loop is closed").
    """
    while model is not None:
        close = getattr(model, "aclose", None)
        if callable(close):
            await close()
            return
        model = getattr(model, "inner", None)
