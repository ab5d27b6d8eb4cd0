"""The journal record: one finished run, typed and versioned, and its one codec.

A :class:`RunRecord` is what the engine makes of one ``(arm, item, run)`` and what
every reader of a journal gets back: resume (``Journal.read``), the runs table
(``engine/rows.py:write_runs``), compaction, the re-scoring of stored outputs
(``engine/rescore.py``, ``engine/outputs.py:stored_runs``). :func:`encode` writes
one as a JSON line and :func:`decode` reads one back; nothing else writes or
parses a journal line.

The line is the record's fields as a JSON object, ``v`` first (:data:`RECORD_VERSION`,
the same number as the manifest's ``journal_format``); ``arm_output``, ``scored``, the
judge's tokens and cost and the usage by kind of token (cache reads and writes, reasoning,
cost by kind) only when set (a line is as long as before records were typed; a journal
written before they existed reads with them ``None``).
Size rules, all here:

- an ``outcome`` equal to a ``output`` longer than 64 characters is not written
  (:func:`decode` puts it back);
- an ``outcome`` over :data:`OUTCOME_MAX` characters of an output over it is cut
  (:func:`short_outcome`, applied when the run is scored);
- an ``answer``/``text`` field of ``arm_output`` over 256 characters equal to the
  output is stored once (``engine/outputs.py:store_output``);
- ``contexts`` (the passages an :class:`~hr_core.ArmResult` retrieved, best first, as
  ``{"id", "text", "score"}`` objects with the keys set) keeps at most
  :data:`CONTEXTS_MAX` passages, each text cut to :data:`CONTEXT_TEXT_MAX` characters
  (:func:`bound_contexts`); ``contexts_cut`` counts the passages dropped or cut (only
  written when some were). An ``ArmResult``'s ``arm_output`` leaves its contexts out:
  they are stored once, here.

``contexts`` and ``contexts_cut`` are optional fields of format 2 (a line without them
is a run without contexts, as every line written before they existed). A run folder's
journal does not hold the passages themselves: when the record is written they are judged
against the item's gold passages (:func:`~hr_core.scoring.relevance.judge_contexts`) into
``gold_ranks`` and ``gold_n``, summed up in ``contexts_line``
(:func:`~hr_core.scoring.relevance.contexts_line`), and the passages go to the journal's
contexts file (:func:`encode_contexts`, ``Journal.contexts_path``): the runs table needs
only those three short fields, not 10 KB of passages a run (issue 36's write-phase
target). A line with ``contexts_line`` and no ``contexts`` is such a run; a line with
``contexts`` (a worker's or fallback journal, or hr before the contexts file) is judged
when the table is written.

Lines written before the record had ``v`` still read: a line without ``v`` is format 2
(every field optional but ``arm``, ``item_id``, ``run``), or format 1 when it has
``raw`` (the output before ``arm_output`` existed: read as ``arm_output``).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any

import orjson

from hr_core.core.errors import CorruptRunError
from hr_core.data.reference import Item
from hr_core.results import USAGE_KINDS
from hr_core.scoring.answers import has_label

__all__ = ["CONTEXTS_MAX", "CONTEXT_TEXT_MAX", "OUTCOME_MAX", "RECORD_FIELDS", "RECORD_VERSION",
           "RunKey", "RunRecord", "bound_contexts", "decode", "decode_contexts", "encode",
           "encode_contexts", "short_outcome", "stopped_record"]

RECORD_VERSION = 2
"""The journal format a record is written in (its ``v``; the manifest's ``journal_format``)."""

RunKey = tuple[str, str, int]
"""``(arm, item_id, run)``: which run a record is of."""

OUTCOME_MAX = 4096
"""An outcome longer than this, of an output longer than this, is cut to it (ending in
"…"): it is the output's text as compared (folded), and the output is stored in full
once; a 10 MB output would otherwise be written twice."""

CONTEXTS_MAX = 50
"""The most passages a run's record keeps (the first ones: best first); the rest are
dropped and counted in ``contexts_cut``. Retrieval figures look at most this deep."""

CONTEXT_TEXT_MAX = 2000
"""The most characters of one passage's text a record keeps (cut ending in "…", counted
in ``contexts_cut``): 100k runs of 10 passages of 1 KB is already a 1 GB journal."""

_SHORT = 64  # an outcome this long or shorter is written even when it equals the output


@dataclass(init=False)
class RunRecord:
    """One finished run (or one never made: ``failure_kind="budget_stop"``).

    The fields up to ``judge_cost_usd`` are the runs table's columns
    (:data:`RECORD_FIELDS`), the usage by kind of token after them too (when any run has
    one: ``hr_core.results.USAGE_KINDS``); ``arm_output`` (a non-string output as tagged JSON, see
    ``engine/outputs.py``) and ``scored`` (``False``: the scorer broke or has not seen
    the output yet; it is scored again on resume) are the journal's own. The engine
    writes ``truncated`` and ``replayed`` as booleans; ``None`` is a record of an hr that
    did not know them (missing in the runs table).

    Example:
        >>> record = RunRecord(arm="a", item_id="q1", run=1, output="Paris")
        >>> decode(encode(record), "journal.jsonl", 1) == record
        True
        >>> record.key
        ('a', 'q1', 1)
    """

    v: int = RECORD_VERSION
    arm: str = ""
    item_id: str = ""
    run: int = 0
    output: str | None = None
    correct: bool | None = None
    score: float | None = None
    outcome: str | None = None
    failure_kind: str | None = None
    error: str | None = None
    latency_s: float | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    judge_status: str | None = None
    truncated: bool | None = None
    replayed: bool | None = None
    arm_output: dict[str, Any] | None = None
    scored: bool = True
    judge_tokens_in: int | None = None
    judge_tokens_out: int | None = None
    judge_cost_usd: float | None = None
    tokens_cache_read: int | None = None
    tokens_cache_write: int | None = None
    tokens_reasoning: int | None = None
    cost_input_usd: float | None = None
    cost_cache_read_usd: float | None = None
    cost_cache_write_usd: float | None = None
    cost_output_usd: float | None = None
    contexts: list[dict[str, Any]] | None = None
    contexts_cut: int | None = None
    contexts_line: str | None = None
    gold_ranks: str | None = None
    gold_n: int | None = None

    def __init__(self, **fields: Any) -> None:
        """A record of these fields (``arm``, ``item_id`` and ``run`` at least); unknown
        names are refused (``TypeError``)."""
        if not fields.keys() <= _KNOWN:
            raise TypeError(f"RunRecord has no field {sorted(fields.keys() - _KNOWN)}")
        own = self.__dict__
        own.update(_BASE)
        own.update(fields)

    @property
    def key(self) -> RunKey:
        """``(arm, item_id, run)``."""
        return (self.arm, self.item_id, self.run)

    def copy(self) -> RunRecord:
        """A shallow copy (``arm_output`` shared)."""
        return _from_fields(self.__dict__)

    def as_dict(self) -> dict[str, Any]:
        """Every field by name, ``v`` first (shallow: ``arm_output`` shared)."""
        return {**_DEFAULTS, **self.__dict__}


_NAMES = tuple(f.name for f in dataclasses.fields(RunRecord))
_KNOWN = frozenset(_NAMES)
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(RunRecord)}
_CONTEXT_FIELDS = ("contexts", "contexts_cut", "contexts_line", "gold_ranks", "gold_n")
_OWN = ("arm_output", "scored", "judge_tokens_in", "judge_tokens_out", "judge_cost_usd",
        *USAGE_KINDS, *_CONTEXT_FIELDS)
