"""Whether a running hr server works, not only answers: its services' errors and its schedules.

Prefect has no API for the health of its server's services (the scheduler, the
late-runs marker, ...): a service that fails every loop leaves the server answering
``/api/health`` while no schedule fires. So ``hr server status`` also reads the
server's log (``$PREFECT_HOME/hr-server.log``): :data:`MIN_ERRORS` or more errors
of one service within :data:`ERROR_WINDOW` is a problem, named with its error in one
line. And it asks the API whether every deployment with an active schedule has an
upcoming run, once the scheduler has had one loop (:func:`scheduler_loop_seconds`
and :data:`GRACE_S`) to make them since the deployment changed and the server started.

Prefect's console log has times of day only (``12:34:56.789 | ERROR | ...``); the
day comes from the ``--- hr server start <ISO time>`` line hr writes before each
start. Only the stdlib is imported (no Prefect, no HTTP library).
"""

from __future__ import annotations

import base64
import json
import os
import re
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = [
    "ERROR_WINDOW",
    "GRACE_S",
    "MIN_ERRORS",
    "ServiceErrors",
    "log_problem",
    "schedule_problem",
    "scheduler_loop_seconds",
    "server_problem",
    "service_errors",
]

ERROR_WINDOW = timedelta(minutes=5)
MIN_ERRORS = 2
GRACE_S = 10.0
"""Added to the scheduler's loop before a schedule without upcoming runs is a problem."""
LOG_TAIL_BYTES = 2_000_000
_START = re.compile(r"^--- hr server start (\S+)")
_LINE = re.compile(r"^(\d\d):(\d\d):(\d\d)(?:\.\d+)? \| (\w+)\s*\| (\S+) - (.*)$")
_CALL = re.compile(r"^(?:\S+ )?(?:\[[^]]*\] )?(?:[\w.]*\.)?(\w+)\(")  # docket: "↩ [1s] f(...)"
_ERROR_CLASS = re.compile(r"^([\w.]+(?:Error|Exception)): ?(.*)$")
_LOOP_VARS = ("PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS",
              "PREFECT_API_SERVICES_SCHEDULER_LOOP_SECONDS")


@dataclass(frozen=True)
class ServiceErrors:
    """The errors one service logged in the window: how many, the last one's text."""

    service: str
    count: int
    error: str
    last: datetime

    def describe(self) -> str:
        """One line for the terminal."""
        return (f"the server's {self.service} service failed {self.count} times in the last "
                f"{int(ERROR_WINDOW.total_seconds() // 60)} minutes: {self.error}")


def _service(logger: str, message: str) -> str | None:
    """The service an error line is about: the task docket ran (Prefect's services are
    docket tasks), a ``prefect.server.services`` logger's last part, else ``None``."""
    found = _CALL.match(message)
    if logger.startswith("docket") and found:
        return found.group(1)
    if logger.startswith("prefect.server.services."):
        return logger.rsplit(".", 1)[-1]
    return None


def service_errors(lines: Iterable[str], now: datetime) -> list[ServiceErrors]:
    """The services with :data:`MIN_ERRORS` or more errors within ``ERROR_WINDOW`` of ``now``.

    Args:
        lines: the server's log (``hr-server.log``), oldest first.
        now: an aware datetime (the window's end).

    Example:
        >>> log = ["--- hr server start 2026-12-02T05:00:00+00:00 port 4200",
        ...        "05:01:00.000 | ERROR   | prefect.server.services.scheduler - boom",
        ...        "05:02:00.000 | ERROR   | prefect.server.services.scheduler - boom"]
        >>> [e.service for e in service_errors(log, datetime(2026, 12, 2, 5, 3, tzinfo=UTC))]
        ['scheduler']
    """
    day: datetime | None = None
    previous: datetime | None = None
    found: dict[str, list[tuple[datetime, str]]] = {}
    current: tuple[str, datetime] | None = None  # the error whose traceback follows
    for line in lines:
        start = _START.match(line)
        if start:
            try:
                day = datetime.fromisoformat(start.group(1)).astimezone()
            except ValueError:
                day = None
            previous, current = day, None
            continue
        parsed = _LINE.match(line)
        if parsed is None:
            cls = _ERROR_CLASS.match(line)
            if current is not None and cls:
                name, when = current  # the traceback's last line: the error itself
                found[name][-1] = (when, line.strip())
            continue
        current = None
        if day is None:
            continue
        hour, minute, second, level, logger, message = parsed.groups()
        when = day.replace(hour=int(hour), minute=int(minute), second=int(second),
                           microsecond=0)
        while previous is not None and when < previous - timedelta(hours=12):
            when += timedelta(days=1)  # past midnight
        previous = day = when
        if level not in ("ERROR", "CRITICAL"):
            continue
        service = _service(logger, message)
        if service is None:
            continue
        found.setdefault(service, []).append((when, message.strip()))
        current = (service, when)
    since = now - ERROR_WINDOW
    problems = []
    for service, errors in found.items():
        recent = [(when, text) for when, text in errors if since <= when <= now + timedelta(
            minutes=1)]
        if len(recent) >= MIN_ERRORS:
            problems.append(ServiceErrors(service, len(recent), recent[-1][1], recent[-1][0]))
    return sorted(problems, key=lambda p: p.last, reverse=True)


