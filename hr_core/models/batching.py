"""A model's batch API: :func:`batch_adapter` gives the batch engine, for hr's OpenAI, Azure
OpenAI and Anthropic models, what it needs besides the provider's
:class:`~hr_core.models.batch_api.BatchClient`: each request's body (exactly the live call's:
the same builder), a succeeded request's reply (the live call's wire reader on the
provider's response, priced at the batch rate :meth:`~hr_core.models._prices.Price.batch`)
and a failed request's :class:`~hr_core.models.base.ModelCallError` with the provider's
message.

The client speaks through the model's own SDK client (the same key, sent only to the same
endpoint, never in a message), with an HTTP client bounded for files
(:func:`~hr_core.models.providers.batch_files.batch_http_client`). Azure OpenAI needs a
global-batch deployment (``azure_deployment``): each request's ``model`` names it; a prompt
its content filter refuses is a refusal reply, as live.
:func:`split_batches` cuts a list of requests into batches any provider's client accepts
(within its ``limits``: requests, and bytes as its wire format counts them, at most). An
``openai-compatible`` server has no batch API hr knows, nor has any other model: a
:class:`~hr_core.models.base.ModelConfigError` says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import SimpleNamespace
from typing import Any, Protocol

from hr_core.models._prices import Price
from hr_core.models.base import ChatMessage, ModelCallError, ModelConfigError, ModelReply
from hr_core.models.batch_api import BatchClient, BatchOutcome
from hr_core.models.providers.anthropic import AnthropicChatModel
from hr_core.models.providers.anthropic_batch import AnthropicBatchClient
from hr_core.models.providers.anthropic_wire import read_message
from hr_core.models.providers.azure import AzureOpenAIChatModel
from hr_core.models.providers.batch_files import batch_http_client, split_batches
from hr_core.models.providers.openai import OpenAIChatModel
from hr_core.models.providers.openai_batch import OpenAIBatchClient
from hr_core.models.providers.openai_wire import Malformed, omitted_headers, read_completion

__all__ = ["BATCH_PROVIDERS", "BatchAdapter", "ProviderBatch", "batch_adapter", "split_batches"]

BATCH_PROVIDERS = ("openai", "azure-openai", "anthropic")
"""The providers whose batch API hr speaks."""


class BatchAdapter(Protocol):
    """What the batch engine needs of a model (see the module docstring)."""

    client: BatchClient
    price: Price | None  # the live price; replies are priced at price.batch()

    def request_body(self, messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None,
                     params: Mapping[str, Any] | None) -> dict[str, Any]: ...

    def reply(self, response: Mapping[str, Any]) -> ModelReply: ...

    def failure(self, outcome: BatchOutcome) -> ModelCallError: ...


class ProviderBatch:
    """A :class:`BatchAdapter` of one model (built by :func:`batch_adapter`)."""

    def __init__(self, spec: str, client: BatchClient, price: Price | None,
                 body: Callable[[Sequence[ChatMessage], Mapping[str, Any] | None,
                                 Mapping[str, Any] | None], dict[str, Any]],
                 read: Callable[[Mapping[str, Any], Price | None], ModelReply],
                 redact: Callable[[str], str]) -> None:
        self.spec = spec
        self.client = client
        self.price = price
        self._body = body
        self._read = read
        self._redact = redact

    def __repr__(self) -> str:
        return f"ProviderBatch({self.spec!r}, {self.client!r})"

    def request_body(self, messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None,
                     params: Mapping[str, Any] | None) -> dict[str, Any]:
        """The request's body: the live call's (no secret in it)."""
        return self._body(messages, schema, params)

    def reply(self, response: Mapping[str, Any]) -> ModelReply:
        """A succeeded request's reply, priced at the batch rate; a response that is no
        reply is a :class:`ModelCallError`."""
        try:
            return self._read(response, None if self.price is None else self.price.batch())
        except Exception as exc:  # the wire readers' Malformed, or a body of another shape
            raise ModelCallError(self._redact(
                f"{self.spec}: the batch's answer is not a reply: {exc}")) from None

    def failure(self, outcome: BatchOutcome) -> ModelCallError:
        """A request that did not succeed, as the run's failure (the provider's words)."""
        said = f": {outcome.message}" if outcome.message else ""
        return ModelCallError(self._redact(
            f"{self.spec}: batch request {outcome.custom_id} {outcome.kind}{said}"))


def _read_completion(response: Mapping[str, Any], price: Price | None) -> ModelReply:
    from openai.types.chat import ChatCompletion  # the SDK, imported when a batch is read

    completion = ChatCompletion.construct(**dict(response))  # as the SDK reads a live reply
    try:
        return read_completion(completion, price)
    except Malformed as exc:
        raise ValueError(str(exc)) from None


def _azure_reader(model: AzureOpenAIChatModel) -> Callable[[Mapping[str, Any], Price | None],
                                                            ModelReply]:
    """Azure's reader: a completion, or the content filter's refusal of the prompt read by
    the live call's own rule (``_refused`` on the error body: a refusal reply)."""
    def read(response: Mapping[str, Any], price: Price | None) -> ModelReply:
        if "choices" not in response and isinstance(response.get("error"), Mapping):
            refused = model._refused(SimpleNamespace(body=dict(response)))
            if refused is not None:
                return refused
        return _read_completion(response, price)

    return read