_BASE = {k: v for k, v in _DEFAULTS.items() if k not in _OWN}
"""The fields every record holds itself (its line has them all, ``v`` first). The others
are read from the class (their defaults) until set: a line leaves them out unless set."""


def _from_fields(fields: dict[str, Any]) -> RunRecord:
    """A record of known ``fields`` (the rest their defaults): two dict updates, as fast
    as the dict the journal held before."""
    record = object.__new__(RunRecord)
    own = record.__dict__
    own.update(_BASE)
    own.update(fields)
    return record


RECORD_FIELDS = tuple(n for n in _NAMES
                      if n not in ("v", "arm_output", "scored", *_CONTEXT_FIELDS))
"""The fields of one journaled run that are columns of ``Benchmark.runs`` (with
``judge_status`` and the judge's tokens and cost)."""

_OPTIONS = orjson.OPT_APPEND_NEWLINE


def encode(record: RunRecord, aside: bool = False) -> bytes:
    """One record as its journal line (ending in a newline); ``aside``: without the
    passages of a judged record (``contexts_line`` set), which its journal's contexts file
    holds (:func:`encode_contexts`).

    Example:
        >>> encode(RunRecord(arm="a", item_id="q1", run=1))[:40]
        b'{"v":2,"arm":"a","item_id":"q1","run":1,'
        >>> encode(RunRecord(arm="a", item_id="q1", run=1, truncated=False))[-35:]
        b'"truncated":false,"replayed":null}\\n'
    """
    outcome = record.outcome
    data = record.__dict__
    if outcome is not None and len(outcome) > _SHORT and outcome == record.output:
        data = {k: v for k, v in data.items() if k != "outcome"}
    if aside and data.get("contexts_line") is not None and data.get("contexts") is not None:
        data = {k: v for k, v in data.items() if k != "contexts"}
    return orjson.dumps(data, option=_OPTIONS)


def encode_contexts(record: RunRecord) -> bytes:
    """The contexts file line of a record's passages (:func:`decode_contexts` reads it).

    Example:
        >>> encode_contexts(RunRecord(arm="a", item_id="q1", run=1, contexts=[{"id": "p1"}]))
        b'{"arm":"a","item_id":"q1","run":1,"contexts":[{"id":"p1"}]}\\n'
    """
    return orjson.dumps({"arm": record.arm, "item_id": record.item_id, "run": record.run,
                         "contexts": record.contexts}, option=_OPTIONS)


