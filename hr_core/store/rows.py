"""The runs table of a finished benchmark, built from its journal in batches.

A benchmark of a million runs cannot keep a million record dicts (each holds its
texts and a dozen fields) in memory. The journal already holds every finished run on
disk, so the session keeps none of them. At the end :func:`write_runs` streams ``runs.parquet`` from
it: one pass notes where each run's latest line is (16 bytes a line), a second
reads the lines in plan order (arms, items, runs) :data:`BATCH` at a time, with
the runs never made as ``budget_stop`` rows, and writes each batch's table
through a ``pyarrow.parquet.ParquetWriter``: neither every record nor the whole
table is ever in memory (a table of at most :data:`RECORDS_KEPT_UP_TO` runs keeps the
records the first pass decoded instead of reading them again).

Each row also gets :data:`ITEM_INDEX`, its item's position in the reference (and
``reference.jsonl``): summaries and reports count per item with it, without hashing
a million item ids. ``Benchmark.runs`` leaves it out.

When any run returned contexts (``ArmResult.contexts``), the table also has
:data:`~hr_core.scoring.relevance.RETRIEVAL_COLUMNS`: each run's contexts as one short
line and their relevance, judged here once against the item's gold passages (or by
answer containment) so that no reader needs the journal's passage texts.
"""

from __future__ import annotations

import contextlib
import os
from array import array
from collections.abc import Iterator, Mapping, Sequence
from operator import attrgetter
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hr_core.data.reference import Reference
from hr_core.scoring.relevance import (
    RETRIEVAL_COLUMNS,
    answerable,
    attribute_column,
    contexts_line,
    judge_contexts,
)
from hr_core.stats.accuracy import ITEM_INDEX
from hr_core.store.columns import runs_schema, runs_table
from hr_core.store.journal import Journal, journal_lines
from hr_core.store.memory import give_back
from hr_core.store.record import RunRecord, decode, stopped_record

__all__ = ["BATCH", "RECORDS_KEPT_UP_TO", "ROW_GROUP", "RunPositions", "compact_journal",
           "write_runs"]

BATCH = 16_384
"""Journal records turned into one table at a time."""

ROW_GROUP = 32_768
"""Rows of ``runs.parquet`` per row group (batches are gathered up to it before a write):
what a table showing a few rows reads of a text column at most."""

