"""Adaptive rate limiting per endpoint, shared by every model that calls it.

One :class:`EndpointLimiter` per endpoint and key (provider, base URL and the
*name* of the key's environment variable, never the key) lives in a
process-wide registry (:func:`limiter_for`): every arm and judge of a process
that calls that endpoint waits in the same queue. A provider client asks it for
a :class:`Permit` before each attempt and hands it back with what the server
said (:meth:`EndpointLimiter.release`: the kind of outcome, the headers, the
tokens used); the limiter is provider-neutral.

What it does with that:

- **concurrency, AIMD**: at most ``limit`` attempts in flight; ``+1/limit`` per
  success up to the ceiling (the sum of the concurrency its models ask for),
  halved on a 429 (once per round: 429s of attempts sent before the last cut do
  not cut again);
- **Retry-After**: a 429 pauses the whole endpoint for at least
  ``retry-after-ms`` / ``Retry-After`` (else an exponential backoff);
- **pacing**: when the requests or tokens per minute are known (the model spec's
  ``rpm``/``tpm``, or the ``x-ratelimit-limit-*`` headers), attempts are spaced
  at 99% of that rate (a GCRA schedule), so the server's bucket never empties;
  without them, a 429 sets the pace to the rate of successes just seen and each
  success raises it a little (AIMD on the rate);
- **pre-emptive slow-down**: ``x-ratelimit-remaining-*`` at 0 pauses until the
  next request or token is due (``x-ratelimit-reset-*``);
- **hard quota**: :meth:`EndpointLimiter.halt` stops the endpoint at once:
  waiting and new attempts raise :class:`EndpointHalted` (for ``HALT_S``, then
  it may be tried again).

The first attempt of an endpoint whose limits are unknown goes alone (its reply's
headers may tell the limits), then the limit opens to the ceiling.

State is guarded by a thread lock and waiters are woken on their own event loop,
so models in several threads (Prefect task runners, several ``asyncio.run``)
share one limiter.
"""

from __future__ import annotations

import threading
from typing import Any

from hr_core.models.ratelimit.headers import RateHeaders, estimate_tokens, read_rate_headers
from hr_core.models.ratelimit.limiter import EndpointLimiter
from hr_core.models.ratelimit.reach import safe_url
from hr_core.models.ratelimit.types import (
    CALL_DEADLINE,
    HALT_S,
    EndpointHalted,
    EndpointStoppedError,
    Outcome,
    Permit,
)

__all__ = [
    "CALL_DEADLINE",
    "HALT_S",
    "EndpointHalted",
    "EndpointLimiter",
    "EndpointStoppedError",
    "Outcome",
    "Permit",
    "RateHeaders",
    "estimate_tokens",
    "limiter_for",
    "limiters",
    "rate_limit_report",
    "read_rate_headers",
    "reset_limiters",
]


_REGISTRY: dict[tuple[str, str, str], EndpointLimiter] = {}
_REGISTRY_LOCK = threading.Lock()


def limiter_for(provider: str, base_url: str | None, key_name: str | None, *,
                owner: object | None = None, concurrency: int = 16, rpm: float | None = None,
                tpm: float | None = None) -> EndpointLimiter:
    """The process's limiter of one endpoint and key, made on first use.

    ``key_name`` is the key's environment variable name (or a label such as
    ``"explicit"``), never the key. ``owner`` (the model) adds its ``concurrency``
    to the ceiling while it lives.

    Example:
        >>> a = limiter_for("openai", "http://127.0.0.1:9/v1", "OPENAI_API_KEY")
        >>> a is limiter_for("openai", "http://127.0.0.1:9/v1", "OPENAI_API_KEY")
        True
    """
    where = (base_url or "default").rstrip("/")
    key = (provider, where, key_name or "")
    with _REGISTRY_LOCK:
        limiter = _REGISTRY.get(key)
        if limiter is None:
            label = f"{provider}:{safe_url(where)}"  # no user, password or query secret
            limiter = _REGISTRY[key] = EndpointLimiter(label, ceiling=concurrency)
    if owner is not None:
        limiter.join(owner, concurrency, rpm, tpm)
    return limiter


def limiters() -> list[EndpointLimiter]:
    """Every endpoint limiter of this process."""
    with _REGISTRY_LOCK:
        return list(_REGISTRY.values())


def reset_limiters() -> None:
    """Forget every endpoint's limiter (tests; a new process starts empty anyway)."""
    with _REGISTRY_LOCK:
        _REGISTRY.clear()


def rate_limit_report(since: float) -> list[dict[str, Any]]:
    """The endpoints used since ``since`` (``time.monotonic()``): limits, counts of 429s
    and the changes of the concurrency limit (seconds since the limiter was made)."""
    return [limiter.snapshot() for limiter in limiters() if limiter.last_used >= since]
