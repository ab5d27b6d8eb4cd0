"""``resolve_model``: a model string or :class:`~hr_core.models.spec.ModelSpec` -> a
:class:`ChatModel`, the one factory of arms' and judges' models."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from hr_core.models.base import ChatModel, ModelConfigError, UnknownProviderError
from hr_core.models.cache import CachedModel, ResponseCache
from hr_core.models.mock import MockModel
from hr_core.models.spec import PROVIDERS, ModelSpec

__all__ = ["PROVIDERS", "resolve_model"]



def resolve_model(
    model: str | ModelSpec | Mapping[str, Any] | ChatModel,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    api_key_env: str | None = None,
    prices: Mapping[str, Any] | None = None,
    cache: ResponseCache | str | os.PathLike[str] | None = None,
    timeout: float = 60.0,
    max_retries: int = 4,
    concurrency: int = 16,
) -> ChatModel:
    """Resolve ``"mock-model"``, ``"mock:NAME"``, ``"openai:NAME"``,
    ``"openai-compatible:NAME"``, ``"anthropic:NAME"`` or
    ``"azure-openai:DEPLOYMENT"`` to a chat model.

    Args:
        model: the model string, a :class:`ModelSpec` or its mapping (a
            :class:`ChatModel` is returned as it is, wrapped in the cache when one
            is given). A spec's fields say base URL, key variable, prices,
            timeout, retries, concurrency ceiling, ``rpm``/``tpm`` pacing,
            parameters; the keyword
            arguments below fill what it leaves unset (``concurrency``: the lower
            of the two).
        base_url: the server URL (``openai-compatible`` needs it; ``openai``
            defaults to the SDK's, or ``OPENAI_BASE_URL``; ``anthropic`` to
            ``ANTHROPIC_BASE_URL``, else Anthropic's; ``azure-openai``: the
            resource endpoint, else ``AZURE_OPENAI_ENDPOINT``).
        api_key: the key itself; else ``api_key_env`` names the environment
            variable (``openai``: default ``OPENAI_API_KEY``; ``openai-compatible``:
            none, no key is sent unless a variable is named;
            ``anthropic``: ``ANTHROPIC_API_KEY``; ``azure-openai``:
            ``AZURE_OPENAI_API_KEY``).
        prices: USD per million tokens, e.g. ``{"gpt-4o-mini": {"input": 0.15,
            "output": 0.6}}``.
        cache: a :class:`ResponseCache` or a path to its SQLite file.
        timeout, max_retries, concurrency: per-call timeout (s), retries after
            the first attempt, calls in flight at once.

    Raises:
        UnknownProviderError: the provider is not one of ``PROVIDERS``.
        ModelConfigError: a missing key or base URL, a bad price table.

    Example:
        >>> resolve_model("mock:echo")
        MockModel('mock:echo')
    """
    resolved: ChatModel
    extra: dict[str, Any] = {}
    if isinstance(model, ModelSpec | Mapping):
        spec = ModelSpec.of(model, base_url=base_url, api_key_env=api_key_env)
        model = spec.ref
        base_url, api_key_env = spec.base_url, spec.api_key_env
        if spec.prices is not None:
            prices = spec.prices.model_dump(exclude_none=True)
        if "timeout_s" in spec.model_fields_set:
            timeout = spec.timeout_s
        if "retry" in spec.model_fields_set:
            max_retries = spec.retry.max_retries
            extra.update(backoff_base_s=spec.retry.backoff_base_s,
                         backoff_max_s=spec.retry.backoff_max_s)
        if spec.concurrency is not None:
            concurrency = min(concurrency, spec.concurrency)
        if spec.params:
            extra["params"] = dict(spec.params)
        if spec.structured_output != "json_schema":
            extra["structured_output"] = spec.structured_output
        for field in ("api_version", "token_command", "rpm", "tpm"):
            if getattr(spec, field) is not None:
                extra[field] = getattr(spec, field)
        if spec.cache != "auto" and spec.provider == "anthropic":
            extra["prompt_cache"] = spec.cache
        if "max_reply_bytes" in spec.model_fields_set:
            extra["max_reply_bytes"] = spec.max_reply_bytes
    if not isinstance(model, str):
        if not isinstance(model, ChatModel):
            raise ModelConfigError(f"model must be a model string, a ModelSpec or a ChatModel, "
                                   f"not {model!r}")
        resolved = model
    elif model == "mock-model":
        resolved = MockModel("mock-model")
    else:
        provider, sep, name = model.partition(":")
        if not sep or not name.strip():
            raise UnknownProviderError(
                f"model {model!r} names no provider; write 'PROVIDER:NAME' with PROVIDER one of "
                f"{', '.join(PROVIDERS)} (or 'mock-model')"
            )
        if provider == "mock":
            resolved = MockModel(name)
        elif provider in ("openai", "openai-compatible"):
            # lazy for start-up: a provider's module imports its SDK (a long import), only
            # when an arm uses that provider
            from hr_core.models.providers.openai import OpenAIChatModel

            resolved = OpenAIChatModel(
                name, provider=provider, base_url=base_url, api_key=api_key,
                api_key_env=api_key_env, prices=prices, timeout=timeout,
                max_retries=max_retries, concurrency=concurrency, **extra,
            )
        elif provider == "anthropic":
            # lazy for start-up: the anthropic SDK (a long import), only when an arm uses it
            from hr_core.models.providers.anthropic import AnthropicChatModel

            if "structured_output" in extra:
                raise ModelConfigError(f"{model}: structured_output applies to OpenAI-style "
                                       "servers (response_format); leave it out for anthropic")
            resolved = AnthropicChatModel(
                name, base_url=base_url, api_key=api_key, api_key_env=api_key_env,
                prices=prices, timeout=timeout, max_retries=max_retries,
                concurrency=concurrency, **extra,
            )
        elif provider == "azure-openai":
            # lazy for start-up: the openai SDK, only when an arm uses Azure
            from hr_core.models.providers.azure import AzureOpenAIChatModel

            resolved = AzureOpenAIChatModel(
                name, base_url=base_url, api_key=api_key, api_key_env=api_key_env,
                prices=prices, timeout=timeout, max_retries=max_retries,
                concurrency=concurrency, **extra,
            )
        else:
            raise UnknownProviderError(
                f"model {model!r}: unknown provider {provider!r}; use one of "
                f"{', '.join(PROVIDERS)} (e.g. 'openai:gpt-4o-mini', 'mock:NAME')"
            )
    if cache is None:
        return resolved
    store = cache if isinstance(cache, ResponseCache) else ResponseCache(cache)
    return CachedModel(resolved, store)
