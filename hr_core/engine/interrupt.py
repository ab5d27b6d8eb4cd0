"""Stopping running benchmarks from outside: the user's Ctrl-C or SIGTERM.

The command line's signal handler calls :func:`request_stop`: every open
benchmark session then starts no new call. :func:`flush_open` writes what the
open sessions finished to their journals (from any thread) and marks their
manifests ``interrupted``, so the next run of the same spec resumes.

Example:
    >>> stop_requested()
    False
"""

from __future__ import annotations

import contextlib
import threading
from typing import Protocol

__all__ = ["Interruptible", "clear_stop", "flush_open", "register", "request_stop",
           "stop_requested", "unregister"]

_STOP = threading.Event()
_OPEN: list[Interruptible] = []
_LOCK = threading.Lock()


class Interruptible(Protocol):
    """What :func:`flush_open` needs of an open benchmark session."""

    def interrupt(self) -> str:
        """Flush the journal, mark the run interrupted; a line saying what was kept."""
        ...


def request_stop() -> None:
    """Ask every open benchmark session to start no new call."""
    _STOP.set()


def stop_requested() -> bool:
    """Whether :func:`request_stop` was called (and not cleared)."""
    return _STOP.is_set()


def clear_stop() -> None:
    """Forget a stop request (a process that goes on after handling it)."""
    _STOP.clear()


def register(session: Interruptible) -> None:
    """Count ``session`` among the open ones (its journal is flushed on interrupt)."""
    with _LOCK:
        _OPEN.append(session)


def unregister(session: Interruptible) -> None:
    """``session`` is finished (or failed): nothing of it to flush any more."""
    with _LOCK, contextlib.suppress(ValueError):
        _OPEN.remove(session)


def flush_open() -> list[str]:
    """Flush every open session's journal; one line per session saying what was kept."""
    with _LOCK:
        sessions = list(_OPEN)
    lines = []
    for session in sessions:
        try:
            lines.append(session.interrupt())
        except Exception as exc:  # report it, keep flushing the others
            lines.append(f"could not save a run's journal: {type(exc).__name__}: {exc}")
    return lines
