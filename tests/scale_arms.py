"""Arms for the multi-process tests (Dask worker processes, Ray workers import them).

``tests/`` is on ``sys.path`` in pytest; worker processes get it from their parent
(Dask's spawned workers) or from ``PYTHONPATH`` (Ray workers, the test sets it).
"""

from __future__ import annotations

import time
from typing import Any

from hr_core import ArmResult

__all__ = ["Counted", "InFlight", "metered", "rate_limited", "reference_rows"]

TOKENS_PER_CALL = 10


def reference_rows(n: int) -> list[dict[str, Any]]:
    """``n`` items ``{"id": "qI", "question": "I", "label": "aI"}``."""
    return [{"id": f"q{i}", "question": str(i), "label": f"a{i}"} for i in range(n)]


def metered(question: str) -> ArmResult:
    """Right on every item; reports ``TOKENS_PER_CALL`` tokens and $0.001 a call."""
    time.sleep(0.01)  # long enough for chunks in other processes to overlap
    return ArmResult(answer=f"a{question}",
                     usage={"tokens_in": TOKENS_PER_CALL // 2,
                            "tokens_out": TOKENS_PER_CALL // 2, "cost_usd": 0.001})


async def rate_limited(question: str) -> str:
    """A provider behind a rate limit: each call waits 50 ms (bench/operations simulation)."""
    import asyncio

    await asyncio.sleep(0.05)
    return f"a{question}"


class Counted:
    """An arm that appends ``<pid> <question>`` to a file for each call (calls counted
    across worker processes) and answers right after ``delay`` seconds."""

    def __init__(self, path: str, delay: float = 0.02) -> None:
        self.path = path
        self.delay = delay

    def __call__(self, question: str) -> str:
        import os

        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()} {question}\n")
        time.sleep(self.delay)
        return f"a{question}"


class InFlight:
    """An arm that counts its calls in flight across processes in a file (locked with
    ``flock``) and appends the count seen at each call's start to ``<path>.seen``."""

    def __init__(self, path: str, delay: float = 0.05) -> None:
        self.path = path
        self.delay = delay

    def _add(self, step: int) -> int:
        import fcntl
        import os

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            now = int(os.read(fd, 32) or b"0") + step
            os.lseek(fd, 0, os.SEEK_SET)
            os.ftruncate(fd, 0)
            os.write(fd, str(now).encode())
            if step > 0:
                with open(self.path + ".seen", "a", encoding="utf-8") as seen:
                    seen.write(f"{now}\n")
            return now
        finally:
            os.close(fd)

    def __call__(self, question: str) -> str:
        self._add(1)
        try:
            time.sleep(self.delay)
        finally:
            self._add(-1)
        return f"a{question}"
