"""A Prefect server that dies while ``hr run`` runs a benchmark costs seconds, not minutes.

hr's behaviour (one, documented in docs/debugging.md): while ``hr run`` (or ``hr
demo``) runs a benchmark, a thread watches the Prefect API. Once the API counts as
lost, hr stops as on Ctrl-C: no new arm call starts, every open benchmark's journal
is flushed and its manifest marked ``interrupted``, the processes hr started are
stopped, one line names the unreachable server and the command that resumes, and hr
exits with status :data:`EXIT_API_LOST`. Prefect's own retries (long for each API
call, longer in all, with event dumps) never reach the terminal.

The API is lost when

- the hr server's recorded process (``hr server start``; its PID in
  ``$PREFECT_HOME/hr-server.json``) is gone, seen within :data:`POLL_S`; or
- its ``/health`` refuses connections (or resets them) for :data:`LOST_AFTER_S` in a
  row (an explicit ``PREFECT_API_URL``, Prefect's temporary server).

A server that answers slowly (a busy machine) is not lost: a timeout or an HTTP error
status is an answer. A temporary server counts only once it has answered (while it
starts it refuses connections too), and nothing counts while Ctrl-C or SIGTERM stops
hr (the terminal's Ctrl-C stops the temporary server as well).

Each probe has a connect and read timeout (:data:`PROBE_TIMEOUT_S`) and ignores proxy
settings (``trust_env=False``): a proxy answering for 127.0.0.1 would hide the refusal.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import httpx

from hr_cli.literal import line
from hr_cli.signals import finishing, stop_children
from hr_core.run.interrupt import flush_open, request_stop, stop_requested
from hr_server.control import is_prefect_server, process_alive

if TYPE_CHECKING:
    import httpx

__all__ = ["EXIT_API_LOST", "LOST_AFTER_S", "POLL_S", "PROBE_TIMEOUT_S", "WatchedApi",
           "watch_api", "watching_api"]

EXIT_API_LOST = 6
"""Exit status when the Prefect API was lost mid-run (the journal is flushed)."""

LOST_AFTER_S = 4.0
"""Seconds of refused connections after which an API without a recorded process is lost."""

POLL_S = 1.0
"""Seconds between two looks at the API."""

PROBE_TIMEOUT_S = 2.0
"""Connect and read timeout of one ``/health`` probe."""

_JOIN_S = 2 * PROBE_TIMEOUT_S + 1.0
"""Seconds the end of the watched block waits for the watch thread (its probe: connect
and read timeouts)."""

_NOISY = ("prefect.events", "prefect._internal.concurrency")
"""Prefect's loggers that dump whole events on the terminal when the API is unreachable."""


@dataclass(frozen=True)
class WatchedApi:
    """What the watch looks at: the API URL (``None`` until known) and the hr server's PID.

    ``answered``: the server was seen answering already (the hr server is health-checked
    when chosen); else refusals count only after a probe succeeded.
    """

    url: str | None
    pid: int | None = None
    answered: bool = False


def _refused(client: httpx.Client, health: str) -> bool:
    """Whether ``GET health`` fails to connect (refused, reset, unreachable); a slow
    answer (timeout) or an error status is an answer, not a refusal."""

    try:
        client.get(health)
    except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError):
        return True
    except httpx.HTTPError:
        return False
    return False


def _gone(pid: int | None) -> bool:
    """The hr server's process is gone (or its PID now belongs to another program)."""
    if pid is None:
        return False

    return not process_alive(pid) or not is_prefect_server(pid)


