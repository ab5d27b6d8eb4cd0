"""The limiter of one endpoint, :class:`EndpointLimiter`: the queue of attempts, the
AIMD concurrency limit, the GCRA pacing at a known or learned rate, Retry-After pauses
and the halt of a hard quota. What it does and why is :mod:`hr_core.models.ratelimit.endpoint`'s
docstring; the process-wide registry of limiters is there too.
"""

from __future__ import annotations

import asyncio
import math
import random
import threading
import time
import weakref
from collections import deque
from collections.abc import Mapping
from typing import Any

from hr_core.models.ratelimit.headers import RateHeaders, read_rate_headers
from hr_core.models.ratelimit.reach import Reach
from hr_core.models.ratelimit.types import HALT_S, EndpointHalted, Outcome, Permit
from hr_core.models.ratelimit.types import Stats as _Stats
from hr_core.models.ratelimit.types import Waiter as _Waiter
from hr_core.models.ratelimit.types import wake as _wake

__all__ = ["EndpointLimiter"]

_PACE = 0.99        # share of a known rate the schedule uses
_WINDOW_S = 2.0     # seconds of admitted attempts the learned rate is measured over
_SLACK = 2         # attempts a late schedule may catch up at once
_GROWTH = 1.25      # a learned rate grows by this factor per second without a 429
_HISTORY = 200      # limit changes kept per endpoint


