"""Cross-process limits per provider: Prefect global concurrency and rate limits.

In one process the benchmark already bounds calls with asyncio semaphores. When
several deployments (processes, machines) call one provider, a server-side
limit bounds them all: ``hr-<provider>-concurrency`` (slots held during a call)
and ``hr-<provider>-rate`` (slots that decay, i.e. calls per second). Each
acquisition is an API round trip (SPEC section 11), so use them only across processes.
"""

from __future__ import annotations

import math
import re
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, NamedTuple

from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
from prefect.concurrency.asyncio import concurrency, rate_limit
from prefect.exceptions import ObjectNotFound
from pydantic import BaseModel, ConfigDict, Field

from hr_core.core.errors import SpecError
from hr_core.models.base import ChatMessage, ModelReply
from hr_core.run.arms import Arm

__all__ = [
    "LimitedArm",
    "LimitedModel",
    "ProviderLimit",
    "ProviderLimitNames",
    "ensure_provider_limits",
    "limit_arms",
    "provider_limit_names",
    "provider_slot",
]

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


class ProviderLimitNames(NamedTuple):
    """The names of a provider's global limits."""

    concurrency: str
    rate: str


class ProviderLimit(BaseModel):
    """A provider's cross-process limits; ``None`` leaves that limit out.

    Example:
        >>> ProviderLimit(provider="openai", concurrency=8, per_second=5).per_second
        5.0
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: str
    concurrency: int | None = Field(default=None, ge=1)
    per_second: float | None = Field(default=None, gt=0)


def provider_limit_names(provider: str) -> ProviderLimitNames:
    """The global limit names of a provider.

    Example:
        >>> provider_limit_names("openai")
        ProviderLimitNames(concurrency='hr-openai-concurrency', rate='hr-openai-rate')
    """
    if not _NAME.match(provider):
        raise SpecError(
            f"provider {provider!r} cannot name a limit: use lowercase letters, digits, '-', '_'"
        )
    return ProviderLimitNames(f"hr-{provider}-concurrency", f"hr-{provider}-rate")


async def _create_if_missing(name: str, limit: int, decay: float) -> bool:
    async with get_client() as client:
        try:
            await client.read_global_concurrency_limit_by_name(name)
            return False
        except ObjectNotFound:
            await client.create_global_concurrency_limit(
                GlobalConcurrencyLimitCreate(
                    name=name, limit=limit, active=True, slot_decay_per_second=decay
                )
            )
            return True


async def ensure_provider_limits(limits: Sequence[ProviderLimit]) -> list[str]:
    """Create the global limits that do not exist yet; existing ones are left as set.

    An operator may have tuned a limit in the UI, so an existing limit is never
    overwritten. The rate limit holds ``ceil(per_second)`` slots, each freed
    after ``1 / per_second`` s on average.

    Returns:
        The names of the limits created now.

    Example:
        >>> import asyncio
        >>> asyncio.run(ensure_provider_limits([]))
        []
    """
    created: list[str] = []
    for spec in limits:
        names = provider_limit_names(spec.provider)
        if spec.concurrency is not None and await _create_if_missing(
            names.concurrency, spec.concurrency, 0.0
        ):
            created.append(names.concurrency)
        if spec.per_second is not None and await _create_if_missing(
            names.rate, max(1, math.ceil(spec.per_second)), spec.per_second
        ):
            created.append(names.rate)
    return created


@asynccontextmanager
async def provider_slot(
    provider: str, *, timeout_seconds: float | None = None
) -> AsyncIterator[None]:
    """Hold one call's slot of a provider's global limits (waiting as needed).

    A limit that does not exist is skipped (Prefect's non-strict mode), so this
    is safe to use before an operator has created any.

    Example (not run as a doctest: it needs a server, a model or a run)::

            async def call(model, messages):
                async with provider_slot("openai"):
                    return await model.complete(messages)
    """
    names = provider_limit_names(provider)
    await rate_limit(names.rate, timeout_seconds=timeout_seconds, strict=False)
    async with concurrency(names.concurrency, timeout_seconds=timeout_seconds, strict=False):
        yield


class LimitedModel:
    """A chat model whose every call holds a slot of its provider's global limits.

    Wraps any :class:`hr_core.models.base.ChatModel`; the in-process semaphores
    of the model stay as they are.

    Example (not run as a doctest: it needs a server, a model or a run)::

            model = LimitedModel(some_model)
            reply = await model.complete([{"role": "user", "content": "hi"}])
    """

    def __init__(self, model: Any, *, provider: str | None = None,
                 timeout_seconds: float | None = None) -> None:
        self.model = model
        self.provider: str = provider or model.provider
        self.name: str = model.name
        self.timeout_seconds = timeout_seconds
        provider_limit_names(self.provider)

    @property
    def spec(self) -> str:
        """The wrapped model's ``provider:name``."""
        return str(self.model.spec)

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: Mapping[str, Any] | None = None,
        params: Mapping[str, Any] | None = None,
        run: int = 1,
    ) -> ModelReply:
        """Wait for a slot, then call the wrapped model."""
        async with provider_slot(self.provider, timeout_seconds=self.timeout_seconds):
            reply: ModelReply = await self.model.complete(
                messages, schema=schema, params=params, run=run
            )
            return reply


class LimitedArm(Arm):
    """An LLM arm whose model holds a global-limit slot per call when its provider is limited."""

    __slots__ = ("providers",)

    def __init__(self, arm: Arm, providers: Iterable[str]) -> None:
        super().__init__(arm.name, arm.fn, arm.spec, arm.llm)
        self.cache = arm.cache
        self.concurrency = arm.concurrency
        self.timeout_s = arm.timeout_s
        self.providers = frozenset(providers)

    def model(self) -> Any:
        """The arm's chat model, wrapped in :class:`LimitedModel` for a limited provider."""
        model = super().model()
        if not isinstance(model, LimitedModel) and model.provider in self.providers:
            model = self._model = LimitedModel(model)
        return model


def limit_arms(arms: Mapping[str, Arm], providers: Iterable[str]) -> dict[str, Arm]:
    """The arms with every LLM arm's calls under its provider's global limits.

    Python arms are left as they are (they may call :func:`provider_slot`
    themselves); an LLM arm is wrapped when its resolved model's provider is one
    of ``providers``.

    Example:
        >>> from hr_core.run.arms import normalise_arms
        >>> arms = normalise_arms({"llm": {"model": "mock:echo", "prompt": "{question}"}})
        >>> type(limit_arms(arms, ["mock"])["llm"]).__name__
        'LimitedArm'
    """
    names = list(providers)
    for provider in names:
        provider_limit_names(provider)
    return {name: LimitedArm(arm, names) if arm.llm is not None else arm
            for name, arm in arms.items()}
