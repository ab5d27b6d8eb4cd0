"""Reading the official SQuAD JSON (v1.1 and v2.0: ``data/paragraphs/qas``) as items.

Each question is one item: its id is the question's ``id``; its payload the ``id``,
``title``, ``context`` and ``question`` (or the one field ``item`` names); its label the
texts of its ``answers`` (a list, as the official evaluation takes the best), or
:data:`NO_ANSWER` when it has none: an unanswerable question (SQuAD 2.0's
``is_impossible``), never an unlabelled one. As the official evaluate-v2.0.py, the answers
decide (a question is answerable when it has answers); a question marked ``is_impossible``
that lists answers anyway is read as answerable, with a warning giving the count.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

from hr_core.core.errors import ReferenceDataError

__all__ = ["NO_ANSWER", "read_squad"]

NO_ANSWER = "NOT_IN_DOCUMENT"
"""The label of an unanswerable question (SQuAD 2.0's ``is_impossible``)."""

_PAYLOAD_FIELDS = ("id", "title", "context", "question")


def read_squad(path: Path, item: str | None) -> list[tuple[str, Any, Any]]:
    """``(id, payload, label)`` of every question of a SQuAD JSON file, in file order.

    Raises:
        ReferenceDataError: naming the file, the place in it and what to do.
    """
    source = str(path)
    try:
        with path.open(encoding="utf-8") as handle:
            document = json.load(handle)
    except json.JSONDecodeError as exc:
        raise ReferenceDataError(f"{source}, line {exc.lineno}: not valid JSON ({exc.msg}); "
                                 "a .json reference set is a SQuAD file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReferenceDataError(f"{source}: cannot read: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        raise ReferenceDataError(f"{source}: not a SQuAD file (no list 'data' at the top); "
                                 "a .json reference set is SQuAD's data/paragraphs/qas, other "
                                 "tables are .jsonl, .csv or .parquet")
    if item is not None and item not in _PAYLOAD_FIELDS:
        raise ReferenceDataError(f"{source}: no item field {item!r} in a SQuAD file (fields: "
                                 f"{', '.join(_PAYLOAD_FIELDS)}); or item=None for all")
    rows: list[tuple[str, Any, Any]] = []
    contradicting = 0
    for a, article in enumerate(document["data"]):
        title = _field(article, "title", str, f"{source}, data[{a}]", default="")
        for p, paragraph in enumerate(_field(article, "paragraphs", list, f"{source}, data[{a}]")):
            where = f"{source}, data[{a}].paragraphs[{p}]"
            context = _field(paragraph, "context", str, where)
            for q, qa in enumerate(_field(paragraph, "qas", list, where)):
                at = f"{where}.qas[{q}]"
                qid = _field(qa, "id", str, at)
                answers = _field(qa, "answers", list, at, default=[])
                texts = [_field(answer, "text", str, f"{at}.answers[{i}]")
                         for i, answer in enumerate(answers)]
                if texts and qa.get("is_impossible") is True:
                    contradicting += 1
                payload = {"id": qid, "title": title, "context": context,
                           "question": _field(qa, "question", str, at)}
                rows.append((qid, payload if item is None else payload[item],
                             texts if texts else NO_ANSWER))
    if contradicting:
        warnings.warn(f"{source}: {contradicting} question(s) marked is_impossible list "
                      "answers; read as answerable, as the official evaluation does",
                      stacklevel=3)
    return rows


def _field(record: Any, name: str, kind: type, where: str, default: Any = None) -> Any:
    if not isinstance(record, dict):
        raise ReferenceDataError(f"{where}: expected a JSON object, got "
                                 f"{type(record).__name__}")
    value = record.get(name, default)
    if not isinstance(value, kind):
        wanted = "a string" if kind is str else "a list"
        raise ReferenceDataError(f"{where}, field {name!r}: expected {wanted}, got "
                                 f"{'nothing' if value is None else type(value).__name__}")
    return value