def decode_contexts(line: bytes) -> tuple[RunKey, list[dict[str, Any]]] | None:
    """A contexts file line's run and passages; ``None`` for a line that is not one (torn
    by a kill: the run's journal line was never written after it, see ``Journal``).

    Example:
        >>> decode_contexts(b'{"arm":"a","item_id":"q1","run":1,"contexts":[{"id":"p1"}]}')
        (('a', 'q1', 1), [{'id': 'p1'}])
        >>> decode_contexts(b'{"arm":"a","item_') is None
        True
    """
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("contexts"), list):
        return None
    arm, item_id, run = data.get("arm"), data.get("item_id"), data.get("run")
    if not (isinstance(arm, str) and isinstance(item_id, str) and type(run) is int):
        return None
    return (arm, item_id, run), data["contexts"]


def decode(line: bytes, path: str | os.PathLike[str], number: int) -> RunRecord | None:
    """One journal line's record; ``None`` for a line that is not JSON (torn by a kill, or
    garbled: :func:`~hr_core.store.journal.journal_lines` tells them apart).

    Raises:
        CorruptRunError: the line parses but is no run record (or one of a newer format),
            naming ``path`` and line ``number``.
    """
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        raise _not_a_record(path, number, line)
    arm, item_id, run = data.get("arm"), data.get("item_id"), data.get("run")
    if not (isinstance(arm, str) and isinstance(item_id, str) and type(run) is int):
        raise _not_a_record(path, number, line)
    if "outcome" not in data:  # written once: it was the output
        data["outcome"] = data.get("output")
    version = data.get("v")
    if version != RECORD_VERSION:
        if version is not None:
            raise CorruptRunError(
                f"{path}, line {number}: a journal record of format {version!r}; this hr "
                f"reads format {RECORD_VERSION}: upgrade hr (`pip install -U hr`) to read "
                "this run")
        return _unversioned(data)
    record = object.__new__(RunRecord)
    record.__dict__ = data  # a line this codec wrote: every field of _BASE, v first
    return record


def _unversioned(data: dict[str, Any]) -> RunRecord:
    """A record written before records had ``v``: every field optional but the key, and
    format 1's ``raw`` (the output before ``arm_output`` existed); unknown keys left out."""
    if "raw" in data:
        raw = data.pop("raw")
        if data.get("arm_output") is None:
            data["arm_output"] = {"kind": "json", "value": raw}
    data.pop("v", None)
    if not data.keys() <= _KNOWN:
        data = {k: v for k, v in data.items() if k in _KNOWN}
    return _from_fields(data)


def short_outcome(outcome: str | None, output: str | None) -> str | None:
    """The outcome a record keeps (see :data:`OUTCOME_MAX`).

    Example:
        >>> len(short_outcome("a" * 10_000, "A" * 10_000))
        4096
        >>> short_outcome("paris", "Paris")
        'paris'
    """
    if (outcome is None or len(outcome) <= OUTCOME_MAX or output is None
            or len(output) <= OUTCOME_MAX):
        return outcome
    return outcome[:OUTCOME_MAX - 1] + "…"


def bound_contexts(contexts: Any) -> tuple[list[dict[str, Any]], int]:
    """The passages a record keeps of an arm's ``contexts`` (``Context`` objects or
    mappings with ``id``/``text``/``score``) and how many were dropped or cut.

    Example:
        >>> from hr_core.results import Context
        >>> kept, cut = bound_contexts([Context(id="p1", score=0.9), Context(text="x" * 5000)])
        >>> kept[0], len(kept[1]["text"]), cut
        ({'id': 'p1', 'score': 0.9}, 2000, 1)
    """
    kept: list[dict[str, Any]] = []
    cut = max(0, len(contexts) - CONTEXTS_MAX)
    for context in contexts[:CONTEXTS_MAX]:
        get = context.get if isinstance(context, dict) else context.__dict__.get
        entry: dict[str, Any] = {}
        for key in ("id", "text", "score"):
            value = get(key)
            if value is not None:
                entry[key] = value
        text = entry.get("text")
        if isinstance(text, str) and len(text) > CONTEXT_TEXT_MAX:
            entry["text"] = text[:CONTEXT_TEXT_MAX - 1] + "…"
            cut += 1
        kept.append(entry)
    return kept, cut


def _not_a_record(path: str | os.PathLike[str], number: int, line: bytes) -> CorruptRunError:
    line = line.rstrip(b"\n")
    shown = line[:80].decode("utf-8", "replace") + ("..." if len(line) > 80 else "")
    return CorruptRunError(
        f"{path}, line {number}: not a run record ({shown}); delete that line (its run is "
        "made again) and run the benchmark again (`hr run SPEC.yaml`)")


def stopped_record(arm: str, item: Item, run: int, reason: str | None = None) -> RunRecord:
    """The record of a run that never started because the budget ran out (or its
    endpoint's quota did: ``reason`` says so, in ``error``)."""
    return RunRecord(arm=arm, item_id=item.id, run=run,
                     correct=False if has_label(item.label) else None,
                     failure_kind="budget_stop", error=reason, truncated=False,
                     replayed=False)
