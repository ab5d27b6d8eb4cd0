"""The retriever step of a declarative LLM arm: passages found for each item fill the prompt.

An LLM arm with ``retriever:`` (:class:`RetrieverSpec`) first retrieves the ``k`` best
passages for the item, writes them into the prompt's ``{contexts}`` placeholder and
returns them as the run's contexts (ids, texts, scores, in rank order), so the retrieval
figures and the attribution of failed answers work (:mod:`hr_core.scoring.relevance`).

- ``kind: bm25``: BM25 from the maintained library ``bm25s`` (its default Lucene
  variant, k1 = 1.5, b = 0.75; lower-cased words of 2+ characters, English stop words
  removed, no stemming) over the passages of ``corpus``: a ``.jsonl``, ``.csv`` or
  ``.parquet`` file of rows with an ``id`` and a ``text`` column (names set by ``id`` and
  ``text``), or a SQuAD ``.json`` file, whose articles' paragraphs are the passages (ids
  ``"<title>#p<n>"``, as :func:`hr_core.data.squad_file.passage_id`). With ``within: F``,
  an item retrieves only among the passages whose column ``F`` (a SQuAD file: the
  article's ``title``) equals its payload's field ``F``.
- ``kind: "python:pkg.module:function"``: a user's own retriever,
  ``function(query, k)`` (sync or async) returning passages best first, each a
  :class:`~hr_core.results.Context`, a mapping ``{id, text, score}`` or a text.

The query is ``query`` (a template filled from the payload, default ``"{question}"``).
Each passage is written with ``format`` (fields ``rank`` from 1, ``id``, ``text``,
``score``; default ``"[{rank}] {text}"``) and the passages joined by ``separator``
(default a blank line). ``k`` is at most :data:`~hr_core.store.record.CONTEXTS_MAX`, a
corpus at most :data:`CORPUS_MAX` passages. What decides the passages (the kind, the
library's version, k, the query, the corpus's content hash, ...) is in the arm's
fingerprint (:meth:`Retriever.describe`); the index is built once per process and corpus
(and ``within`` value), on first use, never per item (a process keeps the most recently
used indexes of up to 4,000,000 passages).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import string
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import bm25s
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hr_core.core.errors import HrError, SpecError
from hr_core.core.identity import callable_spec, fingerprint_stream
from hr_core.data.reference_rows import read_rows
from hr_core.data.squad_file import squad_corpus
from hr_core.results import Context
from hr_core.run.threads import DaemonPool
from hr_core.store.record import CONTEXTS_MAX

__all__ = ["CORPUS_MAX", "Retriever", "RetrieverSpec"]

CORPUS_MAX = 2_000_000
"""The most passages a retriever's corpus may hold."""

_PASSAGE_FIELDS = frozenset({"rank", "id", "text", "score"})
_BM25 = {"method": "lucene", "k1": 1.5, "b": 0.75, "stopwords": "en"}
_INDEXES: OrderedDict[tuple[str, str | None], tuple[Any, int]] = OrderedDict()
_INDEXED_MAX = 4_000_000  # passages a process keeps indexed (least recently used dropped)
_LOCK = threading.Lock()
_POOL = DaemonPool(4, thread_name_prefix="hr-retriever")
"""Daemon threads (as sync arms'): a search still running never holds up hr's exit."""

# bm25s sets its logger to DEBUG when imported: a line for every index built in a flow
# run's log. Its information and warnings still show.
logging.getLogger("bm25s").setLevel(logging.INFO)


