"""The vocabulary of the endpoint limiter (:mod:`hr_core.models.ratelimit.endpoint`): what an
attempt came to, the run's call deadline, the halt of an endpoint and the errors it
raises, a permit, a waiter, and the counts an endpoint keeps."""

from __future__ import annotations

import asyncio
import contextvars
from dataclasses import dataclass, field
from typing import Literal

from hr_core.models.base import ModelCallError

__all__ = ["CALL_DEADLINE", "HALT_S", "EndpointHalted", "EndpointStoppedError", "Outcome",
           "Permit", "Stats", "Waiter", "wake"]


Outcome = Literal["ok", "rate_limit", "server_error", "error", "cancelled"]
"""What one attempt came to, as the limiter needs it: ``ok`` (a reply), ``rate_limit``
(429 that will clear), ``server_error`` (5xx, timeout, connection: retried, no
change of the limit), ``error`` (a hard error), ``cancelled`` (no answer)."""

HALT_S = 600.0
"""Seconds a hard-quota halt lasts in a process before the endpoint may be tried again."""

CALL_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "hr_call_deadline", default=None)
"""When the current run's call must be over (``time.monotonic()``), set by the engine from
``timeout_s`` / ``budget.max_seconds``: rate-limited attempts are retried until then."""


class EndpointHalted(Exception):
    """The endpoint was halted (hard quota): no attempt is sent. ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class EndpointStoppedError(ModelCallError):
    """A call not sent because its endpoint is halted (hard quota): the run is not made
    (the engine records it as ``budget_stop`` with ``reason``, and a resume makes it)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Permit:
    """One attempt's place: hand it back with :meth:`EndpointLimiter.release`."""

    tokens: int
    epoch: int
    at: float
    released: bool = False


@dataclass
class Waiter:
    """One attempt waiting for a place: its event loop, its tokens, its wake-up."""

    loop: asyncio.AbstractEventLoop
    tokens: int
    future: asyncio.Future[None] | None = None

    def renew(self) -> asyncio.Future[None]:
        """A new future to wait on."""
        self.future = self.loop.create_future()
        return self.future


def wake(future: asyncio.Future[None]) -> None:
    """Wake a waiter (on its own loop: ``loop.call_soon_threadsafe(wake, future)``)."""
    if not future.done():
        future.set_result(None)


@dataclass
class Stats:
    """An endpoint's counts and its history of limit changes."""

    attempts: int = 0
    ok: int = 0
    rate_limited: int = 0
    server_errors: int = 0
    waited_s: float = 0.0
    history: list[tuple[float, int, float | None, str]] = field(default_factory=list)
