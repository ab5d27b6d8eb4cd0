"""The runs table of a finished benchmark, built from its journal in batches.

A benchmark of a million runs cannot keep a million record dicts (~1 KB each) in
memory. The journal already holds every finished run on disk, so the session
keeps none of them. At the end :func:`write_runs` streams ``runs.parquet`` from
it: one pass notes where each run's latest line is (16 bytes a line), a second
reads the lines in plan order (arms, items, runs) :data:`BATCH` at a time, with
the runs never made as ``budget_stop`` rows, and writes each batch's table
through a ``pyarrow.parquet.ParquetWriter``: neither every record nor the whole
table is ever in memory. :func:`runs_table` builds the same table in memory.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import orjson
import pandas as pd

from hr_core.engine.benchmark import runs_frame
from hr_core.engine.journal import Journal
from hr_core.engine.memory import give_back
from hr_core.engine.runner import stopped_record
from hr_core.reference import Reference

__all__ = ["BATCH", "ROW_GROUP", "RunPositions", "compact_journal", "journal_records",
           "runs_table", "write_runs"]

BATCH = 16_384
"""Journal records turned into one table at a time."""

ROW_GROUP = 32_768
"""Rows of ``runs.parquet`` per row group (batches are gathered up to it before a write):
what a table showing a few rows reads of a text column at most."""


class RunPositions:
    """Each planned run's place in the runs table: arms in order, then items, then runs.

    Example:
        >>> from hr_core import hr_reference
        >>> ref = hr_reference([{"id": "q1", "label": "a"}, {"id": "q2", "label": "b"}])
        >>> places = RunPositions(["x", "y"], {"x": 1, "y": 2}, ref)
        >>> places.total, places.of("y", "q2", 2)
        (6, 5)
    """

    def __init__(self, arms: Sequence[str], runs: Mapping[str, int], reference: Reference) -> None:
        self.arms = list(arms)
        self.runs = [runs[a] for a in self.arms]
        self.reference = reference
        self.index = {item.id: i for i, item in enumerate(reference)}
        n = len(reference)
        self.offsets = np.cumsum([0] + [n * r for r in self.runs])
        self._arm = {a: (int(self.offsets[i]), self.runs[i]) for i, a in enumerate(self.arms)}
        self.total = int(self.offsets[-1])

    def of(self, arm: str, item_id: str, run: int) -> int:
        """The position of one run, ``-1`` for a run this plan does not have."""
        place = self._arm.get(arm)
        index = self.index.get(item_id)
        if place is None or index is None or not 1 <= run <= place[1]:
            return -1
        return place[0] + index * place[1] + run - 1

    def stopped(self, positions: np.ndarray, judge: bool) -> pd.DataFrame:
        """The ``budget_stop`` rows of runs never made, at ``positions``."""
        return runs_frame([self.stopped_record(p) for p in positions.tolist()], judge=judge)

    def stopped_record(self, position: int) -> dict[str, Any]:
        """The ``budget_stop`` record of the run at ``position`` (never made)."""
        a = int(np.searchsorted(self.offsets, position, side="right")) - 1
        index, run = divmod(position - int(self.offsets[a]), self.runs[a])
        return stopped_record(self.arms[a], self.reference.items[index], run + 1)


def _journal_lines(journal: Journal) -> Iterator[tuple[bytes, dict[str, Any]]]:
    for path in (journal.path, getattr(journal, "fallback", None)):
        if path is None or not Path(path).exists():
            continue
        with open(path, "rb") as handle:
            for line in handle:
                if not line.endswith(b"\n"):
                    continue  # a line cut short by a kill
                try:
                    record = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(record, dict):
                    yield line, record


def journal_records(journal: Journal) -> Iterator[dict[str, Any]]:
    """Every complete record of a journal (its file, then its fallback), in written order.

    Lines cut short by a kill are skipped, as :meth:`Journal.read` skips them; a
    record whose ``outcome`` was left out because it equals the output gets it back.
    """
    for _, record in _journal_lines(journal):
        if "outcome" not in record:
            record["outcome"] = record.get("output")
        yield record
    yield from getattr(journal, "kept", ())


def runs_table(records: Iterable[Mapping[str, Any]], positions: RunPositions, *,
               judge: bool = False) -> tuple[pd.DataFrame, int]:
    """The runs table in plan order from records in any order (the latest of a run wins).

    Runs of the plan without a record are ``budget_stop`` rows; records of runs
    the plan does not have are left out. Records become small tables
    :data:`BATCH` at a time, and the batches are joined and put in order one
    column at a time, so at most one column is ever held twice.

    Returns:
        The table (``Benchmark.runs``) and how many records were superseded by a
        later record of the same run (a re-scored run, a resume).
    """
    parts: dict[str, list[pd.Series]] = {}
    places: list[np.ndarray] = []
    batch: list[Mapping[str, Any]] = []
    batch_places: list[int] = []

    def add(frame: pd.DataFrame, where: np.ndarray) -> None:
        for column in frame.columns:
            parts.setdefault(column, []).append(frame[column])
        places.append(where)

    def flush() -> None:
        if batch:
            add(runs_frame(batch, judge=judge), np.asarray(batch_places, dtype=np.int64))
            batch.clear()
            batch_places.clear()

    for record in records:
        position = positions.of(record["arm"], record["item_id"], record["run"])
        if position < 0:
            continue
        batch.append(record)
        batch_places.append(position)
        if len(batch) >= BATCH:
            flush()
    flush()
    where = np.concatenate(places) if places else np.zeros(0, dtype=np.int64)
    present = np.zeros(positions.total, dtype=bool)
    present[where] = True
    superseded = len(where) - int(present.sum())
    missing = np.flatnonzero(~present)
    del present
    for start in range(0, len(missing), BATCH):
        add(positions.stopped(missing[start:start + BATCH], judge), missing[start:start + BATCH])
    where = np.concatenate(places) if places else where
    places.clear()
    if superseded:  # keep the last record of each run
        last = len(where) - 1 - np.unique(where[::-1], return_index=True)[1]
        order = last[np.argsort(where[last], kind="stable")]
    else:
        order = np.argsort(where, kind="stable")
    in_order = len(order) == len(where) and bool((order[1:] > order[:-1]).all())
    del where
    empty = runs_frame([], judge=judge)
    columns: dict[str, pd.Series] = {}
    for column in empty.columns:
        pieces = parts.pop(column, [])
        joined = pd.concat(pieces, ignore_index=True) if pieces else empty[column]
        pieces.clear()
        columns[column] = (joined if in_order else joined.take(order)).reset_index(drop=True)
        del joined
    return pd.DataFrame(columns, copy=False), superseded


_KEPT = -1
"""The source of a record kept in memory (``Journal.kept``), not in a journal file."""


def _latest_lines(journal: Journal, positions: RunPositions
                  ) -> tuple[list[Path], np.ndarray, np.ndarray, np.ndarray, int]:
    """Where each planned run's latest record is: the files read, and per position its
    file number (:data:`_KEPT`: ``journal.kept``; ``-2``: no record), offset and length.
    Also how many records were superseded by a later one of the same run."""
    files = [p for p in (journal.path, getattr(journal, "fallback", None))
             if p is not None and Path(p).exists()]
    where, source, offset, size = array("q"), array("b"), array("q"), array("q")
    for number, path in enumerate(files):
        at = 0
        with open(path, "rb") as handle:
            for line in handle:
                length = len(line)
                if line.endswith(b"\n"):  # else a line cut short by a kill
                    try:
                        record = orjson.loads(line)
                    except orjson.JSONDecodeError:
                        record = None
                    if isinstance(record, dict):
                        place = positions.of(record["arm"], record["item_id"], record["run"])
                        if place >= 0:
                            where.append(place)
                            source.append(number)
                            offset.append(at)
                            size.append(length)
                at += length
    for index, record in enumerate(getattr(journal, "kept", ())):
        place = positions.of(record["arm"], record["item_id"], record["run"])
        if place >= 0:
            where.append(place)
            source.append(_KEPT)
            offset.append(index)
            size.append(0)
    places = np.frombuffer(where, dtype=np.int64) if where else np.zeros(0, np.int64)
    last = len(places) - 1 - np.unique(places[::-1], return_index=True)[1]  # the latest wins
    superseded = len(places) - len(last)
    at_source = np.full(positions.total, -2, dtype=np.int8)
    at_offset = np.zeros(positions.total, dtype=np.int64)
    at_size = np.zeros(positions.total, dtype=np.int64)
    if len(last):
        chosen = places[last]
        at_source[chosen] = np.frombuffer(source, dtype=np.int8)[last]
        at_offset[chosen] = np.frombuffer(offset, dtype=np.int64)[last]
        at_size[chosen] = np.frombuffer(size, dtype=np.int64)[last]
    return files, at_source, at_offset, at_size, superseded


def write_runs(journal: Journal, positions: RunPositions, sink: BinaryIO | str, *,
               judge: bool = False) -> tuple[int, int]:
    """Stream the runs table in plan order from a journal to Parquet (``runs.parquet``).

    The same table as :func:`runs_table` over :func:`journal_records` (same
    columns, dtypes and rows once read with ``pandas.read_parquet``), written
    :data:`BATCH` rows at a time: the latest record of each run, ``budget_stop``
    rows for the runs never made, records of runs the plan does not have left out.
    Memory: ~25 bytes per planned run, plus one row group.

    Returns:
        The rows written and how many records were superseded by a later record of
        the same run (a re-scored run, a resume).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    files, source, offset, size, superseded = _latest_lines(journal, positions)
    kept = list(getattr(journal, "kept", ()))
    schema = pa.Schema.from_pandas(runs_frame([], judge=judge), preserve_index=False)
    handles = [os.open(path, os.O_RDONLY) for path in files]
    pending: list[pa.Table] = []
    try:
        with pq.ParquetWriter(sink, schema) as writer:
            for start in range(0, positions.total, BATCH):
                stop = min(start + BATCH, positions.total)
                records = []
                for place, number, at, length in zip(
                        range(start, stop), source[start:stop].tolist(),
                        offset[start:stop].tolist(), size[start:stop].tolist(), strict=True):
                    if number >= 0:
                        record = orjson.loads(os.pread(handles[number], length, at))
                        if "outcome" not in record:
                            record["outcome"] = record.get("output")
                    elif number == _KEPT:
                        record = kept[at]
                    else:
                        record = positions.stopped_record(place)
                    records.append(record)
                pending.append(pa.Table.from_pandas(runs_frame(records, judge=judge),
                                                    schema=schema, preserve_index=False))
                del records
                if sum(t.num_rows for t in pending) >= ROW_GROUP:
                    writer.write_table(pa.concat_tables(pending), row_group_size=ROW_GROUP)
                    pending.clear()
            if pending or not positions.total:
                writer.write_table(pa.concat_tables(pending) if pending else schema.empty_table(),
                                   row_group_size=ROW_GROUP)
    finally:
        for handle in handles:
            os.close(handle)
        give_back()
    return positions.total, superseded


def compact_journal(journal: Journal) -> bool:
    """Rewrite a journal with the latest record of each run only (fallback merged in).

    Done once the results are safely written, when there is something to drop
    (superseded records, a fallback journal); the journal itself stays, since a
    resume and the re-scoring of stored outputs read it. The lines are copied as
    written, to a temporary file that is fsync'ed and then moved over the journal.

    Returns:
        Whether the journal was rewritten.
    """
    fallback: Path | None = getattr(journal, "fallback", None)
    has_fallback = fallback is not None and fallback.exists()
    latest: dict[tuple[str, str, int], int] = {}
    count = 0
    for count, (_, record) in enumerate(_journal_lines(journal), start=1):
        latest[(record["arm"], record["item_id"], record["run"])] = count
    if len(latest) == count and not has_fallback:
        return False
    keep = set(latest.values())
    del latest
    tmp = journal.path.with_name(journal.path.name + ".compact")
    with open(tmp, "wb") as handle:
        for number, (line, _) in enumerate(_journal_lines(journal), start=1):
            if number in keep:
                handle.write(line)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, journal.path)
    if fallback is not None and has_fallback:
        fallback.unlink()
    return True

