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

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

__all__ = ["PARK_S", "Interruptible", "clear_stop", "flush_open", "handling_signals",
           "park", "reassert_handlers", "register", "request_stop", "stop_requested",
           "unregister"]

_STOP = threading.Event()
_OPEN: list[Interruptible] = []
_LOCK = threading.Lock()
_HANDLERS: dict[int, Any] = {}

PARK_S = 30.0
"""How long :func:`park` waits for the stopping process to exit before raising."""


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


@contextlib.contextmanager
def handling_signals(handler: Callable[[int, Any], Any],
                     signals: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)) -> Iterator[None]:
    """Handle ``signals`` with ``handler`` for the block (main thread only; else a no-op).

    Prefect swaps its own SIGTERM handler in while a flow runs; a benchmark
    session puts this one back when it opens (:func:`reassert_handlers`).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handler) for sig in signals}
    _HANDLERS.update(dict.fromkeys(signals, handler))
    try:
        yield
    finally:
        for sig, old in previous.items():
            _HANDLERS.pop(sig, None)
            signal.signal(sig, old)


def reassert_handlers() -> None:
    """Put back the handlers of :func:`handling_signals` if something replaced them."""
    if not _HANDLERS or threading.current_thread() is not threading.main_thread():
        return
    for sig, handler in list(_HANDLERS.items()):
        if signal.getsignal(sig) is not handler:
            signal.signal(sig, handler)


async def park() -> None:
    """After a stop request: write no results (the runs not made would read as done);
    wait for the signal handler to end the process, then raise ``KeyboardInterrupt``."""
    await asyncio.sleep(PARK_S)
    raise KeyboardInterrupt


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
