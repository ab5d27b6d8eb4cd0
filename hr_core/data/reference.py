"""Reference sets: labelled items read from a DataFrame, records or a file.

An item may also name its gold passages (``gold_contexts``: the passages that hold its
answer, as passage ids or texts): the retrieval figures (:mod:`hr_core.stats.retrieval`)
count an arm's ``contexts`` against them. They are kept beside the items
(:meth:`Reference.gold`) and are part of the reference's hash only when some item has
them, so a reference without gold passages keeps the hash it always had.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from hr_core.core.errors import ReferenceDataError
from hr_core.core.identity import fingerprint
from hr_core.core.text import is_missing, plain_digits
from hr_core.data.reference_rows import JsonCells, read_rows
from hr_core.data.squad_file import read_squad, squad_corpus

__all__ = ["GOLD_CONTEXTS", "Item", "Reference", "hr_reference", "squad_corpus"]

GOLD_CONTEXTS = "gold_contexts"
"""The default column of an item's gold passages (a list of passage ids or texts)."""


"""Which string label cells are read as JSON: CSV ``"any"`` (a number, a list, a quoted
string; SPEC section 12) and Parquet string cells ``"any"``; ``"arrays"``: only a
JSON array; else none."""


class Item(NamedTuple):
    """One entry of a reference set: what the arm receives and the accepted answer(s)."""

    id: str
    payload: Any
    label: Any


class Reference:
    """An ordered, immutable set of items with a content hash.

    Example:
        >>> ref = hr_reference([{"id": "q1", "question": "2+2?", "label": 4}], item="question")
        >>> [tuple(i) for i in ref], len(ref)
        ([('q1', '2+2?', 4)], 1)
    """

    __slots__ = ("_by_id", "_hash", "gold_contexts", "items", "source")

    def __init__(self, items: Sequence[Item], source: str = "<data>",
                 gold_contexts: Mapping[str, Sequence[str]] | None = None) -> None:
        self.items: tuple[Item, ...] = tuple(items)
        self.source = source
        self.gold_contexts: dict[str, tuple[str, ...]] = {
            k: tuple(v) for k, v in (gold_contexts or {}).items() if v}
        """Each item's gold passages (ids or texts) by item id; items without are absent."""
        self._hash: str | None = None
        self._by_id: dict[str, Item] | None = None

    def gold(self, item_id: str) -> tuple[str, ...]:
        """The gold passages of one item (``()`` when it names none).

        Example:
            >>> ref = hr_reference([{"id": "q1", "label": "a", "gold_contexts": ["p3"]}])
            >>> ref.gold("q1"), ref.gold("q2")
            (('p3',), ())
        """
        return self.gold_contexts.get(item_id, ())

    def __iter__(self) -> Iterator[Item]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __repr__(self) -> str:
        return f"<Reference {len(self)} items from {self.source} {self.hash[:12]}>"

    @property
    def hash(self) -> str:
        """:func:`hr_core.core.identity.fingerprint` of ids, payloads and labels, in row order;
        with the gold passages (item order) when any item has them."""
        if self._hash is None:
            rows = [[it.id, it.payload, it.label] for it in self.items]
            gold = self.gold_contexts
            if gold:
                self._hash = fingerprint({"items": rows, GOLD_CONTEXTS: [
                    [it.id, list(gold[it.id])] for it in self.items if it.id in gold]})
            else:
                self._hash = fingerprint(rows)
        return self._hash

    def get(self, item_id: str) -> Item:
        """The item with this id (``KeyError`` naming it when there is none)."""
        if self._by_id is None:
            self._by_id = {it.id: it for it in self.items}
        try:
            return self._by_id[item_id]
        except KeyError:
            raise KeyError(f"{self.source}: no item with id {item_id!r}") from None


