"""``ModelSpec``: one description of a model for arms and judges alike.

An LLM arm's ``model``, a judge scorer's ``model`` and a judge file's ``model``
each take either a model string (``"openai:gpt-4o-mini"``, ``"mock-model"``) or
this mapping::

    model:
      provider: openai-compatible      # or give "openai-compatible:llama3.1" as model
      model: llama3.1
      base_url: http://127.0.0.1:11434/v1
      api_key_env: MY_SERVER_KEY       # the variable's name; the key is never here
      prices: {input: 0.15, output: 0.6, cached_input: 0.075}   # USD per million tokens
                                       # (also cache_write, batch_input, batch_output)
      timeout_s: 60                    # each attempt's deadline, headers and body
      max_reply_bytes: 4194304         # a longer reply is the run's error (default 4 MiB)
      retry: {max_retries: 4, backoff_base_s: 0.5, backoff_max_s: 30}
      concurrency: 8                   # ceiling of calls in flight
      rpm: 500                         # the endpoint's requests per minute, when known
      tpm: 200000                      # ... and tokens per minute: calls are paced below them
      params: {temperature: 0, max_tokens: 64}
      structured_output: json_schema   # or instructions (the schema in the system message)
      cache: auto                      # or off: Anthropic's prompt cache on the stable prefix
      batch: true                      # through the provider's batch API (half the price)
      api_version: 2024-10-21          # azure-openai only (also token_command: an Entra token)

:func:`hr_core.models.registry.resolve_model` builds the chat model from it.
:meth:`ModelSpec.decides` is what decides an answer (provider, model, endpoint,
request parameters, structured output): the part fingerprinted
(:func:`hr_core.core.identity.fingerprint`); prices, timeouts, retries, concurrency, the
``rpm``/``tpm`` pacing, the reply size limit, prompt caching (``cache``) and the batch
API (``batch``, ``batch_deployment``) decide no answer, and the key is never in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from hr_core.core.identity import fingerprint
from hr_core.models.base import ModelConfigError, UnknownProviderError

__all__ = ["DEFAULT_MAX_REPLY_BYTES", "PROVIDERS", "CacheMode", "ModelPrices", "ModelSpec",
           "RetryPolicy"]

PROVIDERS: tuple[str, ...] = ("mock", "openai", "openai-compatible", "anthropic", "azure-openai")
"""The providers a model spec may name (``PROVIDER:NAME``)."""

DEFAULT_MAX_REPLY_BYTES = 4 * 1024 * 1024
"""The longest reply body read by default (``max_reply_bytes``; enforced by
:mod:`hr_core.models._bounded`)."""

MAX_PER_MINUTE = 1e9
"""The largest ``rpm`` / ``tpm`` a spec may give (a bound, far above any API's)."""


def _cache_word(value: Any) -> Any:
    """YAML reads a bare ``off`` as ``false`` (and ``on`` as ``true``): the words meant."""
    if value is False:
        return "off"
    if value is True:
        return "auto"
    return value


CacheMode = Annotated[Literal["auto", "off"], BeforeValidator(_cache_word)]
"""Prompt caching: ``auto`` (the stable prefix marked for the provider's cache) or ``off``
(YAML's ``off``/``false`` and ``on``/``true`` read as ``off`` and ``auto``)."""


class ModelPrices(BaseModel):
    """USD per million tokens: input, output and (when the provider bills them apart)
    cached input read (``cached_input``) and written (``cache_write``), and the batch
    API's rates; a rate left out is priced as :mod:`hr_core.models._prices` says
    (Anthropic's cache at 0.1x/1.25x input, batch at half). A model without prices is
    costed at hr's defaults when it has them (``DEFAULT_PRICES``, dated).

    Example:
        >>> ModelPrices(input=3, output=15).model_dump()
        {'input': 3.0, 'output': 15.0, 'cached_input': None}
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)
    batch_input: float | None = Field(default=None, ge=0)
    batch_output: float | None = Field(default=None, ge=0)

    @model_serializer(mode="wrap")
    def _without_unset_rates(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The rates added after ``cached_input`` only when given, so an arm's recorded
        spec (and its fingerprint) is what it was before they existed."""
        data: dict[str, Any] = handler(self)
        for name in ("cache_write", "batch_input", "batch_output"):
            if data.get(name) is None:
                data.pop(name, None)
        return data


class RetryPolicy(BaseModel):
    """Retries of transient failures (5xx, timeouts, connection errors) after the first
    attempt, with exponential backoff and jitter."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_retries: int = Field(default=4, ge=0, le=100)
    backoff_base_s: float = Field(default=0.5, gt=0)
    backoff_max_s: float = Field(default=30.0, gt=0)


class ModelSpec(BaseModel):
    """A model and how to call it (see the module docstring).

    Example:
        >>> spec = ModelSpec.of("openai-compatible:llama3.1")
        >>> spec.provider, spec.model, spec.ref
        ('openai-compatible', 'llama3.1', 'openai-compatible:llama3.1')
        >>> ModelSpec.of("mock-model").ref
        'mock-model'
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: str = Field(min_length=1)
    model: str = Field(min_length=1)
    base_url: str | None = None
    api_key_env: str | None = Field(default=None, min_length=1)
    prices: ModelPrices | None = None
    timeout_s: float = Field(default=60.0, gt=0)
    """Each attempt's wall-clock deadline: from sending the request to the last byte of
    the reply, however slowly the server sends it (a late attempt is retried as a
    timeout, within the call's own give-up)."""
    max_reply_bytes: int = Field(default=DEFAULT_MAX_REPLY_BYTES, ge=1024, le=1 << 34,
                                 strict=True)
    """The longest reply body read: a longer one is that run's ``error`` naming the limit
    (not retried). Bounds memory, not answers: not in the fingerprint or the run id."""
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    concurrency: int | None = Field(default=None, ge=1, le=10_000)
    params: dict[str, Any] = Field(default_factory=dict)
    structured_output: Literal["json_schema", "instructions"] = "json_schema"
    rpm: float | None = Field(default=None, gt=0, le=MAX_PER_MINUTE, strict=True)
    """The endpoint's requests per minute, when known: the endpoint's shared limiter
    paces calls at 99% of it from the first call on (else it reads the
    ``x-ratelimit-limit-*`` headers or learns the rate from 429s). Several models of
    one endpoint: the lowest. Pacing, not an answer: not in the fingerprint."""
    tpm: float | None = Field(default=None, gt=0, le=MAX_PER_MINUTE, strict=True)
    """The endpoint's tokens per minute, when known: each call's tokens (estimated
    from its messages and ``max_tokens`` before it is sent, corrected by the reply's
    usage) are spent from that budget at 99% of it. Not in the fingerprint."""
    api_version: str | None = Field(default=None, min_length=1, max_length=64)
    """``azure-openai`` only: the ``api-version`` (else ``OPENAI_API_VERSION``, else
    hr's default); it decides answers."""
    cache: CacheMode = "auto"
    """Prompt caching where the provider offers it: ``auto`` marks the stable prefix
    (the system prompt: a judge's instructions and rubric; an LLM arm's
    ``cached_prefix``) for Anthropic's cache (``cache_control``); OpenAI caches by
    itself (hr never reorders a prompt). It changes what a call costs, not what it
    answers: not in the fingerprint, the run id or a judge's hash."""
    batch: bool = Field(default=False, strict=True)
    """Send this model's calls through the provider's batch API (``openai``, ``azure-openai``,
    ``anthropic``: half the price, answers within hours; :mod:`hr_core.run.batch`). It
    changes when and at what price a call is answered, not what it answers: not in the
    fingerprint, the run id or a judge's hash."""
    batch_deployment: str | None = Field(default=None, min_length=1, max_length=256)
    """``azure-openai`` with ``batch: true``: the Global-Batch deployment the batch
    requests go to (Azure batches only on such a deployment); not in the fingerprint."""
    token_command: str | list[str] | None = Field(default=None, min_length=1)
    """``azure-openai`` only: a command printing an Entra ID token, sent instead of a
    key (the command is not the key; it decides no answer)."""

    @model_validator(mode="after")
    def _azure_fields_on_azure_only(self) -> ModelSpec:
        for field in ("api_version", "token_command"):
            if getattr(self, field) is not None and self.provider != "azure-openai":
                raise ValueError(f"{field} is for azure-openai models only, not "
                                 f"{self.provider}")
        if self.batch_deployment is not None and self.provider != "azure-openai":
            raise ValueError(f"batch_deployment is for azure-openai models only, not "
                             f"{self.provider}")
        if self.batch and self.provider == "azure-openai" and self.batch_deployment is None:
            raise ValueError("azure-openai's batch API runs on a Global-Batch deployment: "
                             "name it as batch_deployment")
        if self.token_command is not None and self.api_key_env is not None:
            raise ValueError("give api_key_env or token_command, not both")
        return self

    @model_validator(mode="before")
    @classmethod
    def _split_model_string(cls, data: Any) -> Any:
        """``model: "provider:name"`` without ``provider``: split it."""
        if isinstance(data, Mapping) and "provider" not in data:
            model = data.get("model")
            if isinstance(model, str):
                provider, name = _split(model)
                return {**data, "provider": provider, "model": name}
        return data

    @classmethod
    def of(cls, value: str | Mapping[str, Any] | ModelSpec, **fields: Any) -> ModelSpec:
        """A spec from a model string, a mapping or a spec; ``fields`` that are not
        ``None`` fill or override (``base_url=...``, ``api_key_env=...``).

        Raises:
            ModelConfigError: naming the field and what is allowed.
        """
        if isinstance(value, ModelSpec):
            data: dict[str, Any] = value.model_dump()
        elif isinstance(value, str):
            provider, name = _split(value)
            data = {"provider": provider, "model": name}
        elif isinstance(value, Mapping):
            data = dict(value)
        else:
            raise ModelConfigError(f"a model is a string ('openai:gpt-4o-mini') or a mapping "
                                   f"(provider, model, base_url, ...), not {value!r}")
        data.update({k: v for k, v in fields.items() if v is not None})
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"]) or "(top level)"
            raise ModelConfigError(f"model {data.get('model')!r}, field {where!r}: "
                                   f"{error['msg']}") from None

    @property
    def ref(self) -> str:
        """The model string: ``"provider:model"`` (``"mock-model"`` as itself)."""
        if self.provider == "mock" and self.model == "mock-model":
            return "mock-model"
        return f"{self.provider}:{self.model}"

    def decides(self) -> dict[str, Any]:
        """What decides an answer: provider, model, endpoint, request parameters and
        how structured output is asked for (no prices, limits or key variable)."""
        decides = {"provider": self.provider, "model": self.model, "base_url": self.base_url,
                   "params": dict(self.params), "structured_output": self.structured_output}
        if self.api_version is not None:
            decides["api_version"] = self.api_version
        return decides

    @property
    def fingerprint(self) -> str:
        """:func:`hr_core.core.identity.fingerprint` of :meth:`decides`."""
        return fingerprint(self.decides())

    def is_plain(self) -> bool:
        """Only a model string: every other field at its default."""
        return self == ModelSpec(provider=self.provider, model=self.model)


def _split(model: str) -> tuple[str, str]:
    if model == "mock-model":
        return "mock", "mock-model"
    provider, sep, name = model.partition(":")
    if not sep or not provider.strip() or not name.strip():
        raise UnknownProviderError(f"model {model!r} names no provider; write 'PROVIDER:NAME' with "
                               f"PROVIDER one of {', '.join(PROVIDERS)} (or 'mock-model')")
    return provider, name