def _read_message(response: Mapping[str, Any], price: Price | None) -> ModelReply:
    from anthropic.types import Message  # the SDK, imported when a batch is read

    return read_message(Message.construct(**dict(response)), price)


def _sdk(model: Any) -> Callable[[], Any]:
    """Makes the model's own SDK client (its key, its endpoint) with a batch's HTTP client
    (:func:`batch_http_client`) and the model's retries (create calls: none)."""
    return lambda: model._new_client(batch_http_client(model.timeout), model.max_retries)


def batch_adapter(model: Any, *, azure_deployment: str | None = None) -> ProviderBatch:
    """The batch adapter of an ``openai:``, ``azure-openai:`` or ``anthropic:`` model.

    Args:
        model: hr's :class:`OpenAIChatModel`, :class:`AzureOpenAIChatModel` or
            :class:`AnthropicChatModel`.
        azure_deployment: Azure's global-batch deployment (required for Azure).

    Raises:
        ModelConfigError: another model, or Azure without a global-batch deployment.
    """
    if isinstance(model, AzureOpenAIChatModel):
        if not azure_deployment:
            raise ModelConfigError(
                f"{model.spec}: Azure's batch API needs a global-batch deployment: name it "
                "in the spec (batch_deployment), or run without batch")
        deployment = azure_deployment
        client = OpenAIBatchClient(
            _sdk(model), provider=model.provider, endpoint="/chat/completions",
            max_line_bytes=model.max_reply_bytes, redact=model._redact,
            extra_headers=omitted_headers(model.provider, has_key=True))

        def azure_body(messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None,
                       params: Mapping[str, Any] | None) -> dict[str, Any]:
            return {**model.request(messages, schema, params), "model": deployment}

        return ProviderBatch(f"{model.spec} (batch: {deployment})", client, model.price,
                             azure_body, _azure_reader(model), model._redact)
    if isinstance(model, OpenAIChatModel):
        if model.provider != "openai":
            raise ModelConfigError(f"{model.spec}: batch needs a provider with a batch API "
                                   f"({', '.join(BATCH_PROVIDERS)}), not {model.provider}")
        client = OpenAIBatchClient(
            _sdk(model), provider=model.provider, endpoint="/v1/chat/completions",
            max_line_bytes=model.max_reply_bytes, redact=model._redact,
            extra_headers=omitted_headers(model.provider, has_key=bool(model._api_key())))
        return ProviderBatch(model.spec, client, model.price, model.request,
                             _read_completion, model._redact)
    if isinstance(model, AnthropicChatModel):
        anthropic = AnthropicBatchClient(_sdk(model), base_url=model.base_url,
                                         max_line_bytes=model.max_reply_bytes,
                                         redact=model._redact)
        return ProviderBatch(model.spec, anthropic, model.price, model.request,
                             _read_message, model._redact)
    spec = getattr(model, "spec", type(model).__name__)
    raise ModelConfigError(f"{spec}: batch needs a model of a provider with a batch API "
                           f"({', '.join(BATCH_PROVIDERS)})")