def hr_reference(
    data: Any, *, id: str = "id", item: str | None = None, label: str = "label",
    gold_contexts: str = GOLD_CONTEXTS, retrieval: bool = False,
) -> Reference:
    """Read a reference set.

    Args:
        data: a pandas DataFrame, a list of dicts, or a path to ``.csv``,
            ``.jsonl`` or ``.parquet``, or to an official SQuAD ``.json`` file (v1.1
            or v2.0): one item per question, its payload ``id``, ``title``,
            ``context`` and ``question``, its label the answers' texts or, for an
            unanswerable question, ``"NOT_IN_DOCUMENT"`` (the ``squad`` scorers'
            no-answer, as the official evaluation's empty answer). A CSV file's
            header names each column once and every row has as many fields; a JSONL
            file's lines end at ``"\\n"`` alone (a string may hold U+2028 or ``\\r``).
        id: the id column; when the default ``"id"`` is absent, ids are the row
            numbers (``"row1"``, ...). Missing id cells get the same row ids.
        item: ``None`` makes the payload a dict of every other column; a column
            name makes the payload that column's value.
        label: the label column. A CSV cell that is valid JSON (a number such
            as ``7.0``, a list, a string in quotes) is that JSON value; anything
            else is text (``007`` stays ``"007"``); a Parquet string cell too (a
            column of mixed labels is a string column). A float32 label is the
            shortest text of its float32 value (``0.1``). An empty or NaN cell is
            ``None``.
        gold_contexts: the column of each item's gold passages: a list of passage ids
            or texts (a CSV or Parquet string cell holding a JSON array is that list; any
            other string is one passage); an empty cell names none. Not part of the
            payload. A context is relevant when its ``id`` equals a gold entry, or its
            text, normalised (Unicode NFKC, case-folded, whitespace runs as one space),
            equals or contains a normalised gold entry (:mod:`hr_core.scoring.relevance`).
            A column other than the default that is absent is an error.
        retrieval: read a SQuAD ``.json`` file as a retrieval benchmark: the payload is
            the question's ``id``, ``title`` and ``question`` (not its paragraph), and
            each answerable question's gold passage is its paragraph's id
            (``"<title>#p<index>"``); :func:`squad_corpus` gives the paragraphs an arm
            retrieves from.

    Raises:
        ReferenceDataError: naming the file, the row or line and the field: a duplicate
            id, a label of no supported type, a JSONL line that is no JSON object, a
            CSV row with another number of fields than the header, a duplicate or
            empty CSV column name.

    Example:
        >>> ref = hr_reference([{"q": "Capital of France?", "label": '["Paris", "paris"]'}],
        ...                    item="q")
        >>> ref.items[0]
        Item(id='row1', payload='Capital of France?', label='["Paris", "paris"]')
    """
    if isinstance(data, str | Path) and Path(data).suffix.lower() == ".json":
        return _squad_reference(Path(data), id, item, label, retrieval)
    if retrieval:
        raise ReferenceDataError(
            f"{data if isinstance(data, str | Path) else '<data>'}: retrieval=True reads a "
            "SQuAD .json file as a retrieval benchmark; for other data name each item's gold "
            "passages in a gold_contexts column")
    source, records, where, json_cells = read_rows(data)
    if not records:
        raise ReferenceDataError(f"{source}: no items (no rows); add at least one item")
    columns = _columns(records)
    if label not in columns:
        raise ReferenceDataError(
            f"{source}: no label column {label!r} (columns: {', '.join(sorted(columns))}); "
            "pass label=NAME"
        )
    if id not in columns and id != "id":
        raise ReferenceDataError(
            f"{source}: no id column {id!r} (columns: {', '.join(sorted(columns))}); "
            "pass id=NAME, or leave the default to number the rows"
        )
    if gold_contexts not in columns and gold_contexts != GOLD_CONTEXTS:
        raise ReferenceDataError(
            f"{source}: no gold_contexts column {gold_contexts!r} (columns: "
            f"{', '.join(sorted(columns))}); name the column of the gold passages, or leave "
            "the default"
        )
    if item is not None and item not in columns:
        raise ReferenceDataError(
            f"{source}: no item column {item!r} (columns: {', '.join(sorted(columns))}); "
            "pass item=NAME, or item=None for a dict of all columns"
        )
    items: list[Item] = []
    gold: dict[str, list[str]] = {}
    first_row: dict[str, int] = {}
    emptied: list[int] = []  # rows whose label [] or NaN became "no label"
    json_nan = source.lower().endswith(".jsonl")  # JSON says "no label" with null
    for index, record in enumerate(records):
        item_id = _item_id(record.get(id), index)
        if item_id in first_row:
            raise ReferenceDataError(
                f"{source}, {where(index)}, field {id!r}: duplicate id {item_id!r} "
                f"(first at {where(first_row[item_id])}; ids must be unique)"
            )
        first_row[item_id] = index
        raw = record.get(label)
        value = _label(raw, json_cells, f"{source}, {where(index)}", label)
        if value is None and raw is not None and _emptied(raw, json_nan):
            emptied.append(index)
        passages = _gold(record.get(gold_contexts), f"{source}, {where(index)}", gold_contexts)
        if passages:
            gold[item_id] = passages
        if item is None:
            payload: Any = {
                k: _plain(v) for k, v in record.items()
                if k != id and k != label and k != gold_contexts
            }
        else:
            payload = _plain(record.get(item))
        items.append(Item(item_id, payload, value))
    if emptied:
        _warn_emptied(source, label, [where(i) for i in emptied[:3]], len(emptied))
    return Reference(items, source, gold)


