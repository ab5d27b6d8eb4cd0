"""Reading items that people labelled, for validating a judge (SPEC section 7).

Columns by mode: grade ``item, response, reference, human`` (human = a grade);
pairwise ``item, a, b, human`` (A, B or tie; an optional ``reference``);
select ``item, candidates, human`` (candidates a list, or a JSON array in a
CSV cell; human a letter; an optional ``reference``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pandas as pd

from hr_core.core.errors import HrError
from hr_core.core.json_text import jsonl_lines
from hr_core.core.text import is_missing, plain_digits
from hr_core.data.csv_table import read_csv_table
from hr_core.judge.parse import normalise_verdict
from hr_core.judge.prompts import LETTERS

__all__ = ["LABELLED_COLUMNS", "LabelledDataError", "LabelledRow", "read_labelled"]

LABELLED_COLUMNS: Final[dict[str, tuple[str, ...]]] = {
    "grade": ("item", "response", "reference", "human"),
    "pairwise": ("item", "a", "b", "human"),
    "select": ("item", "candidates", "human"),
}


class LabelledDataError(HrError, ValueError):
    """Labelled data cannot be read: names the file, row and column."""


@dataclass(frozen=True)
class LabelledRow:
    """One labelled item: what the judge sees and what people said."""

    row: int
    item: Any
    candidates: tuple[str, ...]
    reference: str | list[str] | None
    human: str


def read_table(data: Any, what: str = "labelled data") -> tuple[pd.DataFrame, str]:
    """A table (DataFrame, list of dicts, or .csv/.jsonl/.parquet path) and how messages
    name it (the path, or ``what``); CSV cells stay text. Shared by labelled items and
    stored verdicts (:mod:`hr_core.judge.stored`). JSON lines end at ``"\\n"`` alone
    (:func:`~hr_core.core.json_text.jsonl_lines`); a CSV file's header names each column
    once and every row has its fields (:func:`~hr_core.data.csv_table.read_csv_table`).

    Raises:
        LabelledDataError: naming the file (and line) that cannot be read.
    """
    if isinstance(data, pd.DataFrame):
        return data.reset_index(drop=True), what
    if isinstance(data, list):
        return pd.DataFrame(data), what
    if not isinstance(data, str | Path):
        raise LabelledDataError(
            f"{what} must be a DataFrame, a list of dicts or a path to .csv/.jsonl/"
            f".parquet, not {type(data).__name__}"
        )
    path = Path(data)
    where = str(path)
    if not path.is_file():
        raise LabelledDataError(f"{where}: no such file")
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            table = read_csv_table(path, LabelledDataError)
            return pd.DataFrame(table.rows, columns=table.header, dtype=object), where
        if suffix == ".parquet":
            return pd.read_parquet(path), where
        if suffix in (".jsonl", ".ndjson"):
            return _read_jsonl(path), where
    except LabelledDataError:
        raise
    except Exception as exc:
        raise LabelledDataError(f"{where}: cannot be read: {type(exc).__name__}: {exc}") from None
    raise LabelledDataError(f"{where}: unsupported file type {suffix!r}; use .csv, .jsonl "
                            "or .parquet")


def _read_jsonl(path: Path) -> pd.DataFrame:
    records = []
    for number, _, line in jsonl_lines(path.read_bytes()):
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LabelledDataError(f"{path}, line {number}: not JSON ({exc.msg})") from None
        if not isinstance(value, dict):
            raise LabelledDataError(f"{path}, line {number}: expected a JSON object")
        records.append(value)
    return pd.DataFrame(records)


def cell_text(value: Any) -> str | None:
    """A table cell as text: numbers as plain digits, missing values (None, NaN, NA) as None."""
    if isinstance(value, str):
        return value
    if is_missing(value):
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return None if isinstance(value, float) and math.isnan(value) else plain_digits(value)
    return str(value)


def _json_list(value: Any) -> Any:
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def cell_texts(value: Any) -> list[str] | None:
    """A cell holding a list (or its JSON) as texts; None when it is not one or holds a
    value that is not text."""
    value = _json_list(value)
    if hasattr(value, "tolist") and not isinstance(value, str):
        value = value.tolist()
    if not isinstance(value, list | tuple):
        return None
    texts = [cell_text(v) for v in value]
    return None if any(t is None for t in texts) else [t for t in texts if t is not None]


def read_labelled(
    data: Any, mode: str, *, grades: Sequence[str] | None = None
) -> list[LabelledRow]:
    """Read labelled items for ``mode`` from a DataFrame, records or a file.

    Args:
        data: a DataFrame, a list of dicts or a path to .csv/.jsonl/.parquet.
        mode: ``"grade"``, ``"pairwise"`` or ``"select"``.
        grades: grade mode: the allowed grades (human labels are checked).

    Raises:
        LabelledDataError: naming the file, row and column of the problem.

    Example:
        >>> rows = read_labelled([{"item": "q", "a": "x", "b": "y", "human": "b"}], "pairwise")
        >>> rows[0].candidates, rows[0].human
        (('x', 'y'), 'B')
    """
    if mode not in LABELLED_COLUMNS:
        raise LabelledDataError(f"mode {mode!r} is unknown; use grade, pairwise or select")
    frame, where = read_table(data)
    needed = LABELLED_COLUMNS[mode]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise LabelledDataError(
            f"{where}: missing column(s) {', '.join(missing)} for {mode} mode; it needs "
            f"{', '.join(needed)} (found {', '.join(map(str, frame.columns)) or 'none'})"
        )
    rows = []
    for index, record in enumerate(frame.to_dict(orient="records"), start=1):
        rows.append(_row(record, index, mode, grades, f"{where}, row {index}"))
    return rows


def _row(record: dict[Any, Any], index: int, mode: str, grades: Sequence[str] | None,
         where: str) -> LabelledRow:
    def need_text(column: str) -> str:
        text = cell_text(record.get(column))
        if text is None or (column == "human" and not text.strip()):
            raise LabelledDataError(f"{where}, column {column!r}: missing value")
        return text

    reference: str | list[str] | None = None
    raw_ref = _json_list(record.get("reference"))
    if isinstance(raw_ref, list | tuple) or hasattr(raw_ref, "tolist"):
        reference = cell_texts(raw_ref)
    elif not is_missing(raw_ref) and raw_ref is not None and raw_ref != "":
        reference = cell_text(raw_ref)
    if mode == "grade":
        if reference is None:
            raise LabelledDataError(f"{where}, column 'reference': missing value")
        candidates: tuple[str, ...] = (need_text("response"),)
        allowed: Sequence[str] | None = grades
    elif mode == "pairwise":
        candidates = (need_text("a"), need_text("b"))
        allowed = ("A", "B", "tie")
    else:
        texts = cell_texts(record.get("candidates"))
        if texts is None or not 2 <= len(texts) <= 26:
            raise LabelledDataError(
                f"{where}, column 'candidates': expected a list of 2 to 26 texts (a JSON "
                f"array in a CSV cell), not {record.get('candidates')!r}"
            )
        candidates = tuple(texts)
        allowed = tuple(LETTERS[: len(texts)])
    human = need_text("human").strip()
    if allowed is not None:
        found = normalise_verdict(human, allowed)
        if found is None:
            raise LabelledDataError(
                f"{where}, column 'human': {human!r} is not one of {', '.join(allowed)}"
            )
        human = found
    return LabelledRow(row=index, item=record.get("item"), candidates=candidates,
                       reference=reference, human=human)
