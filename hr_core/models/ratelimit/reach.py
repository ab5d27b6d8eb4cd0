"""An endpoint that cannot be reached is halted, as an exhausted quota is.

A connection that cannot be made (refused, a name that does not resolve: httpx's
``ConnectError``) is no answer from the server. Each endpoint's limiter keeps a
:class:`Reach`: connection failures in a row, of any call, since the server last
answered anything (any HTTP status). Once there are :data:`UNREACHABLE_AFTER` of them
over at least :data:`UNREACHABLE_MIN_S` (a server restarting for a moment is not
down), the client halts the endpoint: the runs not made are ``budget_stop`` rows (not
scored, made by the next run of the benchmark) and the reason names the endpoint's URL
(:func:`safe_url`: no user, password or query secrets). Until then a call whose
connections fail is retried without counting them against ``max_retries``, so an
unreachable endpoint ends its calls as halted, not as ``error`` runs.

:class:`EndpointsHalted` is how a finished run with halted endpoints ends: ``hr run``
exits with its :attr:`~EndpointsHalted.exit_status`, and the scheduled flow fails with
its message instead of checking a partial run for regressions.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx2

from hr_core.core.errors import HrError

__all__ = ["EXIT_HALTED", "UNREACHABLE_AFTER", "UNREACHABLE_MIN_S", "EndpointsHalted", "Reach",
           "cannot_connect", "halted_benchmark", "halted_error", "safe_url"]

UNREACHABLE_AFTER = 4
"""Connection failures in a row (no answer between) that halt an endpoint ..."""

UNREACHABLE_MIN_S = 1.5
"""... when at least this many seconds passed since the first of them."""

EXIT_HALTED = 9
"""``hr run``'s exit status when an endpoint was halted (unreachable, quota exhausted)."""

_KEPT_QUERY = frozenset({"api-version"})


def safe_url(url: str) -> str:
    """``url`` without what may be a secret: the user and password, the query's values
    (``api-version`` is kept).

    Example:
        >>> safe_url("https://user:pw@host:8443/v1?key=abc&api-version=2024-10-21")
        'https://host:8443/v1?key=***&api-version=2024-10-21'
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return "(an unreadable URL)"
    if ":" in host:
        host = f"[{host}]"
    query = urlencode([(k, v if k in _KEPT_QUERY else "***")
                       for k, v in parse_qsl(parts.query, keep_blank_values=True)], safe="*")
    return urlunsplit((parts.scheme, host + port, parts.path, query, ""))


def cannot_connect(exc: BaseException) -> str | None:
    """What stopped the connection when ``exc`` (or one of its causes) is a connection
    that could not be made, else ``None`` (timeouts, resets and replies are not)."""

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, httpx2.ConnectError) or (
                type(current).__name__ == "ConnectError"
                and type(current).__module__.startswith("httpx")):
            said = " ".join(str(current).split())[:160]
            return f"{type(current).__name__}: {said}" if said else type(current).__name__
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


class Reach:
    """An endpoint's connection failures in a row, shared by every call to it."""

    def __init__(self, clock: object = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self.row = 0
        self.since: float | None = None

    def failed(self) -> bool:
        """Count one connection failure; whether the endpoint is now unreachable."""
        with self._lock:
            now = self._clock()  # type: ignore[operator]
            if self.since is None:
                self.since = now
            self.row += 1
            return self.row >= UNREACHABLE_AFTER and now - self.since >= UNREACHABLE_MIN_S

    def answered(self) -> None:
        """The server answered (any HTTP status): the row starts again."""
        with self._lock:
            self.row, self.since = 0, None

    @property
    def down(self) -> bool:
        """Whether connections fail and nothing answered since."""
        return self.row > 0

    def why(self) -> str:
        """How long and how often the connections failed (for the halt's reason)."""
        since = self.since
        span = 0.0 if since is None else self._clock() - since  # type: ignore[operator]
        return f"{self.row} connection attempts in a row failed over {span:.1f} s"


class EndpointsHalted(HrError, RuntimeError):
    """A finished run whose endpoints were halted: its results are written, the runs not
    made wait for the next run of the same benchmark (``exit_status`` 9)."""

    exit_status = EXIT_HALTED

    def __init__(self, message: str, benchmark: object = None) -> None:
        super().__init__(message)
        self.benchmark = benchmark


def halted_error(name: str, halts: Mapping[str, str] | None, not_made: int | None = None,
                 benchmark: object = None) -> EndpointsHalted | None:
    """The error that ends a run whose arms' endpoints were halted (``halts``: arm ->
    reason, the manifest's), or ``None`` when none was."""
    if not halts:
        return None
    first = next(iter(halts.values()))
    made = "" if not_made is None else f"{not_made} run(s) of "
    return EndpointsHalted(
        f"{name}: {first}; {made}{', '.join(halts)} not made. The results so far are "
        "written; run the same benchmark again once the endpoint answers to make them",
        benchmark)


def halted_benchmark(bench: Any) -> EndpointsHalted | None:
    """The error of a finished benchmark (a ``Benchmark``) whose endpoints were halted
    (unreachable, quota exhausted), with how many runs were not made; ``None`` when none
    was. What ``hr run`` exits 9 with and the hr-benchmark flow run ends Failed with."""
    halts = bench.manifest.halts
    if not halts:
        return None
    kinds = bench.runs["failure_kind"]
    name = str(bench.manifest.name or "benchmark")
    return halted_error(name, halts, int((kinds == "budget_stop").sum()), bench)
