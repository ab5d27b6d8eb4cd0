"""A stored ``runs.parquet``, read a few columns at a time, and a few rows' texts.

A million-run table is large in Arrow and larger as pandas; the summary, the
comparisons, the health check and the report need only its small columns
(:data:`STAT_COLUMNS`). The text columns (``output``, ``error``) of the few rows a
table shows are read by :class:`RowTexts`, one row group at a time.

Example:
    >>> import io, tempfile
    >>> from hr_core.analysis.benchmark import runs_frame
    >>> path = tempfile.mkdtemp() + "/runs.parquet"
    >>> runs_frame([{"arm": "a", "item_id": "q1", "run": 1, "output": "Paris"},
    ...             {"arm": "a", "item_id": "q2", "run": 1, "output": "Lyon"}]).to_parquet(path)
    >>> stored = RunsFile.at(path)
    >>> list(stored.read(["arm", "run", "no such column"]).columns)
    ['arm', 'run']
    >>> RowTexts(stored).get([1, 0], "output")
    ['Lyon', 'Paris']
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterable, Sequence
from typing import IO, Any

import fsspec
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from hr_core.results import USAGE_KINDS
from hr_core.stats.accuracy import ITEM_INDEX
from hr_core.store.memory import give_back

__all__ = ["STAT_COLUMNS", "TEXT_COLUMNS", "RowTexts", "RunsFile"]

STAT_COLUMNS = ("arm", "item_id", "run", "correct", "score", "failure_kind", "judge_status",
                "latency_s", "tokens_in", "tokens_out", "cost_usd", "truncated", "replayed",
                "judge_tokens_in", "judge_tokens_out", "judge_cost_usd", *USAGE_KINDS, ITEM_INDEX)
"""The columns summaries, comparisons, coverage warnings, the health check and the report
compute from: every column of ``Benchmark.runs`` but the texts, and the file's
:data:`~hr_core.stats.accuracy.ITEM_INDEX` (``runs.parquet`` written by hr has it)."""

CODED_COLUMNS = ("arm", "failure_kind", "judge_status")
"""Stat columns with a few distinct names, read as categoricals (1 byte a run, not ~16)."""

TEXT_COLUMNS = ("output", "outcome", "error")
"""The text columns, read whole only for ``Benchmark.runs`` (tables read their shown rows)."""

TOGETHER_UP_TO = 100_000
"""Rows up to which :meth:`RunsFile.read` reads the columns asked for in one pass (far
faster than one at a time for a small table, issue 25); a larger
table reads them one at a time (memory, see :meth:`RunsFile.read`)."""


class RunsFile:
    """One ``runs.parquet`` (local or fsspec), read by columns or by rows.

    Args:
        open_file: opens the file for binary reading (a context manager).
        corrupt: the exception to raise for a damaged file, given the cause.
    """

    def __init__(self, open_file: Callable[[], contextlib.AbstractContextManager[IO[bytes]]],
                 corrupt: Callable[[Exception], Exception]) -> None:
        self._open = open_file
        self._corrupt = corrupt
        self._names: list[str] | None = None
        self._starts: np.ndarray | None = None
        self.token = secrets.token_hex(8)
        """Names this file in the ``attrs`` of the tables read from it (``ITEM_INDEX``: their
        item positions are those of one reference)."""

    @classmethod
    def at(cls, path: str) -> RunsFile:
        """The file at a local path or fsspec URL (damage raised as ``ValueError``)."""

        def corrupt(exc: Exception) -> Exception:
            return ValueError(f"{path} is corrupt or truncated ({type(exc).__name__}: {exc})")

        return cls(lambda: fsspec.open(path, "rb"), corrupt)

    def _guarded(self, read: Callable[[IO[bytes]], Any]) -> Any:
        with self._open() as handle:
            try:
                return read(handle)
            except FileNotFoundError:
                raise
            except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
                raise self._corrupt(exc) from None

    def _footer(self) -> None:
        def read(handle: IO[bytes]) -> tuple[list[str], np.ndarray]:
            meta = pq.ParquetFile(handle).metadata
            sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
            return list(meta.schema.to_arrow_schema().names), np.cumsum([0, *sizes])

        self._names, self._starts = self._guarded(read)

    def names(self) -> list[str]:
        """The file's columns (reading its footer: a truncated file raises here)."""
        if self._names is None:
            self._footer()
        assert self._names is not None
        return list(self._names)

    def read(self, columns: Iterable[str] | None = None) -> pd.DataFrame:
        """The table (``Benchmark.runs`` dtypes), only ``columns`` the file has when given.

        Columns of a table over :data:`TOGETHER_UP_TO` rows are read one at a time, and
        the allocators are asked to give back the decoding buffers after each
        (:func:`~hr_core.store.memory.give_back`): a 1M-run table's small columns then
        add less RSS than reading them together did.
        """
        if columns is None:  # Benchmark.runs: the table without the file's item index
            wanted = [c for c in self.names() if c != ITEM_INDEX]
            frame: pd.DataFrame = self._guarded(lambda h: pd.read_parquet(h, columns=wanted))
            give_back(self._rows())
            return frame
        names = [c for c in columns if c in self.names()]
        if names and self._rows() <= TOGETHER_UP_TO:
            return self.tagged(self._guarded(lambda h: self._together(h, names)))
        parts: dict[str, pd.Series] = {}
        for column in names:
            def one(handle: IO[bytes], name: str = column) -> pd.Series:
                if name in CODED_COLUMNS:  # a few names: codes, not a string per row

                    table = pq.read_table(handle, columns=[name], read_dictionary=[name])
                    return pd.Series(table.column(0).to_pandas(), name=name)
                return pd.read_parquet(handle, columns=[name])[name]

            parts[column] = self._guarded(one)
            give_back()
        if not parts:
            return pd.DataFrame(index=pd.RangeIndex(int(self._rows())))
        return self.tagged(pd.DataFrame(parts, copy=False))

    @staticmethod
    def _together(handle: IO[bytes], names: list[str]) -> pd.DataFrame:
        """``names`` read as :meth:`read` reads each one (coded ones as categoricals, the
        others as ``pandas.read_parquet`` gives them), in two passes instead of one a column."""

        coded = [c for c in names if c in CODED_COLUMNS]
        plain = [c for c in names if c not in CODED_COLUMNS]
        parts: dict[str, pd.Series] = {}
        if plain:
            frame = pd.read_parquet(handle, columns=plain)
            parts.update({c: frame[c] for c in plain})
        if coded:
            handle.seek(0)
            table = pq.read_table(handle, columns=coded, read_dictionary=coded)
            parts.update({c: pd.Series(table.column(c).to_pandas(), name=c) for c in coded})
        return pd.DataFrame({c: parts[c] for c in names}, copy=False)

    def tagged(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` (columns of this file) marked as read from it when it has the item
        positions (:func:`hr_core.stats.accuracy.item_codes` then needs no check against the
        ids)."""
        if ITEM_INDEX in frame.columns:
            frame.attrs[ITEM_INDEX] = self.token
        return frame

    def _rows(self) -> int:
        self.names()
        assert self._starts is not None
        return int(self._starts[-1])

    def values(self, rows: Sequence[int] | np.ndarray, column: str) -> list[Any]:
        """``column`` at row positions ``rows`` (``None`` where missing, or when the file has
        no such column): only the row groups holding those rows are read."""

        at = np.asarray(rows, dtype=np.int64)
        out: list[Any] = [None] * len(at)
        if not len(at) or column not in self.names():
            return out
        assert self._starts is not None
        starts = self._starts
        groups = np.searchsorted(starts, at, side="right") - 1

        def read(handle: IO[bytes]) -> None:
            parquet = pq.ParquetFile(handle)
            for group in np.unique(groups).tolist():
                picked = np.flatnonzero(groups == group)
                values = parquet.read_row_group(group, columns=[column]).column(0)
                taken = values.take(pa.array(at[picked] - starts[group])).to_pylist()
                for index, value in zip(picked.tolist(), taken, strict=True):
                    out[index] = value

        self._guarded(read)
        return out


class RowTexts:
    """The text columns of a stored runs table, for the rows a table shows.

    Positions are rows of the table as it was read; :meth:`take` follows a reordering
    (``table.iloc[order]``) so that positions in the reordered table still find their row.
    """

    def __init__(self, file: RunsFile, order: np.ndarray | None = None) -> None:
        self.file = file
        self.order = order

    def get(self, rows: Sequence[int] | np.ndarray, column: str) -> list[Any]:
        """``column`` at positions ``rows`` (``None`` where missing)."""
        at = np.asarray(rows, dtype=np.int64)
        return self.file.values(at if self.order is None else self.order[at], column)

    def take(self, order: np.ndarray) -> RowTexts:
        """The texts of the table reordered by ``order`` (positions into this one)."""
        order = np.asarray(order, dtype=np.int64)
        return RowTexts(self.file, order if self.order is None else self.order[order])
