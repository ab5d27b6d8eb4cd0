"""One benchmark run at a time per run folder: an exclusive lock that names its holder.

The lock is ``run.lock`` beside the journal (in the run folder of a local store),
held with ``flock`` for the life of the run: the kernel releases it when the
holding process ends in any way (``kill -9`` included), so a lock left by a gone
process is simply taken over. The file says who holds it (host, PID, start
time) so that a refused run can name it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hr_core.core.errors import RunLockedError
from hr_core.store.journal import write_error

__all__ = ["LOCK_FILE", "RunLock"]

LOCK_FILE = "run.lock"
_POLL_S = 0.2


class RunLock:
    """The lock of one run folder (``folder/run.lock``).

    Example:
        >>> import tempfile
        >>> first, second = RunLock(tempfile.mkdtemp()), None
        >>> first.acquire()
        >>> second = RunLock(first.path.parent)
        >>> try:
        ...     second.acquire()
        ... except RunLockedError as exc:
        ...     "is being run by" in str(exc)
        True
        >>> first.release()
        >>> second.acquire(); second.release()
    """

    def __init__(self, folder: str | os.PathLike[str], label: str | None = None) -> None:
        self.path = Path(folder) / LOCK_FILE
        self.label = label or os.fspath(folder)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

    def holder(self) -> dict[str, Any]:
        """Who holds (or last held) the lock, as written in the file."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8") or "{}")
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def running(self) -> str | None:
        """``"PID 123 on host since ..."`` when a process holds the lock now, else ``None``.

        A probe that never creates the file; it takes a shared lock for an instant (a run
        starting in that instant is refused as if this were a run: it can retry).
        """
        if self._fd is not None:
            return self._holder_text()
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return self._holder_text()
        except OSError:
            return None
        finally:
            os.close(fd)  # closing releases a lock it took
        return None

    def _holder_text(self) -> str:
        holder = self.holder()
        if not holder:
            return "another process"
        return (f"PID {holder.get('pid')} on {holder.get('host')} since "
                f"{holder.get('started_at')}")

    def _describe(self) -> str:
        return f"{self.label} is being run by {self._holder_text()}"

    def acquire(self, wait: bool = False, on_wait: Callable[[str], Any] | None = None) -> None:
        """Take the lock; :class:`RunLockedError` naming the holder when another has it.

        ``wait=True`` waits until it is free instead (``on_wait(message)`` is called
        once, saying whom it waits for).
        """
        if self._fd is not None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # read-only: an fd open for writing would keep the file system from being
            # remounted read-only; flock needs none
            fd = os.open(self.path, os.O_RDONLY | os.O_CREAT, 0o644)
        except OSError as exc:
            raise write_error(self.path, exc) from None
        told = False
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not wait:
                        raise RunLockedError(
                            f"{self._describe()}; one run of a spec at a time: wait for it "
                            "to finish (`hr run --wait` waits), or stop that process"
                        ) from None
                    if not told and on_wait is not None:
                        on_wait(f"waiting: {self._describe()}")
                    told = True
                    time.sleep(_POLL_S)
        except BaseException:
            os.close(fd)
            raise
        owner = {"host": socket.gethostname(), "pid": os.getpid(),
                 "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        with contextlib.suppress(OSError):  # the name is a courtesy; the flock is the lock
            self.path.write_text(json.dumps(owner), encoding="utf-8")
        self._fd = fd

    def __del__(self) -> None:  # a session dropped without close(): do not leak the fd
        self.release()

    def release(self) -> None:
        """Let the lock go (the file stays, naming the last holder)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
