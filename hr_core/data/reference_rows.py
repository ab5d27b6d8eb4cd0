"""The rows of a reference set as given: a DataFrame, a list of dicts, or a CSV, JSONL or
Parquet file, each row with where it came from (for errors naming the file and row)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from hr_core.core.errors import ReferenceDataError
from hr_core.core.json_text import jsonl_lines
from hr_core.data.csv_table import read_csv_table

__all__ = ["JsonCells", "read_rows"]

_SUFFIXES = (".csv", ".jsonl", ".parquet")

JsonCells = Literal["any", "arrays"] | None
"""Which label cells of a source hold JSON text: any (Parquet), arrays only, or none."""


def read_rows(data: Any) -> tuple[str, list[dict[str, Any]], Any, JsonCells]:
    """Return (source name, records, row -> location text, which label cells are JSON)."""
    if isinstance(data, pd.DataFrame):
        return "<DataFrame>", _records(data), _row, None
    if isinstance(data, str | Path):
        return _read_file(Path(data))
    if isinstance(data, list | tuple):
        for index, record in enumerate(data):
            if not isinstance(record, Mapping):
                raise ReferenceDataError(
                    f"<records>, row {index + 1}: expected a dict, got {type(record).__name__}"
                )
        # read, never changed: dicts are not copied (a copy doubles a large reference at once)
        return "<records>", [r if type(r) is dict else dict(r) for r in data], _row, None
    raise ReferenceDataError(
        f"cannot read a reference set from {type(data).__name__}; pass a DataFrame, a list "
        "of dicts, or a path to .csv, .jsonl or .parquet"
    )


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    narrow = [c for c, kind in frame.dtypes.items() if str(kind) in ("float32", "float16")]
    if narrow:  # the shortest text of their own precision: 0.1, not 0.10000000149011612
        frame = frame.copy()
        for column in narrow:
            frame[column] = [float(str(v)) for v in frame[column].to_numpy()]
    return [{str(k): v for k, v in row.items()} for row in frame.to_dict("records")]


def _row(index: int) -> str:
    return f"row {index + 1}"


def _read_file(path: Path) -> tuple[str, list[dict[str, Any]], Any, JsonCells]:
    source = str(path)
    suffix = path.suffix.lower()
    if suffix not in _SUFFIXES:
        raise ReferenceDataError(
            f"{source}: unsupported file type {suffix or '(none)'!r}; use .csv, .jsonl or "
            ".parquet (or a SQuAD .json)"
        )
    if not path.is_file():
        raise ReferenceDataError(f"{source}: cannot read: no such file")
    try:
        if suffix == ".jsonl":
            return source, _read_jsonl(path), lambda i: f"row {i + 1}", None
        if suffix == ".csv":
            table = read_csv_table(path, ReferenceDataError)
            lines = table.lines
            records = [{name: cell or None for name, cell in zip(table.header, row, strict=True)}
                       for row in table.rows]
            return source, records, lambda i: f"line {lines[i]}", "any"
        frame = pd.read_parquet(path)
        return source, _records(frame), _row, "any"
    except ReferenceDataError:
        raise
    except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise ReferenceDataError(f"{source}: cannot read: {reason}") from None
    except Exception as exc:  # pyarrow raises its own types for corrupt files
        reason = " ".join(str(exc).split()) or type(exc).__name__
        kind = type(exc).__name__
        raise ReferenceDataError(f"{source}: cannot read ({kind}): {reason}") from None


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    with path.open("rb") as handle:
        for number, _, line in jsonl_lines(handle):
            try:
                record = json.loads(line.decode("utf-8"))
            except json.JSONDecodeError as exc:
                raise ReferenceDataError(
                    f"{path}, line {number}: not valid JSON ({exc.msg} at column {exc.colno}); "
                    "each line must be one JSON object"
                ) from None
            if not isinstance(record, dict):
                raise ReferenceDataError(
                    f"{path}, line {number}: expected a JSON object, got {type(record).__name__}"
                )
            records.append(record)
    return records
