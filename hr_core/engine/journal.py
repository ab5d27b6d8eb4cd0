"""A durable, append-only journal of finished runs (JSON lines, fsync'ed in batches)."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any

import orjson

__all__ = ["FLUSH_INTERVAL_S", "Journal", "RunKey"]

FLUSH_INTERVAL_S = 0.5
"""Seconds between flushes while a benchmark runs (the SPEC asks for at most ~1 s)."""

RunKey = tuple[str, str, int]


class Journal:
    """Finished runs, one JSON object a line, appended and fsync'ed in batches.

    A process killed mid-write leaves at most one partial last line: reading
    ignores it and the next writer cuts it off before appending. Reading keeps
    the first record of each ``(arm, item_id, run)``.

    Example:
        >>> import tempfile
        >>> journal = Journal(Path(tempfile.mkdtemp()) / "journal.jsonl")
        >>> journal.append({"arm": "a", "item_id": "q1", "run": 1})
        >>> journal.flush()
        1
        >>> list(journal.read())
        [('a', 'q1', 1)]
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._buffer: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._repaired = False

    def read(self) -> dict[RunKey, dict[str, Any]]:
        """Every complete record, de-duplicated by ``(arm, item_id, run)``."""
        if not self.path.exists():
            return {}
        records: dict[RunKey, dict[str, Any]] = {}
        data = self.path.read_bytes()
        for line in data.split(b"\n"):
            if not line:
                continue
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # a line cut short by a kill
            key = (record["arm"], record["item_id"], record["run"])
            records.setdefault(key, record)
        return records

    def append(self, record: dict[str, Any]) -> None:
        """Queue one record (not copied: do not change it); durable after the next :meth:`flush`."""
        with self._lock:
            self._buffer.append(record)

    def _repair(self) -> None:
        """Cut a partial last line left by a killed writer."""
        self._repaired = True
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return
        with self.path.open("rb+") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size == 0:
                return
            handle.seek(size - 1)
            if handle.read(1) == b"\n":
                return
            handle.seek(0)
            data = handle.read()
            handle.truncate(data.rfind(b"\n") + 1)

    def flush(self) -> int:
        """Write and fsync the queued records; returns how many were written."""
        with self._write_lock:
            if not self._repaired:
                self._repair()
            with self._lock:
                buffer, self._buffer = self._buffer, []
            if not buffer:
                return 0
            with self.path.open("ab", buffering=1 << 16) as handle:
                write, dumps, newline = handle.write, orjson.dumps, orjson.OPT_APPEND_NEWLINE
                for record in buffer:
                    write(dumps(record, option=newline))
                handle.flush()
                os.fsync(handle.fileno())
            return len(buffer)

    async def flush_every(self, interval: float = FLUSH_INTERVAL_S) -> None:
        """Flush in a worker thread every ``interval`` seconds until cancelled."""
        while True:
            await asyncio.sleep(interval)
            if self._buffer:
                await asyncio.to_thread(self.flush)
