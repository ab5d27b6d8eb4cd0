"""Chat models: the protocol, the offline mock, scripted models, OpenAI clients, cache."""

from hr_core.models._prices import BATCH_SHARE, Price
from hr_core.models.base import (
    ChatMessage,
    ChatModel,
    ModelCallError,
    ModelConfigError,
    ModelError,
    ModelReply,
    StructuredOutputRejectedError,
    UnknownProviderError,
)
from hr_core.models.cache import CachedModel, ResponseCache, cache_key
from hr_core.models.mock import MockModel
from hr_core.models.registry import PROVIDERS, resolve_model
from hr_core.models.scripted import ScriptedModel
from hr_core.models.spec import ModelPrices, ModelSpec, RetryPolicy

__all__ = [
    "BATCH_SHARE",
    "CachedModel",
    "ChatMessage",
    "ChatModel",
    "MockModel",
    "ModelCallError",
    "ModelConfigError",
    "ModelError",
    "ModelPrices",
    "ModelReply",
    "ModelSpec",
    "PROVIDERS",
    "Price",
    "ResponseCache",
    "RetryPolicy",
    "ScriptedModel",
    "StructuredOutputRejectedError",
    "UnknownProviderError",
    "cache_key",
    "resolve_model",
]