class RetrieverSpec(BaseModel):
    """A declarative LLM arm's retriever step (see the module's docstring).

    Example:
        >>> RetrieverSpec(corpus="passages.jsonl", k=3).format
        '[{rank}] {text}'
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str = "bm25"
    """``bm25`` or ``"python:pkg.module:function"``."""
    corpus: str | None = None
    """The passages (bm25): a .jsonl/.csv/.parquet file of id, text, or a SQuAD .json
    (relative to the spec file)."""
    k: int = Field(default=5, ge=1, le=CONTEXTS_MAX)
    query: str = Field(default="{question}", min_length=1)
    within: str | None = Field(default=None, min_length=1)
    id: str = "id"
    text: str = "text"
    format: str = Field(default="[{rank}] {text}", min_length=1)
    separator: str = "\n\n"
    base_dir: str | None = Field(default=None, exclude=True)
    """The spec file's folder (a relative ``corpus`` is read from it); not a field of
    the spec, and not part of the fingerprint."""

    @field_validator("kind")
    @classmethod
    def _kind(cls, value: str) -> str:
        if value != "bm25" and not (value.startswith("python:") and ":" in value[7:]):
            raise ValueError(f"retriever kind {value!r}: use 'bm25' or "
                             "'python:pkg.module:function'")
        return value

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        _fields(value)  # a template str.format can read
        return value

    @field_validator("format")
    @classmethod
    def _format(cls, value: str) -> str:
        unknown = sorted(set(_fields(value)) - _PASSAGE_FIELDS)
        if unknown:
            raise ValueError(f"retriever format uses {{{unknown[0]}}}; a passage's fields are "
                             f"{', '.join(sorted(_PASSAGE_FIELDS))}")
        return value

    @model_validator(mode="after")
    def _corpus(self) -> RetrieverSpec:
        if self.kind == "bm25" and self.corpus is None:
            raise ValueError("a bm25 retriever needs a corpus: a .jsonl/.csv/.parquet file of "
                             "id, text, or a SQuAD .json")
        if self.kind != "bm25" and (self.corpus is not None or self.within is not None):
            raise ValueError("a python retriever brings its own corpus: drop corpus and within")
        return self

    def corpus_path(self) -> Path:
        """The corpus file (a relative path read from the spec's folder)."""
        assert self.corpus is not None
        path = Path(self.corpus)
        return path if path.is_absolute() or self.base_dir is None else Path(self.base_dir) / path


def _fields(template: str) -> list[str]:
    try:
        return [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        raise ValueError(f"template {template!r}: {exc}") from None


class Retriever:
    """A :class:`RetrieverSpec` made ready for an arm: its corpus read and hashed (at
    planning, so a bad corpus is refused before any call), its index built on first use.
    """

    def __init__(self, arm: str, spec: RetrieverSpec, function: Any = None) -> None:
        self.arm, self.spec = arm, spec
        self.passages: dict[str | None, list[tuple[str, str]]] = {}
        self.function: Any = None
        self.corpus_hash = ""
        self._described: dict[str, Any] = {"kind": spec.kind, "k": spec.k,
                                           "query": spec.query, "format": spec.format,
                                           "separator": spec.separator}
        if spec.kind == "bm25":
            self.passages = self._read_corpus()
            self.corpus_hash = fingerprint_stream(  # passage by passage: no corpus-sized JSON
                sorted(self.passages.items(), key=lambda kv: str(kv[0])))
            self._described.update(corpus_sha256=self.corpus_hash,
                                   within=spec.within, id=spec.id, text=spec.text,
                                   library="bm25s", library_version=metadata.version("bm25s"),
                                   params=dict(_BM25))
        else:  # the function imported by the arm (hr_core.run.arms.import_object)
            self.function = function
            if not callable(self.function):
                raise SpecError(f"arm {arm!r}: retriever {spec.kind!r} is not callable")
            found = callable_spec(self.function)
            self._described.update({k: v for k, v in found.items() if k != "callable"})

    def describe(self) -> dict[str, Any]:
        """What decides the passages, for the arm's fingerprint (no path of this machine)."""
        return dict(self._described)

    def _fail(self, message: str) -> SpecError:
        return SpecError(f"arm {self.arm!r}: retriever corpus {message}")

    def _read_corpus(self) -> dict[str | None, list[tuple[str, str]]]:
        spec, path = self.spec, self.spec.corpus_path()
        grouped: dict[str | None, list[tuple[str, str]]] = {}
        try:
            if path.suffix.lower() == ".json":
                if spec.within not in (None, "title"):
                    raise self._fail(f"{path}: a SQuAD file's passages are grouped by "
                                     f"'title' only, not {spec.within!r}")
                for title, paragraphs in squad_corpus(path).items():
                    key = title if spec.within else None
                    grouped.setdefault(key, []).extend(paragraphs)
                return self._bounded(path, grouped)
            source, records, where, _ = read_rows(path)
        except HrError as exc:
            if isinstance(exc, SpecError):
                raise
            raise self._fail(str(exc)) from None
        seen: set[str] = set()
        for index, row in enumerate(records):
            if index >= CORPUS_MAX:
                raise self._fail(f"{source}: more than {CORPUS_MAX:,} passages")
            at = f"{source}, {where(index)}"
            pid, text = row.get(spec.id), row.get(spec.text)
            if isinstance(pid, int) and not isinstance(pid, bool):
                pid = str(pid)
            if not isinstance(pid, str) or not pid:
                raise self._fail(f"{at}: column {spec.id!r} needs a passage id (a string), "
                                 f"got {pid!r}; name the id column with the retriever's 'id'")
            if not isinstance(text, str):
                raise self._fail(f"{at}: column {spec.text!r} needs the passage's text, got "
                                 f"{type(text).__name__}; name it with the retriever's 'text'")
            if pid in seen:
                raise self._fail(f"{at}: passage id {pid!r} appears twice; ids are unique")
            seen.add(pid)
            key = None
            if spec.within is not None:
                value = row.get(spec.within)
                if value is None:
                    raise self._fail(f"{at}: no column {spec.within!r} (the retriever's "
                                     "'within')")
                key = str(value)
            grouped.setdefault(key, []).append((pid, text))
        return self._bounded(source, grouped)

    def _bounded(self, source: Any, grouped: dict[str | None, list[tuple[str, str]]]
                 ) -> dict[str | None, list[tuple[str, str]]]:
        total = sum(map(len, grouped.values()))
        if total == 0:
            raise self._fail(f"{source}: holds no passage")
        if total > CORPUS_MAX:
            raise self._fail(f"{source}: more than {CORPUS_MAX:,} passages")
        return grouped

    def check_items(self, items: Iterable[Any]) -> None:
        """Every item has the query's fields and, with ``within``, passages to retrieve
        from; else a ``SpecError`` naming the arm, the field and the first item lacking it
        (checked before any call)."""
        spec = self.spec
        needed = {f.split(".")[0].split("[")[0] for f in _fields(spec.query)} - {"payload"}
        if spec.within is not None:
            needed.add(spec.within)
        lacking: dict[str, list[str]] = {}
        unknown: list[tuple[str, str]] = []
        total = 0
        for item_id, payload, _ in items:
            total += 1
            keys = payload if isinstance(payload, Mapping) else {}
            for field in needed.difference(keys):
                lacking.setdefault(field, []).append(str(item_id))
            if spec.within is not None and spec.within in keys and str(
                    keys[spec.within]) not in self.passages:
                unknown.append((str(item_id), str(keys[spec.within])))
        for field, ids in sorted(lacking.items()):
            raise SpecError(f"arm {self.arm!r}: the retriever uses field {field!r}, which "
                            f"{len(ids)} of {total} items lack (first: {ids[0]!r})")
        if unknown:
            item_id, value = unknown[0]
            raise SpecError(f"arm {self.arm!r}: {len(unknown)} of {total} items have a "
                            f"{spec.within!r} with no passage in the corpus (first: item "
                            f"{item_id!r}, {spec.within} {value!r})")

    async def search(self, payload: Any) -> list[Context]:
        """The ``k`` best passages for one item's payload, best first."""
        fields = dict(payload) if isinstance(payload, Mapping) else {"payload": payload}
        fields.setdefault("payload", payload)
        query = self.spec.query.format_map(fields)
        if self.function is not None:
            if inspect.iscoroutinefunction(self.function):
                found = await self.function(query, self.spec.k)
            else:  # a sync function: off the event loop, as a sync arm
                found = await _off_loop(self.function, query, self.spec.k)
            if inspect.isawaitable(found):
                found = await found
            return [_context(self.spec.kind, p) for p in list(found)[:self.spec.k]]
        group = str(fields[self.spec.within]) if self.spec.within is not None else None
        # CPU work (the first item of a corpus builds its index): off the event loop
        passages: list[Context] = await _off_loop(self._bm25, query, group)
        return passages

    def _bm25(self, query: str, group: str | None) -> list[Context]:
        passages = self.passages.get(group, [])
        if not passages:
            return []
        key = (self.corpus_hash, group)
        with _LOCK:  # one build per index; bm25s's retrieve is not documented thread-safe
            index = self._index(key, passages)
            documents, scores = index.retrieve(
                _tokenize([query], ids=False), k=min(self.spec.k, len(passages)),
                show_progress=False)
        return [Context(id=passages[int(d)][0], text=passages[int(d)][1], score=float(s))
                for d, s in zip(documents[0], scores[0], strict=True)]

    @staticmethod
    def _index(key: tuple[str, str | None], passages: list[tuple[str, str]]) -> Any:
        """The BM25 index of ``passages`` (built on first use; the caller holds _LOCK)."""
        found = _INDEXES.get(key)
        if found is not None:
            _INDEXES.move_to_end(key)
            return found[0]
        index = bm25s.BM25(method=_BM25["method"], k1=_BM25["k1"], b=_BM25["b"])
        index.index(_tokenize([text for _, text in passages], ids=True), show_progress=False)
        _INDEXES[key] = (index, len(passages))
        while len(_INDEXES) > 1 and sum(n for _, n in _INDEXES.values()) > _INDEXED_MAX:
            _INDEXES.popitem(last=False)
        return index

    def fill(self, contexts: Sequence[Context]) -> str:
        """The passages as the prompt's ``{contexts}``: each by ``format``, joined (a
        passage without an id, text or score writes ``""`` for it)."""
        written = []
        for rank, c in enumerate(contexts, start=1):
            try:
                written.append(self.spec.format.format(
                    rank=rank, id=c.id or "", text=c.text or "",
                    score=c.score if c.score is not None else ""))
            except (ValueError, TypeError) as exc:  # "{score:.2f}" of a passage without one
                raise ValueError(f"retriever format {self.spec.format!r} cannot write "
                                 f"passage {rank} ({exc})") from None
        return self.spec.separator.join(written)


async def _off_loop(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` in one of the retrievers' daemon threads, with the caller's context
    (``hr_core.current_run()``)."""
    return await asyncio.get_running_loop().run_in_executor(
        _POOL, contextvars.copy_context().run, fn, *args)


def _tokenize(texts: list[str], ids: bool) -> Any:
    return bm25s.tokenize(texts, stopwords=_BM25["stopwords"], return_ids=ids,
                          show_progress=False)


def _context(kind: str, passage: Any) -> Context:
    if isinstance(passage, Context):
        return passage
    if isinstance(passage, str):
        return Context(text=passage)
    if isinstance(passage, Mapping):
        try:
            return Context.model_validate(dict(passage))
        except ValueError as exc:
            reason = " ".join(str(exc).split())[:200]
            raise ValueError(f"retriever {kind!r} returned a passage that is no context: "
                             f"{reason}") from None
    raise ValueError(f"retriever {kind!r} returned a {type(passage).__name__}; return "
                     "Context objects, {id, text, score} mappings or texts")