class _Unreachable(logging.Filter):
    """Prefect's console handlers: drop the events client's connection failures (each
    dumps a whole event) and the ``Error logging to API`` lines; hr says it once."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(_NOISY):
            return True
        exc = record.exc_info[1] if record.exc_info else None
        text = record.getMessage().lower()
        return not (isinstance(exc, OSError) or "connect" in text
                    or type(exc).__module__.split(".")[0] in ("httpx", "httpcore", "websockets"))


def _console_handlers() -> list[logging.Handler]:
    loggers = [logging.getLogger(), *(
        logger for name, logger in logging.Logger.manager.loggerDict.items()
        if name.startswith("prefect") and isinstance(logger, logging.Logger))]
    return [h for logger in loggers for h in logger.handlers if "Console" in type(h).__name__]


def _lost(url: str, resume: str | None, why: str) -> None:
    """Stop as an interrupt does, say why in one line, exit with :data:`EXIT_API_LOST`."""

    if stop_requested() or not finishing.acquire(blocking=False):
        return  # Ctrl-C / SIGTERM is stopping hr already: it says so itself
    request_stop()
    lines = flush_open()
    stop_children()
    if sys.stdout.isatty():
        sys.stdout.write("\x1b[?25h\n")  # the progress bars hid the cursor
    sys.stdout.flush()
    kept = "".join(f" {line(text.split('; run the same benchmark again')[0])}."
                   for text in lines)
    then = (f"run `{line(resume)}` to resume" if resume is not None
            else "run the benchmark again (a fresh run starts over)")
    print(f"hr: the Prefect API at {line(url)} stopped answering ({why}); the benchmark "
          f"stopped, its runs marked interrupted.{kept} Start the server again (hr server "
          f"start) and {then}.", file=sys.stderr, flush=True)
    os._exit(EXIT_API_LOST)


def watch_api(api_of: Callable[[], WatchedApi], on_lost: Callable[[str, str], object],
              done: threading.Event) -> None:
    """Look at the API every :data:`POLL_S` until ``done``; call ``on_lost(url, why)``
    once when it is lost, then return."""

    # one client for the watch: a client per probe loaded the CA bundle each second
    # (CPU every second), and a probe's client was still loading it when a refused run
    # ended: a thread in OpenSSL during the C library's exit handlers (hr_cli.process_exit)
    with httpx.Client(timeout=httpx.Timeout(PROBE_TIMEOUT_S), trust_env=False) as client:
        _look(api_of, on_lost, done, client)


def _look(api_of: Callable[[], WatchedApi], on_lost: Callable[[str, str], object],
          done: threading.Event, client: httpx.Client) -> None:
    refused_since: float | None = None
    seen = False
    while not done.is_set():
        if stop_requested():  # Ctrl-C / SIGTERM is stopping hr (and its server): not lost
            return
        api = api_of()
        if api.url is not None:
            seen = seen or api.answered
            if _gone(api.pid):
                on_lost(api.url, f"the hr server's process {api.pid} is gone")
                return
            if not _refused(client, api.url.rstrip("/") + "/health"):
                refused_since, seen = None, True
            elif seen:
                now = time.monotonic()
                refused_since = refused_since or now
                if now - refused_since >= LOST_AFTER_S and not done.is_set():
                    on_lost(api.url, f"connection refused for {LOST_AFTER_S:.0f} s")
                    return
        done.wait(POLL_S)


@contextlib.contextmanager
def watching_api(api_of: Callable[[], WatchedApi], resume: str | None) -> Iterator[None]:
    """Within the block, watch the API ``api_of()`` describes (asked before each look:
    a temporary server's URL is known once it runs); ``resume``: the command that resumes
    (``None``: a fresh run, which starts over).

    The first look is at once: a server killed in the block's first second is noticed.
    """
    raised = logging.raiseExceptions
    # Prefect's API log worker writes "--- Error logging to API ---" to stderr while the
    # API is gone, unless logging.raiseExceptions is off
    logging.raiseExceptions = False
    quiet = _Unreachable()
    handlers = _console_handlers()
    for handler in handlers:
        handler.addFilter(quiet)
    done = threading.Event()

    def lost(url: str, why: str) -> None:
        _lost(url, resume, why)

    thread = threading.Thread(target=watch_api, args=(api_of, lost, done), name="hr-api-watch",
                              daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=_JOIN_S)  # a probe under way ends within its timeouts
        logging.raiseExceptions = raised
        for handler in handlers:
            handler.removeFilter(quiet)
