"""A durable, append-only journal of finished runs (JSON lines, fsync'ed in batches)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from hr_core.core.errors import StoreWriteError
from hr_core.core.identity import fingerprint
from hr_core.core.json_text import jsonl_lines
from hr_core.data.reference import Reference
from hr_core.results import USAGE_KINDS
from hr_core.store.contexts_file import (
    append_contexts,
    fill_contexts,
    judge_record,
    read_contexts,
)
from hr_core.store.record import RunKey, RunRecord, decode, encode

__all__ = ["FLUSH_INTERVAL_S", "Journal", "RunKey", "fallback_path", "journal_lines",
           "write_error"]

FLUSH_INTERVAL_S = 0.5
"""Seconds between flushes while a benchmark runs (the SPEC asks for at most ~1 s)."""

_SHOWN = 10  # garbled line numbers a message lists


def write_error(path: str | os.PathLike[str], exc: OSError) -> StoreWriteError:
    """A :class:`StoreWriteError` naming the path and the cause of a failed write.

    Example:
        >>> import errno
        >>> str(write_error("r/x.parquet", OSError(errno.ENOSPC, "No space left on device")))
        'cannot write r/x.parquet: No space left on device (errno 28)'
    """
    cause = exc.strerror or str(exc) or type(exc).__name__
    code = f" (errno {exc.errno})" if exc.errno else ""
    error = StoreWriteError(f"cannot write {os.fspath(path)}: {cause}{code}")
    error.errno = exc.errno
    return error


def fallback_path(path: str | os.PathLike[str]) -> Path:
    """Where a journal's records go when its own file cannot be written (read-only or
    full store): ``$HR_JOURNAL_DIR`` (default ``~/.cache/hr/journal``), one file per
    journal. The next run of the same benchmark reads it back and moves it home."""
    digest = fingerprint(os.path.abspath(os.fspath(path)), 16)
    base = os.environ.get("HR_JOURNAL_DIR") or Path.home() / ".cache" / "hr" / "journal"
    return Path(base) / f"fallback-{digest}.jsonl"


def _append(path: Path, records: list[RunRecord] | bytes, aside: Path | None = None) -> None:
    """Append records (or whole journal lines) to ``path`` and fsync.

    Records go through the file's 64 KB buffer a line at a time: each line's bytes are
    freed as soon as they are copied, so a flush reuses the same few pages instead of
    holding every line and then their join (fresh memory for every flush, page faults
    that cost more than encoding the records, dear on a virtual machine).

    ``aside`` (the journal's contexts file): the passages of the judged records
    (``contexts_line`` set) are appended and fsync'ed there first, and their journal lines
    leave them out, so a journal line never names passages its contexts file lacks.
    """
    if aside is not None and not isinstance(records, bytes):
        append_contexts(aside, records)
    with path.open("ab", buffering=1 << 16) as handle:
        if isinstance(records, bytes):
            handle.write(records)
        else:
            write = handle.write
            keep_out = aside is not None
            for record in records:
                write(encode(record, keep_out))
        handle.flush()
        os.fsync(handle.fileno())


_KINDS = frozenset(USAGE_KINDS)


class Journal:
    """Finished runs, one JSON object a line, appended and fsync'ed in batches.

    A process killed mid-write leaves at most one partial last line: reading
    ignores it and the next writer cuts it off before appending. Any other line that
    is not JSON (garbled) is skipped too, and named: :attr:`garbled`,
    :meth:`garbled_message`. Reading keeps
    the latest record of each ``(arm, item_id, run)`` (a re-scored run's new
    record wins). Records are :class:`~hr_core.store.record.RunRecord`, written
    and read by its codec (``engine/record.py``).

    The first write that fails (read-only or full store) sets :attr:`error` (the
    benchmark then starts no new call) and every record not written goes to the
    :func:`fallback_path` instead (or stays in memory when that fails too);
    :meth:`read` reads the fallback too and the next successful flush moves it
    into the journal.

    Example:
        >>> import tempfile
        >>> journal = Journal(Path(tempfile.mkdtemp()) / "journal.jsonl")
        >>> journal.append(RunRecord(arm="a", item_id="q1", run=1))
        >>> journal.flush()
        1
        >>> list(journal.read())
        [('a', 'q1', 1)]
    """

    def __init__(self, path: Path, fallback: Path | None = None) -> None:
        self.path = Path(path)
        self.fallback = fallback_path(self.path) if fallback is None else Path(fallback)
        self._buffer: list[RunRecord] = []
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._repaired = False
        self.error: StoreWriteError | None = None
        """The first failed write (path and cause); ``None`` while every write worked."""
        self.written = 0
        """Records written to the journal itself by this process."""
        self.kept: list[RunRecord] = []
        """Records that could be written neither to the journal nor to the fallback."""
        self.in_fallback = 0
        """Records this process wrote to the fallback journal."""
        self.garbled: dict[Path, list[int]] = {}
        """The garbled lines (numbers, from 1) the last :meth:`read` skipped, by file: not
        JSON, yet not the torn last line a killed writer leaves (:func:`journal_lines`)."""
        self.sealed = False
        """Set by :meth:`seal`: nothing more is written."""
        self.has_kinds = False
        """Whether a record this journal queued or read has usage by kind of token (cache
        reads/writes, reasoning, cost by kind): the runs table then has their columns."""
        self.made: list[RunRecord] | None = None
        """When a list, every record :meth:`append` queues is kept there too, in order: the
        runs table of a small new run is built from them, not read back
        (:func:`hr_core.store.rows.write_runs`). The first record with contexts sets it
        to ``None``: a run's passages are not all kept in memory."""
        self.reference: Reference | None = None
        """The benchmark's reference, set by the session: each record with contexts is
        then judged when written (:func:`judge_record`) and its passages go to
        :attr:`contexts_path`, not the journal (the runs table reads only the journal).
        Unset (worker journals, a journal read elsewhere): the passages stay in the line."""

    @property
    def contexts_path(self) -> Path:
        """The journal's contexts file: ``journal.contexts.jsonl`` beside ``journal.jsonl``,
        one line per judged run with contexts (``{"arm", "item_id", "run", "contexts"}``;
        the latest line of a run wins)."""
        return self.path.with_name(f"{self.path.stem}.contexts.jsonl")

    def read_contexts(self, keys: set[RunKey] | None = None) -> dict[RunKey, list[dict[str, Any]]]:
        """The passages :attr:`contexts_path` holds, by run (:func:`read_contexts`)."""
        return read_contexts(self.contexts_path, keys)

    def fill_contexts(self, records: Iterable[RunRecord]) -> int:
        """Put back the passages of records read from the journal without them
        (:func:`fill_contexts`); returns how many."""
        return fill_contexts(self.contexts_path, records)

    def read(self) -> dict[RunKey, RunRecord]:
        """Every complete record (the worker journals' and then the fallback's after the
        journal's), de-duplicated by ``(arm, item_id, run)``; the garbled lines skipped
        are in :attr:`garbled`."""
        records: dict[RunKey, RunRecord] = {}
        self.garbled = {}
        for path in self.files():
            garbled: list[int] = []
            for _, _, record in journal_lines(path, garbled):
                records[(record.arm, record.item_id, record.run)] = record
                if not self.has_kinds and not _KINDS.isdisjoint(record.__dict__):
                    self.has_kinds = True
            if garbled:
                self.garbled[path] = garbled
        return records

    def garbled_message(self) -> str | None:
        """One line naming the garbled lines the last :meth:`read` skipped (each file, how
        many, their numbers); ``None`` when there were none.

        Example:
            >>> import tempfile
            >>> path = Path(tempfile.mkdtemp()) / "journal.jsonl"
            >>> _ = path.write_bytes(b'{"arm":"a","item_id":"q1","run":1}\\n#@!\\n')
            >>> journal = Journal(path)
            >>> len(journal.read()), journal.garbled_message() == (
            ...     f"{path}: 1 garbled line(s) skipped (line 2): not JSON, and not the torn "
            ...     "last line a killed writer leaves; a run they held is made again")
            (1, True)
        """
        if not self.garbled:
            return None
        parts = []
        for path, numbers in self.garbled.items():
            shown = ", ".join(map(str, numbers[:_SHOWN]))
            more = f", ... {len(numbers) - _SHOWN} more" if len(numbers) > _SHOWN else ""
            parts.append(f"{path}: {len(numbers)} garbled line(s) skipped "
                         f"(line{'s' if len(numbers) > 1 else ''} {shown}{more})")
        return (f"{'; '.join(parts)}: not JSON, and not the torn last line a killed writer "
                "leaves; a run they held is made again")

    def garbled_record(self) -> dict[str, Any]:
        """The garbled lines the last :meth:`read` skipped, for the manifest: ``{"count":
        n, "lines": {file name: [line numbers (the first 1000)]}}``."""
        return {"count": sum(map(len, self.garbled.values())),
                "lines": {path.name: numbers[:1000] for path, numbers in self.garbled.items()}}

    def files(self) -> list[Path]:
        """The files that hold this journal's records, in reading order: the journal,
        the worker journals (:meth:`worker_files`), the fallback; those that exist."""
        paths = [self.path, *self.worker_files(), self.fallback]
        return [path for path in paths if path.exists()]

    def worker_path(self, chunk: int) -> Path:
        """A new worker journal for one attempt of chunk ``chunk`` (a Dask or Ray worker
        writes its finished runs there as they finish):
        ``journal.w-<chunk>-<uuid>.jsonl`` beside the journal."""
        return self.path.with_name(f"{self.path.stem}.w-{chunk}-{uuid.uuid4().hex}.jsonl")

    def worker_files(self, chunk: int | None = None) -> list[Path]:
        """The worker journals beside this journal (of one chunk's attempts, or all)."""
        tag = "*" if chunk is None else f"{chunk}-*"
        return sorted(self.path.parent.glob(f"{self.path.stem}.w-{tag}.jsonl"))

    def take_in_workers(self) -> int:
        """Append every worker journal's whole records to the journal (fsync'ed), then
        delete the worker journals; returns how many files were taken in."""
        sides = self.worker_files()
        if not sides:
            return 0
        self.flush()  # repairs the journal's last line first
        if self.error is not None:
            return 0
        for side in sides:
            with side.open("rb") as handle:
                end, newline = _records_end(handle)
                handle.seek(0)
                data = handle.read(end)
            try:
                _append(self.path, data + b"\n" if newline else data)
            except OSError as exc:
                self.error = write_error(self.path, exc)
                return 0
            side.unlink()
        return len(sides)

    def clear(self) -> None:
        """Delete the journal, its contexts file, its worker journals and its fallback (a run
        started over)."""
        for path in (self.path, self.contexts_path, *self.worker_files(), self.fallback):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def append(self, record: RunRecord) -> None:
        """Queue one record (not copied: do not change it); durable after the next :meth:`flush`."""
        with self._lock:
            self._buffer.append(record)
            if not self.has_kinds and not _KINDS.isdisjoint(record.__dict__):
                self.has_kinds = True
            if self.made is not None:
                if record.contexts is None:
                    self.made.append(record)
                else:  # passages (up to 100 KB a run): the table reads them back instead
                    self.made = None

    def _repair(self) -> None:
        """End a journal's last line: add the newline a whole record lacks, cut a torn
        line left by a killed writer (:func:`journal_lines`' rule); take in a fallback
        journal."""
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        for path in (self.path, self.contexts_path):
            if path.exists():
                with path.open("rb+") as handle:
                    end, newline = _records_end(handle)
                    handle.truncate(end)
                    if newline:
                        handle.seek(end)
                        handle.write(b"\n")
        if self.fallback.exists():  # left by a run whose store could not be written
            with self.fallback.open("rb") as handle:
                end, newline = _records_end(handle)
                handle.seek(0)
                data = handle.read(end)
            _append(self.path, data + b"\n" if newline else data)
            self.fallback.unlink()
        self._repaired = True

    def seal(self) -> int:
        """Flush, then write nothing more (the run was interrupted: a call that ends later
        is not journaled, and is made again on resume), so what the journal's files hold
        is what a message about them says; returns how many records the flush wrote."""
        with self._write_lock:
            written = self._flush()
            self.sealed = True
            return written

    def flush(self) -> int:
        """Write and fsync the queued records; returns how many were written (none once
        :meth:`seal` ed).

        A write that fails sets :attr:`error` and sends the records (these and
        every later one) to the fallback journal; it raises nothing.
        """
        with self._write_lock:
            return self._flush()

    def _flush(self) -> int:
        with self._lock:
            buffer, self._buffer = self._buffer, []
        if self.sealed:
            return 0
        if self.error is None:
            try:
                if not self._repaired:
                    self._repair()
                if buffer:
                    aside = None
                    if self.reference is not None:
                        aside = self.contexts_path
                        for record in buffer:
                            if record.contexts is not None and record.contexts_line is None:
                                judge_record(record, self.reference)
                    _append(self.path, buffer, aside)
                    self.written += len(buffer)
                return len(buffer)
            except OSError as exc:
                self.error = write_error(self.path, exc)
        self._keep(buffer)
        return 0

    def _keep(self, buffer: list[RunRecord]) -> None:
        """Records the journal could not take: to the fallback file, else in memory."""
        pending = self.kept + buffer
        if not pending:
            return
        try:
            self.fallback.parent.mkdir(parents=True, exist_ok=True)
            _append(self.fallback, pending)
        except OSError:
            self.kept = pending
            return
        self.in_fallback += len(pending)
        self.kept = []

    def failure(self) -> StoreWriteError | None:
        """The journal's write failure as the one message a user sees: the path and the
        cause, where the finished runs are, and what to do; ``None`` without one."""
        if self.error is None:
            return None
        where = [f"{self.written} finished run(s) of this invocation are in the journal"]
        if self.in_fallback:
            where.append(f"{self.in_fallback} more were kept in {self.fallback} (the next "
                         "run reads them back)")
        if self.kept:
            where.append(f"{len(self.kept)} could not be saved anywhere and will be made "
                         "again")
        error = StoreWriteError(
            f"{self.error}; the run stopped at once: {'; '.join(where)}. Make the store "
            "writable (or free space) and run the benchmark again to resume")
        error.errno = self.error.errno
        return error

    async def flush_every(self, interval: float = FLUSH_INTERVAL_S) -> None:
        """Flush in a worker thread every ``interval`` seconds until cancelled."""
        while True:
            await asyncio.sleep(interval)
            if self._buffer:
                await asyncio.to_thread(self.flush)


def journal_lines(path: str | os.PathLike[str], garbled: list[int] | None = None
                  ) -> Iterator[tuple[int, bytes, RunRecord]]:
    """Every record of one journal file in written order: ``(offset, line, record)``.

    The one rule for a journal's lines, used by every reader (resume, the runs
    table, compaction, re-scoring) and by the writer's repair: lines end at ``"\\n"``
    alone (:func:`~hr_core.core.json_text.jsonl_lines`; a record's strings may hold U+2028);
    a line is a record when it parses as a JSON object with ``arm``, ``item_id`` and
    ``run``; the last line may lack its newline (a kill between a record and its
    newline) and is a record all the same when it parses, a torn line (cut short by a
    kill, skipped) when it does not. Any other line that does not parse is garbled: it
    is skipped and its number appended to ``garbled`` (when given). A line that parses
    but is no run record is a :class:`~hr_core.core.errors.CorruptRunError` naming the file
    and line. An ``outcome`` written once (it was the output) is put back.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "journal.jsonl"
        >>> line = b'{"arm":"a","item_id":"q%d","run":1}'
        >>> _ = path.write_bytes(line % 1 + b"\\n" + line % 2)  # the last newline lost
        >>> [(at, r.item_id) for at, _, r in journal_lines(path)]
        [(0, 'q1'), (35, 'q2')]
    """
    with open(path, "rb") as handle:
        for number, at, line in jsonl_lines(handle):
            record = decode(line, path, number)
            if record is not None:
                yield at, line, record
            elif garbled is not None and line.endswith(b"\n"):
                garbled.append(number)


def _records_end(handle: BinaryIO) -> tuple[int, bool]:
    """Where a journal file's records end, by :func:`journal_lines`' rule for its last
    line, and whether that end lacks its newline: ``(size, False)`` for a file ending in a
    newline, ``(size, True)`` for a whole last record without it, ``(start of the last
    line, False)`` for a torn one."""
    size = handle.seek(0, os.SEEK_END)
    if size == 0:
        return 0, False
    handle.seek(size - 1)
    if handle.read(1) == b"\n":
        return size, False
    start = size
    while True:  # back to the last line's start
        start = max(0, start - _TAIL)
        handle.seek(start)
        tail = handle.read(size - start)
        if start == 0 or b"\n" in tail:
            break
    begin = tail.rfind(b"\n") + 1
    try:
        orjson.loads(tail[begin:])
    except orjson.JSONDecodeError:
        return start + begin, False  # torn: cut it off
    return size, True  # a whole record without its newline: kept


_TAIL = 1 << 16