RECORDS_KEPT_UP_TO = 50_000
"""Planned runs up to which :func:`write_runs` keeps the latest record of each run its
first pass decoded (bounded by this many records) instead of reading and decoding the
chosen lines a second time, a large part of the table's time (issue 25). Larger tables
read them again
(memory: ~25 bytes per planned run, not a record)."""


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
        self.reasons: dict[str, str] = {}
        """Why an arm's runs were not made, when not its budget (``error`` of its rows)."""

    def of(self, arm: str, item_id: str, run: int) -> int:
        """The position of one run, ``-1`` for a run this plan does not have."""
        place = self._arm.get(arm)
        index = self.index.get(item_id)
        if place is None or index is None or not 1 <= run <= place[1]:
            return -1
        return place[0] + index * place[1] + run - 1

    def item_indexes(self, start: int, stop: int) -> np.ndarray:
        """The item position (in the reference) of the runs at positions ``start:stop``.

        Example:
            >>> from hr_core import hr_reference
            >>> ref = hr_reference([{"id": "q1", "label": "a"}, {"id": "q2", "label": "b"}])
            >>> RunPositions(["x", "y"], {"x": 1, "y": 2}, ref).item_indexes(0, 6).tolist()
            [0, 1, 0, 0, 1, 1]
        """
        places = np.arange(start, stop, dtype=np.int64)
        arm = np.searchsorted(self.offsets, places, side="right") - 1
        runs = np.asarray(self.runs, dtype=np.int64)
        return ((places - self.offsets[arm]) // runs[arm]).astype(np.int32)

    def stopped_record(self, position: int) -> RunRecord:
        """The ``budget_stop`` record of the run at ``position`` (never made)."""
        a = int(np.searchsorted(self.offsets, position, side="right")) - 1
        index, run = divmod(position - int(self.offsets[a]), self.runs[a])
        arm = self.arms[a]
        return stopped_record(arm, self.reference.items[index], run + 1, self.reasons.get(arm))


def _journal_files(journal: Journal) -> list[Path]:
    """The journal's files that exist: its own, its worker journals, its fallback."""
    return journal.files()


def _journal_lines(journal: Journal, garbled: list[int] | None = None
                   ) -> Iterator[tuple[int, int, bytes, RunRecord]]:
    """Every record of a journal's files in written order (:func:`journal_lines`' rule),
    with the file's number in :func:`_journal_files` and the line's offset in it
    (``garbled``: the garbled lines' numbers appended, whatever their file)."""
    for number, path in enumerate(_journal_files(journal)):
        for at, line, record in journal_lines(path, garbled):
            yield number, at, line, record


_KEPT = -1
"""The source of a record kept in memory (``Journal.kept``), not in a journal file."""


def _latest_lines(journal: Journal, positions: RunPositions, latest: list[Any] | None = None,
                  contexts: list[bool] | None = None,
                  ) -> tuple[list[Path], np.ndarray, np.ndarray, np.ndarray, int]:
    """Where each planned run's latest record is: the files read, and per position its
    file number (:data:`_KEPT`: ``journal.kept``; ``-2``: no record), offset and length.
    Also how many records were superseded by a later one of the same run. ``latest`` (a
    list of ``positions.total`` ``None``): set to each position's latest record read.
    ``contexts`` (a list): ``True`` appended when a record of the plan has contexts."""
    where, source, offset, size = array("q"), array("b"), array("q"), array("q")
    for number, at, line, record in _journal_lines(journal):
        place = positions.of(record.arm, record.item_id, record.run)
        if place >= 0:
            if contexts is not None and not contexts and (
                    record.contexts is not None or record.contexts_line is not None):
                contexts.append(True)
            if latest is not None and record.contexts is not None:
                latest[:] = [None] * len(latest)  # passages in the lines: not all kept
                latest = None
            if latest is not None:  # read in written order: the last one read wins
                latest[place] = record
            where.append(place)
            source.append(number)
            offset.append(at)
            size.append(len(line))
    for index, record in enumerate(journal.kept):
        place = positions.of(record.arm, record.item_id, record.run)
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
    return _journal_files(journal), at_source, at_offset, at_size, superseded


def _made(journal: Journal) -> list[RunRecord] | None:
    """The records this process appended (``Journal.made``) when they are every record the
    journal holds: nothing written elsewhere (worker journals, the fallback, memory)."""
    made = journal.made
    if (made is None or journal.error is not None or journal.kept
            or journal.fallback.exists() or journal.worker_files()):
        return None
    return made


def _latest_made(made: list[RunRecord], positions: RunPositions, latest: list[Any]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """:func:`_latest_lines` of records in memory (in written order: the last one wins);
    ``latest`` is set to each position's record, and its source to file ``0``."""
    source = np.full(positions.total, -2, dtype=np.int8)
    superseded = 0
    of = positions.of
    for record in made:
        place = of(record.arm, record.item_id, record.run)
        if place >= 0:
            superseded += latest[place] is not None
            latest[place] = record
            source[place] = 0
    zeros = np.zeros(positions.total, dtype=np.int64)
    return source, zeros, zeros, superseded


def write_runs(journal: Journal, positions: RunPositions, sink: BinaryIO | str, *,
               judge: bool = False, left_out: np.ndarray | None = None,
               kinds: bool | None = None) -> tuple[int, int]:
    """Stream the runs table in plan order from a journal to Parquet (``runs.parquet``).

    The table of ``Benchmark.runs`` (its columns and dtypes once read with
    ``pandas.read_parquet``) and :data:`~hr_core.stats.accuracy.ITEM_INDEX`, written
    :data:`BATCH` rows at a time: the latest record of each run, ``budget_stop``
    rows for the runs never made, records of runs the plan does not have left out.
    ``left_out`` (a flag per reference item): the items a sequential run never drew,
    whose runs never made are no rows at all (not failures). Memory: ~25 bytes per
    planned run, plus one row group. ``kinds``: the usage kinds' columns
    (:data:`~hr_core.store.columns.KIND_RUN_COLUMNS`) too; ``None``: when the journal saw a
    record with one (``Journal.has_kinds``).

    Returns:
        The rows written and how many records were superseded by a later record of
        the same run (a re-scored run, a resume).
    """

    latest: list[Any] | None = (
        [None] * positions.total if positions.total <= RECORDS_KEPT_UP_TO else None)
    made = _made(journal)
    files: list[Path] = []
    seen: list[bool] = []
    if made is not None and latest is not None:  # nothing to read back: the records kept
        source, offset, size, superseded = _latest_made(made, positions, latest)
    else:
        files, source, offset, size, superseded = _latest_lines(journal, positions, latest,
                                                                seen)
        if seen and latest is not None and not any(latest):  # _latest_lines let them go
            latest = None
    kept = list(journal.kept)
    kinds = journal.has_kinds if kinds is None else kinds
    retrieval = bool(seen) or any(
        r.contexts is not None or r.contexts_line is not None
        for r in (*kept, *(r for r in latest or () if r is not None)))
    frame_schema = runs_schema(judge, kinds)
    schema = frame_schema.append(pa.field(ITEM_INDEX, pa.int32()))
    answers = np.zeros(0, dtype=bool)
    if retrieval:
        for name, kind in zip(RETRIEVAL_COLUMNS, _RETRIEVAL_TYPES, strict=True):
            schema = schema.append(pa.field(name, kind))
        answers = answerable([item.label for item in positions.reference.items])
    handles = [os.open(path, os.O_RDONLY) for path in files]
    pending: list[pa.Table] = []
    written = 0
    try:
        with pq.ParquetWriter(sink, schema) as writer:
            for start in range(0, positions.total, BATCH):
                stop = min(start + BATCH, positions.total)
                records: list[RunRecord]
                items_here = positions.item_indexes(start, stop)
                rows_here = np.ones(stop - start, dtype=bool)
                if latest is not None and bool((source[start:stop] >= 0).all()):
                    records = latest[start:stop]  # every run made, its record in memory
                else:
                    records = []
                    for place, number, at, length in zip(
                            range(start, stop), source[start:stop].tolist(),
                            offset[start:stop].tolist(), size[start:stop].tolist(), strict=True):
                        if number >= 0 and latest is not None:
                            record = latest[place]
                        elif number >= 0:
                            found = decode(os.pread(handles[number], length, at), files[number], 0)
                            # None: the line changed since the first pass read it
                            record = found or positions.stopped_record(place)
                        elif number == _KEPT:
                            record = kept[at]
                        elif left_out is not None and left_out[items_here[place - start]]:
                            rows_here[place - start] = False
                            continue
                        else:
                            record = positions.stopped_record(place)
                        records.append(record)
                written += len(records)
                table = runs_table(records, frame_schema, judge=judge, kinds=kinds)
                table = table.append_column(ITEM_INDEX, pa.array(items_here[rows_here]))
                if retrieval:
                    for name, values in zip(RETRIEVAL_COLUMNS, _retrieval_columns(
                            records, items_here[rows_here], positions.reference,
                            table.column("failure_kind"), answers), strict=True):
                        table = table.append_column(name, values)
                pending.append(table)
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
        give_back(positions.total)
    return written, superseded


_RETRIEVAL_TYPES = (pa.string(), pa.string(), pa.int64(), pa.string(), pa.int64())


def _retrieval_columns(records: list[RunRecord], items: np.ndarray, reference: Reference,
                       kinds: pa.ChunkedArray, answers: np.ndarray) -> list[pa.Array]:
    """The :data:`RETRIEVAL_COLUMNS` of a batch of records (``items``: their items'
    positions in ``reference``; ``kinds``: their ``failure_kind`` column; ``answers``:
    whether each item of ``reference`` is answerable): a judged record's own fields
    (``Journal.reference``), and the contexts of a line that holds them judged here. Each
    field is gathered by ``map`` and the attribution made from the columns at once
    (:func:`~hr_core.scoring.relevance.attribute_column`)."""
    lines = list(map(_CONTEXTS_LINE, records))
    ranks = list(map(_GOLD_RANKS, records))
    counts = list(map(_GOLD_N, records))
    if None in lines:  # a line with its passages (not judged when journaled)
        every = reference.items
        gold = reference.gold_contexts
        for at, record in enumerate(records):
            if lines[at] is None and record.contexts is not None:
                item = every[items[at]]
                ranks[at], counts[at] = judge_contexts(record.contexts, gold.get(item.id, ()),
                                                       item.label)
                lines[at] = contexts_line(record.contexts, record.contexts_cut)
    line_t, ranks_t, counts_t, _, cuts_t = _RETRIEVAL_TYPES
    ranks_column = pa.array(ranks, ranks_t)
    counts_column = pa.array(counts, counts_t)
    blamed = attribute_column(kinds, ranks_column, counts_column, answers[items])
    cuts = pa.array(list(map(_CONTEXTS_CUT, records)), cuts_t)
    return [pa.array(lines, line_t), ranks_column, counts_column, blamed, cuts]


_CONTEXTS_LINE, _GOLD_RANKS, _GOLD_N, _CONTEXTS_CUT = map(attrgetter, (
    "contexts_line", "gold_ranks", "gold_n", "contexts_cut"))


def compact_journal(journal: Journal) -> bool:
    """Rewrite a journal with the latest record of each run only (fallback merged in).

    Done once the results are safely written, when there is something to drop
    (superseded records, a fallback journal, garbled lines the run's manifest names:
    ``journal_garbled``); the journal itself stays, since a
    resume and the re-scoring of stored outputs read it. The lines are copied as
    written, to a temporary file that is fsync'ed and then moved over the journal.

    Returns:
        Whether the journal was rewritten.
    """
    fallback = Path(journal.fallback)
    sides = journal.worker_files()
    has_fallback = fallback.exists() or bool(sides)
    latest: dict[tuple[str, str, int], int] = {}
    count = 0
    garbled: list[int] = []
    for count, (_, _, _, record) in enumerate(_journal_lines(journal, garbled), start=1):
        latest[(record.arm, record.item_id, record.run)] = count
    if len(latest) == count and not has_fallback and not garbled:
        return False
    keep = set(latest.values())
    del latest
    tmp = journal.path.with_name(journal.path.name + ".compact")
    with open(tmp, "wb") as handle:
        for number, (_, _, line, _) in enumerate(_journal_lines(journal), start=1):
            if number in keep:
                handle.write(line if line.endswith(b"\n") else line + b"\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, journal.path)
    for path in (fallback, *sides):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    return True