def _gold(value: Any, where: str, field: str) -> list[str]:
    """One cell of gold passages as a list of strings (ids or texts); ``[]`` for none."""
    value = _plain(value)
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            if isinstance(parsed, list):
                return _gold(parsed, where, field)
        return [value] if text else []
    if isinstance(value, int) and not isinstance(value, bool):
        return [str(value)]
    if isinstance(value, list):
        passages: list[str] = []
        for entry in value:
            if isinstance(entry, bool) or not isinstance(entry, str | int):
                raise ReferenceDataError(
                    f"{where}, field {field!r}: a gold passage must be a string (an id or a "
                    f"text), got {type(entry).__name__} ({entry!r}); use a list of strings")
            if str(entry).strip():
                passages.append(str(entry))
        return passages
    raise ReferenceDataError(
        f"{where}, field {field!r}: gold passages must be a list of strings (ids or texts), "
        f"got {type(value).__name__} ({value!r})")


def _emptied(raw: Any, json_nan: bool) -> bool:
    """Whether a label cell that reads as "no label" was written as something else: an
    empty list (or one of missing values only), or NaN in JSON (where ``null`` says it)."""
    if isinstance(raw, float):
        return json_nan and math.isnan(raw)
    return isinstance(raw, list | tuple) or type(raw).__name__ == "ndarray"


def _warn_emptied(source: str, field: str, first: list[str], count: int) -> None:
    warnings.warn(
        f"{source}: {count} item(s) have a {field!r} of [] or NaN ({', '.join(first)}"
        f"{', ...' if count > len(first) else ''}), read as no label (like null): they are "
        "unscored; give the accepted answers, or null for no label", stacklevel=3)
def _squad_reference(path: Path, id: str, item: str | None, label: str,
                     retrieval: bool = False) -> Reference:
    """A SQuAD JSON file's questions (:mod:`hr_core.data.squad_file`)."""
    if id != "id" or label != "label":
        raise ReferenceDataError(f"{path}: a SQuAD file has its own ids and labels; leave "
                                 "id= and label= out")
    if not path.is_file():
        raise ReferenceDataError(f"{path}: cannot read: no such file")
    rows = read_squad(path, item, retrieval)
    if not rows:
        raise ReferenceDataError(f"{path}: no items (no questions); add at least one item")
    seen: set[str] = set()
    for qid, _, _, _ in rows:
        if qid in seen:
            raise ReferenceDataError(f"{path}: duplicate question id {qid!r} (ids must be "
                                     "unique)")
        seen.add(qid)
    return Reference([Item(*row[:3]) for row in rows], str(path),
                     {row[0]: row[3] for row in rows if row[3]})


