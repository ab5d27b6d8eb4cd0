"""The Messages API's wire format for :mod:`hr_core.models.providers.anthropic`.

OpenAI-vocabulary parameters checked (:func:`check_params`), the request's optional
fields, a message read into a :class:`~hr_core.models.base.ModelReply`
(:func:`read_message`, ``stop_reason`` as :func:`finish_reason`), and what a failed
attempt was (:func:`failure_kind`, its one-line :func:`describe`). The call and its
retry loop are the client's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import anthropic

from hr_core.models._bounded import ReplyTooLarge, bound_failure
from hr_core.models._prices import Price, priced_usage
from hr_core.models.base import ModelConfigError, ModelReply

__all__ = ["FINISH", "HARD_QUOTA_CODES", "OPENAI_ONLY", "RATE_LIMIT_STATUSES", "RETRY_STATUSES",
           "Malformed", "check_params", "describe", "error_field", "failure_kind",
           "finish_reason", "optional_fields", "read_message", "status_code"]

FINISH: Final[dict[str, str]] = {
    "end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
    "model_context_window_exceeded": "length", "refusal": "refusal",
    "tool_use": "tool_calls", "pause_turn": "pause_turn",
}
OPENAI_ONLY: Final[frozenset[str]] = frozenset({
    "seed", "n", "frequency_penalty", "presence_penalty", "logprobs", "top_logprobs",
    "logit_bias", "response_format", "user",
})
RETRY_STATUSES: Final[frozenset[int]] = frozenset({408, 409})
RATE_LIMIT_STATUSES: Final[frozenset[int]] = frozenset({429, 529})
HARD_QUOTA_CODES: Final[frozenset[str]] = frozenset({"enforced_spend_limit_reached"})


def finish_reason(stop_reason: str | None) -> str | None:
    """Anthropic's ``stop_reason`` in the vocabulary of OpenAI's ``finish_reason``.

    Example:
        >>> finish_reason("end_turn"), finish_reason("max_tokens"), finish_reason("refusal")
        ('stop', 'length', 'refusal')
    """
    if stop_reason is None:
        return None
    return FINISH.get(stop_reason, stop_reason)


class Malformed(Exception):
    """The server answered 2xx with a body that is not a message."""


def read_message(message: Any, price: Price | None) -> ModelReply:
    """The reply of a message: text, usage and cost, stop reason, refusal."""
    try:
        blocks = message.content
        parts = [b.text for b in blocks if getattr(b, "type", None) == "text"]
    except (AttributeError, TypeError):
        raise Malformed("the reply has no content blocks") from None
    usage = getattr(message, "usage", None)
    fresh = _count(getattr(usage, "input_tokens", None))
    written = _count(getattr(usage, "cache_creation_input_tokens", None))
    read = _count(getattr(usage, "cache_read_input_tokens", None))
    tokens_out = _count(getattr(usage, "output_tokens", None))
    tokens_in = None if fresh is None else fresh + (written or 0) + (read or 0)
    # Anthropic counts extended thinking inside output_tokens and reports no share of it
    used = priced_usage(price, tokens_in, tokens_out, cache_read=read, cache_write=written)
    stop = getattr(message, "stop_reason", None)
    refusal = None  # without an explanation, finish_reason 'refusal' says it
    if stop == "refusal":
        explanation = getattr(getattr(message, "stop_details", None), "explanation", None)
        refusal = explanation if isinstance(explanation, str) and explanation else None
    return ModelReply("".join(parts), used,
                      finish_reason=finish_reason(stop if isinstance(stop, str) else None),
                      refusal=refusal, content_null=not parts)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def optional_fields(body: Mapping[str, Any]) -> dict[str, Any]:
    """The body's fields besides the three every SDK version takes as arguments: sent
    as they are (an SDK's signature may lack some the API accepts)."""
    return {k: v for k, v in body.items() if k not in ("model", "max_tokens", "messages")}


def check_params(name: str, params: Mapping[str, Any]) -> None:
    unsupported = sorted(set(params) & OPENAI_ONLY)
    if unsupported:
        raise ModelConfigError(
            f"anthropic:{name}: parameter {unsupported[0]!r} is OpenAI's; the Messages API "
            "has none such (remove it from params, or use temperature, top_p, top_k, "
            "max_tokens, stop)")


def failure_kind(exc: BaseException) -> str:
    """What a failed attempt was: ``hard_quota``, ``rate_limit`` (429/529: waited out),
    ``transient`` (retried with backoff) or ``error`` (not retried)."""

    if isinstance(bound_failure(exc), ReplyTooLarge):  # the limit: not retried
        return "error"
    if isinstance(exc, Malformed | ValueError | anthropic.APIConnectionError |
                  anthropic.APIResponseValidationError):
        return "transient"
    if not isinstance(exc, anthropic.APIStatusError):
        return "error"
    status = exc.status_code
    if status == 429 and error_field(exc, "details", "error_code") in HARD_QUOTA_CODES:
        return "hard_quota"
    if status in RATE_LIMIT_STATUSES:
        return "rate_limit"
    return "transient" if status in RETRY_STATUSES or status >= 500 else "error"


def status_code(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def error_field(exc: Any, *path: str) -> Any:
    value = getattr(exc, "body", None)
    for key in ("error", *path):
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def describe(exc: BaseException) -> str:
    bound = bound_failure(exc)  # the attempt's deadline or the reply's size limit
    if bound is not None:
        return str(bound)
    if isinstance(exc, anthropic.APITimeoutError):
        return "timed out"
    if isinstance(exc, anthropic.APIStatusError):
        kind = error_field(exc, "type")
        message = error_field(exc, "message") or exc.message
        code = error_field(exc, "details", "error_code")
        what = f"HTTP {exc.status_code}" + (f" {kind}" if kind else "")
        return what + (f" ({code})" if code else "") + f": {str(message)[:300]}"
    if isinstance(exc, anthropic.APIConnectionError):
        cause = exc.__cause__
        said = f": {str(cause)[:160]}" if cause is not None and str(cause) else ""
        return f"connection error ({type(cause).__name__ if cause else 'unknown'}{said})"
    return f"{type(exc).__name__}: {str(exc)[:300]}"

