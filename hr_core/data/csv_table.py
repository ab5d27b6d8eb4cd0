"""Reading a CSV file of users' data (a reference set, labelled items, stored verdicts):
the one rule, refused rather than guessed.

A CSV file is a header line naming every column once, then rows of exactly as many
fields. A row with fewer fields is not "the rest empty" and one with more is not "a
column the header forgot": both are errors naming the file, the line and the columns,
as are a duplicate and an empty column name (pandas reads the first as
``answer.1``, the second as ``Unnamed: 2``, and a short row as missing values).
"""

from __future__ import annotations

import csv
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CsvTable", "read_csv_table"]

_SHOWN = 8  # column names listed in a message


@dataclass(frozen=True)
class CsvTable:
    """A CSV file's cells, all text.

    Attributes:
        header: the column names, in order.
        rows: each row's fields (as many as the header's).
        lines: the line each row starts on (a quoted cell may span lines).
    """

    header: list[str]
    rows: list[list[str]]
    lines: list[int]


def read_csv_table(path: str | os.PathLike[str],
                   error: Callable[[str], Exception] = ValueError) -> CsvTable:
    """Read a CSV file (UTF-8, an optional byte-order mark) by the one rule above.

    Blank lines are skipped. A cell is text as written (``""`` for an empty one).

    Args:
        path: the file.
        error: makes the exception raised from its one-line message (the caller's
            error type, e.g. ``ReferenceDataError``).

    Raises:
        the ``error`` made: an empty file, a duplicate or empty column name, a row
            whose number of fields differs from the header's, a line the csv module
            cannot parse (file, line and what to do).
        OSError, UnicodeDecodeError: the file cannot be read as UTF-8 text.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "ref.csv"
        >>> _ = path.write_text("id,answer\\nq1,Paris\\n\\nq2,\\n")
        >>> table = read_csv_table(path)
        >>> table.header, table.rows, table.lines
        (['id', 'answer'], [['q1', 'Paris'], ['q2', '']], [2, 4])
        >>> _ = path.write_text("id,answer\\nq1,Paris\\nq2\\n")
        >>> try:
        ...     read_csv_table(path)
        ... except ValueError as exc:
        ...     print(str(exc).replace(str(path), "ref.csv").split(": no field")[0])
        ref.csv, line 3: 1 field where the header has 2 (columns id, answer)
    """
    name = os.fspath(path)
    header: list[str] | None = None
    rows: list[list[str]] = []
    lines: list[int] = []
    limit = csv.field_size_limit()
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # a cell may be a whole document
    try:
        with Path(path).open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.reader(handle)
            previous = 0
            try:
                for row in reader:
                    start, previous = previous + 1, reader.line_num
                    if not row or (len(row) == 1 and not row[0].strip()):
                        continue  # a blank line
                    if header is None:
                        _check_header(name, row, error)
                        header = row
                        continue
                    if len(row) != len(header):
                        raise error(f"{name}, line {start}: {_fields(row, header)}")
                    rows.append(row)
                    lines.append(start)
            except csv.Error as exc:
                raise error(f"{name}, line {reader.line_num}: not readable as CSV ({exc}); "
                            "check the quotes around the cells near it") from None
    finally:
        csv.field_size_limit(limit)
    if header is None:
        raise error(f"{name}: cannot read: the file is empty (no header line); its first "
                    "line names the columns")
    return CsvTable(header, rows, lines)


def _columns(header: list[str]) -> str:
    shown = ", ".join(h if h.strip() else repr(h) for h in header[:_SHOWN])
    return f"columns {shown}{', ...' if len(header) > _SHOWN else ''}"


def _check_header(name: str, header: list[str], error: Callable[[str], Exception]) -> None:
    """A duplicate or an empty column name is an error naming the columns."""
    first: dict[str, int] = {}
    for number, column in enumerate(header, start=1):
        if not column.strip():
            raise error(f"{name}, header: column {number} has no name ({_columns(header)}); "
                        "name every column")
        if column in first:
            raise error(f"{name}, header: duplicate column {column!r} (columns "
                        f"{first[column]} and {number}); give each column its own name")
        first[column] = number


def _fields(row: list[str], header: list[str]) -> str:
    """What is wrong with a row whose number of fields is not the header's."""
    said = (f"{len(row)} field{'s' if len(row) != 1 else ''} where the header has "
            f"{len(header)} ({_columns(header)})")
    if len(row) < len(header):
        missing = header[len(row)]
        return (f"{said}: no field for {missing!r}; quote cells that hold commas, and give "
                "every row each column (an empty cell is written as nothing between two "
                "commas)")
    return (f"{said}: field {len(header) + 1} has no column; quote cells that hold commas, "
            "or name the extra column in the header")
