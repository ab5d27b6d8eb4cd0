"""Reading the official SQuAD JSON (v1.1 and v2.0: ``data/paragraphs/qas``) as items.

Each question is one item: its id is the question's ``id``; its payload the ``id``,
``title``, ``context`` and ``question`` (or the one field ``item`` names); its label the
texts of its ``answers`` (a list, as the official evaluation takes the best), or
:data:`NO_ANSWER` when it has none: an unanswerable question (SQuAD 2.0's
``is_impossible``), never an unlabelled one. As the official evaluate-v2.0.py, the answers
decide (a question is answerable when it has answers); a question marked ``is_impossible``
that lists answers anyway is read as answerable, with a warning giving the count.

Read as a retrieval benchmark (``retrieval=True``), an item's payload is its ``id``,
``title`` and ``question`` only (its paragraph would make retrieval free), and each
answerable question's gold passage is the id of its paragraph, :func:`passage_id`
(``"<title>#p<paragraph index>"``); :func:`squad_corpus` gives each article's paragraphs,
the corpus an arm retrieves from. An unanswerable question names no gold passage.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

from hr_core.core.errors import ReferenceDataError

__all__ = ["NO_ANSWER", "passage_id", "read_squad", "squad_corpus"]

NO_ANSWER = "NOT_IN_DOCUMENT"
"""The label of an unanswerable question (SQuAD 2.0's ``is_impossible``)."""

_PAYLOAD_FIELDS = ("id", "title", "context", "question")
_RETRIEVAL_FIELDS = ("id", "title", "question")


def passage_id(title: str, paragraph: int) -> str:
    """The id of an article's paragraph (from 0) in a SQuAD retrieval benchmark.

    Example:
        >>> passage_id("Normans", 3)
        'Normans#p3'
    """
    return f"{title}#p{paragraph}"


def squad_corpus(path: Path) -> dict[str, list[tuple[str, str]]]:
    """Each article's paragraphs as ``(passage id, text)``, by title, in file order: the
    corpus an arm of a SQuAD retrieval benchmark retrieves from.

    Raises:
        ReferenceDataError: naming the file, the place in it and what to do.
    """
    corpus: dict[str, list[tuple[str, str]]] = {}
    for a, article in enumerate(_articles(path)):
        where = f"{path}, data[{a}]"
        title = _field(article, "title", str, where, default="")
        corpus[title] = [
            (passage_id(title, p), _field(paragraph, "context", str, f"{where}.paragraphs[{p}]"))
            for p, paragraph in enumerate(_field(article, "paragraphs", list, where))]
    return corpus


def _articles(path: Path) -> list[Any]:
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
    return list(document["data"])


def read_squad(path: Path, item: str | None, retrieval: bool = False
               ) -> list[tuple[str, Any, Any, list[str]]]:
    """``(id, payload, label, gold passages)`` of every question of a SQuAD JSON file, in
    file order (gold passages only with ``retrieval``: see the module's docstring).

    Raises:
        ReferenceDataError: naming the file, the place in it and what to do.
    """
    source = str(path)
    articles = _articles(path)
    fields = _RETRIEVAL_FIELDS if retrieval else _PAYLOAD_FIELDS
    if item is not None and item not in fields:
        raise ReferenceDataError(f"{source}: no item field {item!r} in a SQuAD file (fields: "
                                 f"{', '.join(fields)}); or item=None for all")
    rows: list[tuple[str, Any, Any, list[str]]] = []
    contradicting = 0
    for a, article in enumerate(articles):
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
                gold = [passage_id(title, p)] if retrieval and texts else []
                if retrieval:
                    del payload["context"]
                rows.append((qid, payload if item is None else payload[item],
                             texts if texts else NO_ANSWER, gold))
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
