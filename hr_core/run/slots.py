"""An arm's concurrency across processes: ``size`` lock files, one per call in flight.

On Dask or Ray every chunk is submitted at once and runs wherever a worker
thread is free, so a per-chunk semaphore lets ``chunks x concurrency`` calls of
one arm run at a time. :class:`SharedSlots` holds the bound across every
process that can see one folder (the run folder, as for the budget ledger): a
call takes a slot by locking one of ``size`` files with ``flock`` and gives it
back by unlocking it. The kernel drops the locks of a process that dies, so a
killed worker never keeps a slot. A call that finds every slot taken polls again
after a short, growing sleep (2 ms up to 50 ms): a slot freed elsewhere is taken
within that time, small next to a model call.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import random
import threading
from pathlib import Path
from typing import Any

__all__ = ["SharedSlots"]

_FIRST_WAIT_S = 0.002
_LONGEST_WAIT_S = 0.05


class SharedSlots:
    """At most ``size`` holders at a time across processes (an async context manager).

    Pickles as its folder and size; each process opens the files on first use.

    Example:
        >>> import asyncio, tempfile
        >>> slots = SharedSlots(tempfile.mkdtemp(), "arm", 2)
        >>> async def one() -> str:
        ...     async with slots:  # one of the 2 slots taken until the block ends
        ...         return "called"
        >>> asyncio.run(one())
        'called'
    """

    def __init__(self, folder: str | Path, name: str, size: int) -> None:
        self.folder = str(folder)
        self.name = name
        self.size = max(1, int(size))
        self._fds: list[int] = []
        self._pid = -1
        self._held: dict[Any, int] = {}  # the task holding each taken slot -> its index
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"folder": self.folder, "name": self.name, "size": self.size}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["folder"], state["name"], state["size"])  # type: ignore[misc]

    def _files(self) -> list[int]:
        if self._pid != os.getpid():  # first use in this process (or a fork of it)
            Path(self.folder).mkdir(parents=True, exist_ok=True)
            self._fds = [os.open(Path(self.folder) / f"{self.name}.{i}.slot",
                                 os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                         for i in range(self.size)]
            self._pid = os.getpid()
            self._held = {}
        return self._fds

    def _try(self, holder: Any) -> bool:
        with self._lock:
            fds = self._files()
            taken = set(self._held.values())
            start = random.randrange(self.size)
            for step in range(self.size):
                index = (start + step) % self.size
                if index in taken:  # this process's own lock: flock would grant it again
                    continue
                try:
                    fcntl.flock(fds[index], fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                self._held[holder] = index
                return True
        return False

    async def __aenter__(self) -> SharedSlots:
        holder, wait = asyncio.current_task(), _FIRST_WAIT_S
        while not self._try(holder):
            await asyncio.sleep(wait * (0.5 + random.random()))
            wait = min(wait * 1.5, _LONGEST_WAIT_S)
        return self

    async def __aexit__(self, *exc: object) -> None:
        with self._lock:
            index = self._held.pop(asyncio.current_task())
            fcntl.flock(self._fds[index], fcntl.LOCK_UN)

    def close(self) -> None:
        """Close this process's files (the locks go with them)."""
        with self._lock:
            if self._pid == os.getpid():
                for fd in self._fds:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            self._fds, self._pid, self._held = [], -1, {}