class EndpointLimiter:
    """The shared limits of one endpoint (see the module docstring).

    Args:
        label: a name for progress lines and the manifest (no secret in it).
        ceiling: the most attempts in flight (models add theirs with :meth:`join`).
        rpm, tpm: requests / tokens per minute when known in advance.
        clock: the monotonic clock (seconds).

    Example:
        >>> limiter = EndpointLimiter("example", ceiling=4, rpm=600)
        >>> async def one():
        ...     permit = await limiter.acquire(tokens=10)
        ...     limiter.release(permit, "ok", tokens_used=12)
        >>> asyncio.run(one()); limiter.snapshot()["ok"]
        1
    """

    def __init__(self, label: str, *, ceiling: int = 16, rpm: float | None = None,
                 tpm: float | None = None, clock: Any = time.monotonic) -> None:
        self.label = label
        self._clock = clock
        self._lock = threading.Lock()
        self._owners: dict[int, int] = {}
        self._base_ceiling = max(1, int(ceiling))
        self.limit = float(self._base_ceiling)
        self.in_flight = 0
        self.epoch = 0
        self.rpm = rpm
        self.tpm = tpm
        self._spec_rates = rpm is not None or tpm is not None
        self._probing = not self._spec_rates  # the first attempt goes alone
        self._learned: float | None = None  # requests/s learned from 429s (no known rate)
        self._learned_at = 0.0
        self._cut_at = -math.inf
        self._latency = 0.0  # mean seconds an answered attempt took
        self._scale = _PACE  # share of a known rate used, cut by 429s despite pacing
        self._req_at = 0.0  # GCRA: when the next request is due
        self._tok_at = 0.0  # ... and the next token
        self._pause_until = 0.0
        self._backoff = 0
        self._completion = 16.0  # mean completion tokens seen
        self._admitted: deque[float] = deque()  # when attempts the server took were sent
        self._first_admitted: float | None = None
        self._queue: deque[_Waiter] = deque()
        self._halted: tuple[str, float] | None = None
        self.reach = Reach(clock)  # connections failing in a row: unreachable (_reach)
        self._started = clock()
        self.last_used = self._started
        self.stats = _Stats()

    # -- owners ----------------------------------------------------------------
    @property
    def ceiling(self) -> int:
        """The most attempts in flight: the sum of its models' concurrency."""
        return max(1, sum(self._owners.values())) if self._owners else self._base_ceiling

    def join(self, owner: object, concurrency: int, rpm: float | None = None,
             tpm: float | None = None) -> None:
        """Count ``owner``'s concurrency into the ceiling while it lives; take its limits."""
        key = id(owner)
        with self._lock:
            first = not self._owners
            self._owners[key] = max(1, int(concurrency))
            if first:
                self.limit = float(self.ceiling)
            else:
                self.limit = min(float(self.ceiling), self.limit + max(1, int(concurrency)))
            if rpm is not None:
                self.rpm = rpm if self.rpm is None else min(self.rpm, rpm)
            if tpm is not None:
                self.tpm = tpm if self.tpm is None else min(self.tpm, tpm)
            if rpm is not None or tpm is not None:
                self._spec_rates = True
                self._probing = False
        weakref.finalize(owner, self._leave, key)

    def _leave(self, key: int) -> None:
        with self._lock:
            self._owners.pop(key, None)
            self.limit = min(self.limit, float(self.ceiling))

    # -- waiting ---------------------------------------------------------------
    async def acquire(self, tokens: int = 0, *, deadline: float | None = None,
                      first: bool = False) -> Permit:
        """Wait for a place to send one attempt of ``tokens`` estimated tokens.

        ``first=True`` (a retry) queues ahead of new attempts. Raises
        :class:`EndpointHalted` once the endpoint is halted, ``TimeoutError`` when
        ``deadline`` (the clock's time) comes first.
        """
        waiter = _Waiter(asyncio.get_running_loop(), max(0, int(tokens)))
        queued_at = self._clock()
        with self._lock:
            if first:
                self._queue.appendleft(waiter)
            else:
                self._queue.append(waiter)
        try:
            while True:
                with self._lock:
                    self._check_halt()
                    now = self._clock()
                    wait = math.inf
                    if self._queue[0] is waiter:
                        wait = self._admit(waiter.tokens, now)
                        if wait <= 0:
                            self._queue.popleft()
                            self._wake_head()
                            self.stats.waited_s += now - queued_at
                            return Permit(waiter.tokens, self.epoch, now)
                    future = waiter.renew()
                if deadline is not None:
                    left = deadline - self._clock()
                    if left <= 0:
                        raise TimeoutError(f"{self.label}: no place before the deadline")
                    wait = min(wait, left)
                await asyncio.wait((future,), timeout=None if math.isinf(wait) else wait)
        except BaseException:
            with self._lock:
                if waiter in self._queue:
                    self._queue.remove(waiter)
                self._wake_head()
            raise

    def _check_halt(self) -> None:
        if self._halted is None:
            return
        reason, at = self._halted
        if self._clock() - at < HALT_S:
            raise EndpointHalted(reason)
        self._halted = None

    def _wake_head(self) -> None:
        if self._queue:
            head = self._queue[0]
            if head.future is not None and not head.future.done():
                head.loop.call_soon_threadsafe(_wake, head.future)

    def _admit(self, tokens: int, now: float) -> float:
        """0 and counts the attempt in, or the seconds to wait (``inf``: for a release)."""
        limit = 1 if self._probing else max(1, int(self.limit))
        if self.in_flight >= limit:
            return math.inf
        if now < self._pause_until:
            return self._pause_until - now
        interval = self._interval()
        # a schedule a little late (a slow event loop) catches up by up to _SLACK attempts
        due = self._req_at - _SLACK * interval
        if interval and now < due:
            return due - now
        per_token = self._per_token()
        due = self._tok_at - _SLACK * tokens * per_token
        if per_token and tokens and now < due:
            return due - now
        self.in_flight += 1
        self.stats.attempts += 1
        self.last_used = now
        if interval:
            self._req_at = max(self._req_at, now) + interval
        if per_token:
            self._tok_at = max(self._tok_at, now) + tokens * per_token
        return 0.0

    def _interval(self) -> float:
        """Seconds between requests at the pace used (0: not paced)."""
        if self.rpm:
            return 60.0 / (self.rpm * self._scale)
        if self._learned:
            now = self._clock()  # grows while no 429 comes
            grown = self._learned * _GROWTH ** max(0.0, now - self._learned_at)
            return 1.0 / min(grown, 1e6)
        return 0.0

    def _per_token(self) -> float:
        return 60.0 / (self.tpm * self._scale) if self.tpm else 0.0

    # -- feedback --------------------------------------------------------------
    def release(self, permit: Permit, outcome: Outcome, *,
                headers: Mapping[str, str] | None = None, tokens_used: int | None = None,
                completion_tokens: int | None = None) -> float | None:
        """Hand back an attempt's place with what came of it.

        Returns the seconds the server asked to wait (``Retry-After``), if it did.
        """
        if permit.released:
            return None
        permit.released = True
        if headers is not None:  # the server answered
            self.reach.answered()
        info = read_rate_headers(headers)
        with self._lock:
            now = self._clock()
            self.in_flight -= 1
            self.last_used = now
            if outcome in ("rate_limit", "cancelled"):
                self._refund(permit)
            self._learn(info, now)
            if outcome in ("ok", "server_error"):
                self._admitted.append(permit.at)
                if self._first_admitted is None:
                    self._first_admitted = permit.at
                while self._admitted and self._admitted[0] < now - _WINDOW_S:
                    self._admitted.popleft()
            if outcome == "ok":
                self._on_ok(permit, now, tokens_used, completion_tokens)
            elif outcome == "rate_limit":
                self._on_429(permit, info, now)
            elif outcome == "server_error":
                self.stats.server_errors += 1
            self._probing = self._probing and outcome in ("cancelled", "server_error")
            self._wake_head()
        return info.retry_after_s

    def _learn(self, info: RateHeaders, now: float) -> None:
        """Take the limits the headers tell; pause when one is spent."""
        if info.limit_requests and not self._spec_rates:
            self.rpm = info.limit_requests
        if info.limit_tokens and not self._spec_rates:
            self.tpm = info.limit_tokens
        for remaining, reset, per_minute in (
                (info.remaining_requests, info.reset_requests_s, self.rpm),
                (info.remaining_tokens, info.reset_tokens_s, self.tpm)):
            if remaining is not None and remaining < 1 and reset is not None:
                one = 60.0 / per_minute if per_minute else reset
                self._pause_until = max(self._pause_until, now + min(reset, one))

    def _on_ok(self, permit: Permit, now: float, tokens_used: int | None,
               completion_tokens: int | None) -> None:
        self.stats.ok += 1
        self._backoff = 0
        self._latency += (now - permit.at - self._latency) * (0.2 if self._latency else 1.0)
        if completion_tokens is not None:
            self._completion += (completion_tokens - self._completion) * 0.1
        per_token = self._per_token()
        if per_token and tokens_used is not None:  # correct the estimate by what was counted
            self._tok_at += (tokens_used - permit.tokens) * per_token
        if self.limit < self.ceiling:
            before = self.limit
            self.limit = min(float(self.ceiling), self.limit + 1.0 / self.limit)
            if int(self.limit) != int(before):
                self._note(now, "increase")
        if self._scale < _PACE:
            self._scale = min(_PACE, self._scale + 0.002)

    def _on_429(self, permit: Permit, info: RateHeaders, now: float) -> None:
        self.stats.rate_limited += 1
        wait = info.retry_after_s
        if wait is None:
            wait = min(10.0, 0.25 * 2 ** self._backoff) * random.uniform(0.75, 1.0)
            self._backoff += 1
        self._pause_until = max(self._pause_until, now + wait)
        self._req_at = max(self._req_at, self._pause_until)
        if permit.epoch != self.epoch or now < self._cut_at + max(0.5, 2 * self._latency):
            return  # sent before the last cut, or just after it: the same burst
        self.epoch += 1
        self._cut_at = now
        seen = sum(1 for t in self._admitted if t >= now - _WINDOW_S)
        span = max(0.25, min(_WINDOW_S, now - (self._first_admitted or now)))
        measured = max(0.5, seen / span)
        if self.rpm or self.tpm:
            self._scale = max(0.2, self._scale * 0.9)
            rate = self.rpm / 60 if self.rpm else measured
        elif seen >= 5 and now - (self._first_admitted or now) >= 1.0:
            # enough answered attempts to tell the rate the server takes: pace below it
            current = 1 / self._interval() if self._learned else measured / 0.9
            self._learned = max(0.5, 0.9 * min(current, measured))
            self._learned_at = now
            rate = self._learned
        else:  # too early to tell (a first burst): the pause and the halving only
            rate = measured
        # halve the attempts in flight, but keep enough of them to send at that rate
        needed = math.ceil(rate * self._latency * 1.5) + 1
        self.limit = min(float(self.ceiling), max(1.0, self.limit / 2, float(needed)))
        self._note(now, "rate_limit")

    def _refund(self, permit: Permit) -> None:
        """An attempt the server did not count gives its place in the schedule back."""
        interval, per_token = self._interval(), self._per_token()
        if interval:
            self._req_at -= interval
        if per_token:
            self._tok_at -= permit.tokens * per_token

    def _note(self, now: float, reason: str) -> None:
        """One change: seconds since the limiter was made, the concurrency limit, the
        requests per minute paced at (``None``: not paced) and why."""
        history = self.stats.history
        if len(history) < _HISTORY:
            interval = self._interval()
            paced = round(60 / interval, 1) if interval else None
            history.append((round(now - self._started, 3), int(self.limit), paced, reason))

    def halt(self, reason: str) -> bool:
        """Stop the endpoint: waiting and new attempts raise :class:`EndpointHalted`.

        Returns whether this call halted it (``False``: it was halted already)."""
        with self._lock:
            first = self._halted is None
            if first:
                self._halted = (reason, self._clock())
                self._note(self._clock(), "halted")
            for waiter in self._queue:
                if waiter.future is not None and not waiter.future.done():
                    waiter.loop.call_soon_threadsafe(_wake, waiter.future)
            return first

    @property
    def halted(self) -> str | None:
        """Why the endpoint is halted, or ``None``."""
        with self._lock:
            return None if self._halted is None else self._halted[0]

    def expected_completion(self) -> int:
        """The mean completion tokens seen (for :func:`estimate_tokens`)."""
        return int(self._completion)

    def snapshot(self) -> dict[str, Any]:
        """The endpoint's state and counts (for progress lines and the manifest)."""
        with self._lock:
            return {
                "endpoint": self.label, "concurrency": int(self.limit),
                "ceiling": self.ceiling, "in_flight": self.in_flight,
                "rpm": self.rpm, "tpm": self.tpm, "attempts": self.stats.attempts,
                "ok": self.stats.ok, "rate_limited": self.stats.rate_limited,
                "server_errors": self.stats.server_errors,
                "waited_s": round(self.stats.waited_s, 3),
                "halted": None if self._halted is None else self._halted[0],
                "history": list(self.stats.history),
            }
