"""What every HTTP model client shares (openai, azure-openai, anthropic): the key held
privately, the per-event-loop client, the retry arithmetic (backoff, ``Retry-After``,
transient failures in a row), the name of a key given as a value, and the schema as an
instruction. Behaviour is the clients'; see :mod:`hr_core.models.providers.openai`."""

from __future__ import annotations

import email.utils
import json
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hr_core.models.base import PREFIX_MARK, ChatMessage
from hr_core.models.ratelimit.endpoint import EndpointLimiter

__all__ = ["QUOTA_WAIT_S", "LoopState", "Secret", "Sleep", "TransientFailures", "backoff",
           "explicit_key_name", "retry_after", "with_schema"]

Sleep = Callable[[float], Awaitable[Any]]


class Secret:
    """Holds a key; shows as ``'***'`` everywhere."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "'***'"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("an API key is not pickled; pass api_key_env to send the variable name")


@dataclass
class LoopState:
    """What a client keeps per event loop: its SDK client."""

    client: Any


QUOTA_WAIT_S = 3600.0
"""A 429 asking to wait this long or longer is a quota, not a rate limit: a hard stop."""


_EXPLICIT_KEYS: dict[str, str] = {}  # a key given as a value -> its limiter's name (memory only)


def explicit_key_name(key: str) -> str:
    """A name for a key given as a value: models with the same key share a limiter,
    and the name says nothing of the key."""
    return _EXPLICIT_KEYS.setdefault(key, f"explicit key #{len(_EXPLICIT_KEYS) + 1}")


class TransientFailures:
    """One call's transient failures (5xx, timeouts, connection errors, bad bodies).

    The call gives up after ``max_retries + 1`` failures in a row *while its endpoint
    answered no attempt* (the endpoint looks down), after ``4 * (max_retries + 1)``
    in all, or past its deadline. When the endpoint answered other calls since the
    last failure, the row starts again: the endpoint is up and this call was unlucky
    (a run is not lost to 5 errors out of a 5% error rate, or to a burst of them).
    """

    def __init__(self, limiter: EndpointLimiter, max_retries: int) -> None:
        self.limiter = limiter
        self.max_retries = max_retries
        self.answered = limiter.stats.ok
        self.row = 0
        self.total = 0
        self.restarts = 0

    def fail(self) -> int:
        """Count one failure; the number in the row (for the backoff)."""
        answered = self.limiter.stats.ok
        if answered > self.answered and self.row:
            self.row = 0
            self.restarts += 1
        self.answered = answered
        self.row += 1
        self.total += 1
        return self.row

    def exhausted(self, give_up: float, row_counts: bool = True) -> bool:
        """Whether the call should stop retrying (``row_counts=False``: connections that
        could not be made, which halt the endpoint instead:
        :mod:`hr_core.models.ratelimit.reach`)."""
        return ((row_counts and self.row > self.max_retries)
                or self.total >= 4 * (self.max_retries + 1) or time.monotonic() >= give_up)

    def why(self) -> str:
        """What more than ``max_retries`` the message should say."""
        if not self.restarts:
            return ""
        return (f"; {self.row} in a row, the endpoint answering others between "
                f"{self.restarts} of them")


def with_schema(messages: Sequence[ChatMessage], schema: Mapping[str, Any] | None,
                instruct: bool) -> list[dict[str, str]]:
    """The messages as dicts (without :data:`PREFIX_MARK`, which is no wire field); with
    ``instruct``, the schema as a JSON instruction in the system message
    (``structured_output: instructions``)."""
    out = [{k: v for k, v in m.items() if k != PREFIX_MARK} for m in messages]
    if schema is None or not instruct:
        return out
    note = ("Reply with only one JSON object that matches this JSON schema, no other text: "
            + json.dumps(schema, sort_keys=True))
    if out and out[0].get("role") == "system":
        out[0]["content"] = f"{out[0].get('content', '')}\n\n{note}"
    else:
        out.insert(0, {"role": "system", "content": note})
    return out


def backoff(attempt: int, retry_after: float | None, base_s: float, max_s: float,
             retry_after_max_s: float) -> float:
    """Exponential backoff with jitter, at least ``retry_after`` (capped): the wait of
    every provider's client before retry number ``attempt``."""
    backoff = min(max_s, base_s * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
    if retry_after is None:
        return backoff
    return max(min(retry_after, retry_after_max_s), backoff)


def retry_after(exc: BaseException) -> float | None:
    """The seconds a failed attempt's reply asks to wait (``retry-after-ms``, else
    ``Retry-After`` in seconds or as an HTTP date), or ``None``."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