def log_problem(log: Path, now: datetime | None = None) -> str | None:
    """One line naming the service that keeps failing in the server's log, or ``None``."""
    try:
        with log.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - LOG_TAIL_BYTES))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    problems = service_errors(text.splitlines(), now or datetime.now(UTC))
    return f"{problems[0].describe()} (log: {log})" if problems else None


def scheduler_loop_seconds(pid: int | None = None,
                           environ: Mapping[str, str] | None = None) -> float:
    """The server's scheduler loop: Prefect's setting in the server process's environment
    (``/proc/<pid>/environ``), else in ``environ``, else Prefect's default (60 s)."""
    sources: list[Mapping[str, str]] = []
    if pid is not None:
        try:
            raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
            sources.append(dict(
                item.decode(errors="replace").partition("=")[::2] for item in raw if item))
        except OSError:
            pass
    sources.append(os.environ if environ is None else environ)
    for source in sources:
        for name in _LOOP_VARS:
            try:
                return float(source[name])
            except (KeyError, ValueError):
                continue
    return 60.0


def _post(api_url: str, path: str, body: dict[str, Any], timeout: float,
          auth: str | None = None) -> Any:
    request = urllib.request.Request(f"{api_url}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    auth = auth or os.environ.get("PREFECT_API_AUTH_STRING")
    if auth:  # Prefect's basic auth, as its client sends it
        request.add_header("Authorization",
                           "Basic " + base64.b64encode(auth.encode()).decode())
    with urllib.request.urlopen(request, timeout=timeout) as reply:
        return json.loads(reply.read())


def _time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def schedule_problem(api_url: str, *, started: datetime, loop_seconds: float,
                     now: datetime | None = None, timeout: float = 5.0,
                     auth: str | None = None) -> str | None:
    """One line naming a deployment with an active schedule and no upcoming run, or ``None``.

    A deployment counts once the scheduler has had a loop (``loop_seconds`` +
    :data:`GRACE_S`) since it changed and since the server started (``started``);
    paused deployments are left out. An API that does not answer is no finding here
    (the status line says so already).
    """
    now = now or datetime.now(UTC)
    grace = timedelta(seconds=loop_seconds + GRACE_S)
    if now - started < grace:
        return None
    try:
        deployments = _post(api_url, "/deployments/filter",
                            {"deployments": {"paused": {"eq_": False}}, "limit": 200}, timeout,
                            auth)
    except (OSError, ValueError):
        return None
    for deployment in deployments:
        if not any(s.get("active") for s in deployment.get("schedules") or []):
            continue
        changed = _time(deployment.get("updated")) or started
        if now - changed < grace:
            continue
        try:
            upcoming = _post(api_url, "/flow_runs/count", {
                "deployments": {"id": {"any_": [deployment["id"]]}},
                "flow_runs": {"state": {"type": {"any_": ["SCHEDULED"]}},
                              "next_scheduled_start_time": {"after_": now.isoformat()}}},
                timeout, auth)
        except (OSError, ValueError):
            return None
        if not upcoming:
            return (f"deployment {deployment.get('name')!r} has an active schedule but no "
                    "upcoming run: the server's scheduler made none in its last loop "
                    f"(every {loop_seconds:g} s)")
    return None


def server_problem(*, log: str, api_url: str, started_at: str, pid: int,
                   auth: str | None = None) -> str | None:
    """What ``hr server status`` reports about a server that answers: one line, or ``None``.

    Args:
        log: the server's log file (``hr-server.log``).
        api_url: its API.
        started_at: when ``hr server start`` started it (ISO 8601).
        pid: its process (for its scheduler's loop setting).
        auth: the API's auth string (hr's private server asks for it; else
            ``PREFECT_API_AUTH_STRING``).
    """
    found = log_problem(Path(log))
    if found is not None:
        return found
    started = _time(started_at) or datetime.now(UTC)
    if started.tzinfo is None:
        started = started.replace(tzinfo=UTC)
    problem = schedule_problem(api_url, started=started,
                               loop_seconds=scheduler_loop_seconds(pid), auth=auth)
    return None if problem is None else f"{problem} (log: {log})"

