"""OpenAI's chat-completions wire format for :mod:`hr_core.models.providers.openai`.

What goes out (the ``response_format`` of a schema, the headers that must not be
sent), what comes back (a completion read into a :class:`~hr_core.models.base.ModelReply`,
the usage of failed attempts) and what a failed attempt was (retryable or not, a hard
quota, its one-line description). The call and its retry loop are the client's.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping, Sequence
from typing import Any

import openai

from hr_core.models._bounded import ReplyTooLarge, bound_failure
from hr_core.models._prices import Price, priced_usage
from hr_core.models.base import ChatMessage, ModelReply
from hr_core.models.providers.http import with_schema
from hr_core.results import Usage

__all__ = ["FAILED_USAGE", "NO_KEY", "RETRY_STATUSES", "Malformed", "chat_request",
           "completion_usage",
           "describe", "hard_quota", "note_failed", "omitted_headers", "read_completion",
           "response_format", "response_headers", "retryable", "strict"]


class Malformed(Exception):
    """The server answered 2xx with a body that is not a chat completion."""


FAILED_USAGE: contextvars.ContextVar[list[Usage] | None] = contextvars.ContextVar(
    "hr_failed_attempt_usage", default=None)
"""The usage of the current call's failed attempts (bodies that reported tokens)."""


def note_failed(usage: Usage) -> None:
    sink = FAILED_USAGE.get()
    if sink is not None and (usage.tokens_in or usage.tokens_out or usage.cost_usd):
        sink.append(usage)


NO_KEY = "hr-no-key-declared"
"""The SDK needs some api_key to build a client; with no key declared this one is
given and never sent (the request omits its Authorization header)."""

RETRY_STATUSES = frozenset({408, 409, 429})


def hard_quota(exc: Any) -> bool:
    """A 429 that will not clear by waiting: OpenAI's ``insufficient_quota``."""
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    fields = [getattr(exc, "code", None), getattr(exc, "type", None)]
    if isinstance(error, dict):
        fields += [error.get("code"), error.get("type")]
    return "insufficient_quota" in fields


def response_headers(exc: BaseException) -> Any:
    return getattr(getattr(exc, "response", None), "headers", None)


def read_completion(completion: Any, price: Price | None) -> ModelReply:
    """The reply of a completion: text, usage and cost, finish reason, refusal.

    A body that is no reply but reports usage: the tokens are noted as spent by a
    failed attempt (:func:`note_failed`), then it is retried."""
    usage = completion_usage(completion, price)
    try:
        choice = completion.choices[0]
        message = choice.message
        text = message.content
        if text is not None and not isinstance(text, str):
            raise Malformed("the reply's content is not a string")
    except (AttributeError, IndexError, KeyError, TypeError):
        note_failed(usage)
        raise Malformed("the reply has no choices[0].message") from None
    except Malformed:
        note_failed(usage)
        raise
    finish = getattr(choice, "finish_reason", None)
    refusal = getattr(message, "refusal", None)
    return ModelReply(text or "", usage,
                      finish_reason=finish if isinstance(finish, str) else None,
                      refusal=refusal if isinstance(refusal, str) and refusal else None,
                      content_null=text is None)


def completion_usage(completion: Any, price: Price | None) -> Usage:
    """Tokens in/out by kind and their cost: ``cached_tokens`` of the prompt priced at the
    cached rate (when the price has one), ``reasoning_tokens`` a part of the completion's."""
    usage = getattr(completion, "usage", None)
    if usage is None:
        return priced_usage(price, None, None)
    details_in = getattr(usage, "prompt_tokens_details", None)
    details_out = getattr(usage, "completion_tokens_details", None)
    return priced_usage(price, _count(getattr(usage, "prompt_tokens", None)),
                        _count(getattr(usage, "completion_tokens", None)),
                        cache_read=_count(getattr(details_in, "cached_tokens", None)),
                        reasoning=_count(getattr(details_out, "reasoning_tokens", None)))


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def omitted_headers(provider: str, *, has_key: bool) -> dict[str, Any]:
    """Headers the SDK would fill from the environment that must not go out.

    Without a declared key there is no ``Authorization`` header at all (not even a
    placeholder); a server that is not OpenAI's gets no ``OpenAI-Organization`` /
    ``OpenAI-Project`` from ``OPENAI_ORG_ID`` / ``OPENAI_PROJECT_ID``.
    """

    omit: dict[str, Any] = {}
    if not has_key:
        omit["Authorization"] = openai.Omit()
    if provider != "openai":
        omit["OpenAI-Organization"] = openai.Omit()
        omit["OpenAI-Project"] = openai.Omit()
    return omit


def strict(schema: Mapping[str, Any]) -> bool:
    props = schema.get("properties")
    return (schema.get("type") == "object" and schema.get("additionalProperties") is False
            and isinstance(props, Mapping) and set(schema.get("required", ())) == set(props))


def response_format(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema",
            "json_schema": {"name": "reply", "schema": dict(schema), "strict": strict(schema)}}


def chat_request(base: Mapping[str, Any], messages: Sequence[ChatMessage],
                 schema: Mapping[str, Any] | None, structured_output: str) -> dict[str, Any]:
    """A chat-completions request body: ``base`` (parameters and model), the messages and
    the schema, as ``response_format`` or (``structured_output: instructions``) in the
    system message (the live call's and a batch request's body)."""
    use_format = schema is not None and structured_output == "json_schema"
    body = dict(base, messages=with_schema(messages, schema, not use_format))
    if use_format and schema is not None:
        body["response_format"] = response_format(schema)
    return body


def retryable(exc: BaseException) -> bool:
    if isinstance(bound_failure(exc), ReplyTooLarge):  # the limit: not retried
        return False
    if isinstance(exc, Malformed | ValueError | openai.APIConnectionError |
                  openai.APIResponseValidationError):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in RETRY_STATUSES or exc.status_code >= 500
    return False


def describe(exc: BaseException) -> str:
    bound = bound_failure(exc)  # the attempt's deadline or the reply's size limit
    if bound is not None:
        return str(bound)
    if isinstance(exc, openai.APITimeoutError):
        return "timed out"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {str(exc.message)[:300]}"
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__
        said = f": {str(cause)[:160]}" if cause is not None and str(cause) else ""
        return f"connection error ({type(cause).__name__ if cause else 'unknown'}{said})"
    return f"{type(exc).__name__}: {str(exc)[:300]}"
