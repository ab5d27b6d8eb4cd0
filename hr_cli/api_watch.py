"""A Prefect server that dies while hr runs a benchmark costs seconds, not minutes.

hr's behaviour (one, documented in docs/debugging.md): while ``hr run`` (or
``hr demo``) runs, a thread asks the Prefect API's ``/health`` every 2 s. When
the server refuses connections for :data:`LOST_AFTER_S` in a row (it died, or was
stopped), hr stops at once, as on Ctrl-C: no new arm call starts, every open
benchmark's journal is flushed and its manifest marked ``interrupted``, the
processes hr started are stopped, one line names the unreachable server and the
command that resumes, and hr exits with status :data:`EXIT_API_LOST`. Prefect's
own retries (minutes of connection errors and event dumps) never reach the
terminal. A server that answers slowly (a busy machine) is not lost: only refused
or reset connections count.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator

__all__ = ["EXIT_API_LOST", "LOST_AFTER_S", "watching_api"]

EXIT_API_LOST = 6
"""Exit status when the Prefect API stopped answering mid-run (the journal is flushed)."""

LOST_AFTER_S = 6.0
"""Seconds of refused connections after which the API counts as lost."""

_POLL_S = 2.0


def _refused(url: str) -> bool:
    """Whether ``GET url`` fails to connect (refused, reset, unreachable); a slow or
    erring answer is not a refusal."""
    import httpx

    try:
        httpx.get(url, timeout=5.0)
    except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError):
        return True
    except httpx.HTTPError:
        return False
    return False


def _lost(url: str, resume: str) -> None:
    """Stop as an interrupt does, say why in one line, exit with :data:`EXIT_API_LOST`."""
    from hr_cli.signals import stop_children
    from hr_core.engine.interrupt import flush_open, request_stop

    request_stop()
    lines = flush_open()
    stop_children()
    if sys.stdout.isatty():
        sys.stdout.write("\x1b[?25h\n")
    sys.stdout.flush()
    kept = "".join(f" {line.split('; run the same benchmark again')[0]}." for line in lines)
    print(f"hr: the Prefect API at {url} stopped answering (connection refused for "
          f"{LOST_AFTER_S:.0f} s); the benchmark stopped, its runs marked interrupted.{kept} "
          f"Start the server again (hr server start) and run {resume} to resume.",
          file=sys.stderr, flush=True)
    os._exit(EXIT_API_LOST)


@contextlib.contextmanager
def watching_api(url_of: Callable[[], str | None], resume: str) -> Iterator[None]:
    """Within the block, watch the API whose ``/api`` URL ``url_of()`` gives (``None``
    while not known yet, e.g. a temporary server still starting)."""
    import logging

    # Prefect's API log worker writes "--- Error logging to API ---" to stderr while the
    # API is gone (it follows logging.raiseExceptions): hr says it once, in its own line
    logging.raiseExceptions = False
    done = threading.Event()

    def watch() -> None:
        refused_since: float | None = None
        while not done.wait(_POLL_S):
            url = url_of()
            if url is None:
                continue
            health = url.rstrip("/") + "/health"
            if not _refused(health):
                refused_since = None
                continue
            now = time.monotonic()
            refused_since = refused_since or now
            if now - refused_since >= LOST_AFTER_S and not done.is_set():
                _lost(url, resume)

    thread = threading.Thread(target=watch, name="hr-api-watch", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