def _columns(records: list[dict[str, Any]]) -> set[str]:
    columns: set[str] = set()
    for record in records:
        columns.update(record)
    return columns


def _item_id(value: Any, index: int) -> str:
    if value is None or is_missing(value) or (isinstance(value, str) and not value.strip()):
        return f"row{index + 1}"
    if isinstance(value, str):
        return _own(value)  # not the caller's object (see _own)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return plain_digits(value)
    return str(value)


def _label(value: Any, json_cells: JsonCells, where: str, field: str) -> Any:
    value = _plain(value)
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if json_cells == "any" or (json_cells == "arrays" and text.startswith("[")):
            parsed = _json_cell(text)
            if parsed is not _NOT_JSON:
                return _label(parsed, None, where, field)
        return value
    if isinstance(value, list):
        accepted = [v for v in (_label(v, None, where, field) for v in value) if v is not None]
        if any(isinstance(v, list) for v in accepted):
            raise ReferenceDataError(
                f"{where}, field {field!r}: a label list holds another list; "
                "use a flat list of accepted answers"
            )
        return accepted or None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    raise ReferenceDataError(
        f"{where}, field {field!r}: unsupported label type {type(value).__name__} ({value!r}); "
        "use a string, a number, or a list of them"
    )


_NOT_JSON = object()


def _json_cell(text: str) -> Any:
    """The JSON value a label cell holds when it is a number, a list or a quoted string.

    Anything else (``007``, ``true``, ``NaN``, an object, plain text) is not read as JSON.
    """
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return _NOT_JSON
    if isinstance(parsed, bool) or parsed is None or isinstance(parsed, dict):
        return _NOT_JSON
    if isinstance(parsed, float) and not math.isfinite(parsed):
        return _NOT_JSON
    return parsed


def _own(value: Any) -> Any:
    """A str, int or float of the caller's records as a new object, the reference's own.

    The records are usually dropped after the call (a list made for it, a file's rows):
    their dicts are freed, but Python's allocator gives an arena back to the system only
    once every object in it is, and the ids, labels and payload values a reference kept
    were in every arena: a large reference kept its records' freed dicts resident to the
    end of the run (issue 25). Copied, they are allocated together, and the records'
    arenas are given back with the records. A caller that keeps its records holds both."""
    kind = type(value)
    if kind is str:
        return (value + " ")[:-1] if len(value) > 1 else value  # 1-char strings are shared
    if kind is int:
        return value + 0  # a new object beyond CPython's cached -5..256
    if kind is float:
        return value + 0.0
    return value


def _plain(value: Any) -> Any:
    """Python values for cells (the reference's own objects, :func:`_own`): numpy
    scalars/arrays to Python, NaN/NA to None."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str | int):
        return _own(value)
    if isinstance(value, float):
        return None if math.isnan(value) else _own(value)
    if is_missing(value):
        return None
    kind = type(value).__name__
    if kind in ("float32", "float16"):  # shortest text of its own precision
        return _plain(float(str(value)))
    if kind == "ndarray":
        if str(value.dtype) in ("float32", "float16"):
            return [_plain(v) for v in value]
        return [_plain(v) for v in value.tolist()]
    if kind in ("float32", "float16"):  # the shortest text of its own precision: 0.1, not
        return _plain(float(str(value)))  # 0.10000000149011612
    if hasattr(value, "item") and kind.startswith(("int", "uint", "float", "bool")):
        return _plain(value.item())
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value
