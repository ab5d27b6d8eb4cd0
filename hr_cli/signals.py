"""Ctrl-C and SIGTERM while hr runs a benchmark: stop, keep what finished, exit at once.

A terminal's Ctrl-C sends SIGINT to the whole process group, so Prefect's
temporary API server (a child of hr) stops too; waiting for the flow to report
its end to a dead server took a long run of connection errors. Instead, on the
first SIGINT or SIGTERM hr:

1. starts no new arm call (``hr_core.run.interrupt.request_stop``);
2. flushes every open benchmark's journal and marks its manifest ``interrupted``;
3. stops the processes it started (Prefect's temporary server, local workers);
4. prints ``hr: interrupted`` (with where the finished runs are) and exits with
   status 130 (SIGINT) or 143 (SIGTERM), without a traceback.

Running the same command again resumes. A second signal exits at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hr_core.core.process import pid_alive
from hr_core.run.interrupt import flush_open, handling_signals, request_stop

__all__ = ["EXIT_INTERRUPTED", "EXIT_TERMINATED", "interruptible"]

EXIT_INTERRUPTED = 130
"""Exit status after Ctrl-C (SIGINT): 128 + 2."""
EXIT_TERMINATED = 143
"""Exit status after SIGTERM: 128 + 15."""

_CHILD_GRACE_S = 3.0
finishing = threading.Lock()


def _children() -> list[int]:
    """The PIDs of this process's direct children (from /proc; empty elsewhere)."""
    me = os.getpid()
    found = []
    with contextlib.suppress(OSError):
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                found.append(int(entry.name))
    return found


def stop_children(grace: float = _CHILD_GRACE_S) -> None:
    """SIGTERM the processes hr started, SIGKILL those still there after ``grace`` s."""
    children = _children()
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while children and time.monotonic() < deadline:
        children = [pid for pid in children if pid_alive(pid)]
        time.sleep(0.05)
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def _finish(signum: int) -> None:
    """Flush, stop the children, say so, exit (runs in its own thread)."""
    lines = flush_open()
    stop_children()
    if sys.stdout.isatty():
        sys.stdout.write("\x1b[?25h\n")  # the progress bars hid the cursor
    sys.stdout.flush()
    how = "" if signum == signal.SIGINT else " (SIGTERM)"
    detail = f": {'; '.join(lines)}" if lines else ""
    print(f"hr: interrupted{how}{detail}", file=sys.stderr, flush=True)
    os._exit(EXIT_INTERRUPTED if signum == signal.SIGINT else EXIT_TERMINATED)


def _handle(signum: int, frame: Any) -> None:
    request_stop()
    if not finishing.acquire(blocking=False):  # a second signal: go now
        stop_children(grace=0.5)
        os._exit(EXIT_INTERRUPTED if signum == signal.SIGINT else EXIT_TERMINATED)
    threading.Thread(target=_finish, args=(signum,), name="hr-interrupt", daemon=True).start()


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Handle Ctrl-C and SIGTERM as above while the block runs (main thread only)."""
    with handling_signals(_handle):
        yield
