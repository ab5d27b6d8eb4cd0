"""What replies' headers say about rate limits, and a request's tokens before it is sent.

Provider-neutral: OpenAI/Azure ``x-ratelimit-*``, Anthropic ``anthropic-ratelimit-*``,
``retry-after-ms`` and ``Retry-After`` (seconds or an HTTP date), durations as OpenAI
writes them (``"6m0s"``, ``"120ms"``) or RFC 3339 times.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

__all__ = ["RateHeaders", "estimate_tokens", "read_rate_headers"]


@dataclass(frozen=True)
class RateHeaders:
    """What a reply's headers say about the limits (``None``: not sent).

    Example:
        >>> h = read_rate_headers({"x-ratelimit-limit-requests": "600",
        ...                        "x-ratelimit-reset-requests": "1m6s", "retry-after-ms": "250"})
        >>> h.limit_requests, h.reset_requests_s, h.retry_after_s
        (600.0, 66.0, 0.25)
    """

    limit_requests: float | None = None
    remaining_requests: float | None = None
    reset_requests_s: float | None = None
    limit_tokens: float | None = None
    remaining_tokens: float | None = None
    reset_tokens_s: float | None = None
    retry_after_s: float | None = None


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def _duration(value: str | None) -> float | None:
    """``"6m0s"``, ``"1.5s"``, ``"20ms"``, ``"3"`` (seconds) or an RFC 3339 / HTTP date."""
    if value is None:
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if parts and "".join(n + u for n, u in parts) == text.replace(" ", ""):
        scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
        return sum(float(n) * scale[u] for n, u in parts)
    return _until(text)


def _until(text: str) -> float | None:
    """Seconds from now until an HTTP date or an RFC 3339 time."""
    when: Any
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        try:
            when = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def read_rate_headers(headers: Mapping[str, str] | None) -> RateHeaders:
    """The limits a reply's headers tell: OpenAI/Azure ``x-ratelimit-*``, Anthropic
    ``anthropic-ratelimit-*``, ``retry-after-ms`` and ``Retry-After`` (seconds or a date).

    Example:
        >>> read_rate_headers({"retry-after": "2"}).retry_after_s
        2.0
    """
    if not headers:
        return RateHeaders()
    get = headers.get
    retry = _number(get("retry-after-ms"))
    retry_s = retry / 1000 if retry is not None else _duration(get("retry-after"))
    values: dict[str, Any] = {"retry_after_s": retry_s}
    for kind in ("requests", "tokens"):
        limit = get(f"x-ratelimit-limit-{kind}") or get(f"anthropic-ratelimit-{kind}-limit")
        remaining = (get(f"x-ratelimit-remaining-{kind}")
                     or get(f"anthropic-ratelimit-{kind}-remaining"))
        reset = get(f"x-ratelimit-reset-{kind}") or get(f"anthropic-ratelimit-{kind}-reset")
        values[f"limit_{kind}"] = _number(limit)
        values[f"remaining_{kind}"] = _number(remaining)
        values[f"reset_{kind}_s"] = _duration(reset)
    return RateHeaders(**values)


def estimate_tokens(messages: Sequence[Mapping[str, Any]], completion: int = 16) -> int:
    """Tokens a request will count against a tokens-per-minute limit, before it is sent:
    about one per 4 characters of the messages, 4 per message, plus ``completion``
    (the request's ``max_tokens``, else the replies' mean so far).

    Example:
        >>> estimate_tokens([{"role": "user", "content": "x" * 400}], completion=10)
        114
    """
    chars = sum(len(str(m.get("content") or "")) for m in messages)
    return math.ceil(chars / 4) + 4 * len(messages) + max(0, int(completion))
