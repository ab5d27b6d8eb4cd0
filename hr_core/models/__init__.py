"""Chat models: the protocol, the offline mock, scripted models, OpenAI clients, cache."""

from hr_core.models.base import (
    ChatModel,
    Message,
    ModelCallError,
    ModelConfigError,
    ModelError,
    ModelReply,
    UnknownProviderError,
)
from hr_core.models.mock import MockModel
from hr_core.models.scripted import ScriptedModel

__all__ = [
    "ChatModel",
    "Message",
    "MockModel",
    "ModelCallError",
    "ModelConfigError",
    "ModelError",
    "ModelReply",
    "ScriptedModel",
    "UnknownProviderError",
]
