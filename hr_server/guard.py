"""A server hr starts dies with hr, even when hr is killed with SIGKILL.

Prefect's temporary server is a ``uvicorn`` child of the hr process; when hr is
killed it used to live on (parent PID 1, its memory held) until someone stopped it.
:func:`guard` starts a tiny watchdog beside it: a Python process that holds the
read end of a pipe whose write end only hr holds. Any death of hr closes the
pipe (the kernel does it, whatever the signal), the watchdog's read returns at
once, and it stops the server (SIGTERM, then SIGKILL after 3 s), checking the
process start time so that a reused PID is never signalled. When hr ends
normally it stops the server itself (``stop``), closes the pipe and waits for
the watchdog to exit, so that nothing of hr's is left once hr has exited (a CI
run saw the watchdog still there a moment later). The watchdog is in its own
session, so Ctrl-C on hr's terminal does not reach it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import sys
from collections.abc import Callable

__all__ = ["guard"]

_WATCHDOG = r"""
import os, signal, sys, time
fd, pid, started = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
while os.read(fd, 1):
    pass
def same():
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19] == started
    except OSError:
        return False
if same():
    os.kill(pid, signal.SIGTERM)
    for _ in range(60):
        time.sleep(0.05)
        if not same():
            break
    else:
        os.kill(pid, signal.SIGKILL)
"""


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks (field 22 of /proc/PID/stat), or None."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[19]
    except OSError:
        return None


def guard(pid: int, stop: Callable[[], object] | None = None) -> subprocess.Popen[bytes] | None:
    """Start the watchdog that stops process ``pid`` when this process dies (Linux; on
    systems without /proc nothing is started). At a normal exit ``stop`` (if given)
    stops the process first, then the watchdog is released and waited for."""
    started = _start_time(pid)
    if started is None:
        return None
    read_end, write_end = os.pipe()
    try:
        watchdog = subprocess.Popen(
            [sys.executable, "-S", "-c", _WATCHDOG, str(read_end), str(pid), started],
            pass_fds=(read_end,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    finally:
        os.close(read_end)
    os.set_inheritable(write_end, False)  # only this process holds it: children exit freely
    atexit.register(_release, write_end, watchdog, stop)
    return watchdog


_WATCHDOG_EXIT_S = 5.0  # it sends SIGKILL 3 s after SIGTERM, so this is enough


def _release(write_end: int, watchdog: subprocess.Popen[bytes],
             stop: Callable[[], object] | None) -> None:
    """At exit: stop the guarded process, close the pipe, wait for the watchdog."""
    if stop is not None:
        with contextlib.suppress(Exception):
            stop()
    with contextlib.suppress(OSError):
        os.close(write_end)
    try:
        watchdog.wait(timeout=_WATCHDOG_EXIT_S)
    except subprocess.TimeoutExpired:
        watchdog.kill()
        watchdog.wait()
