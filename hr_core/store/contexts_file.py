"""A journal's contexts file: the passages of each judged run, beside the journal.

A benchmark's journal (``Journal.reference`` set by the session) judges each record with
contexts when it writes it (:func:`judge_record`: ``contexts_line``, ``gold_ranks``,
``gold_n``) and appends the passages here (:func:`append_contexts`,
``journal.contexts.jsonl``) before the journal lines that leave them out: the runs table
reads only the journal (issue 36's write-phase target: 100k runs of 10 passages of 1 KB
are 4 GB of passages, against a journal of ~100 MB), and a journal line never names
passages this file lacks. Readers that need the passages again (a resumed run re-scoring
its unscored runs, another run taking the outputs over) get them with
:func:`fill_contexts`. One line per run, ``{"arm", "item_id", "run", "contexts"}``
(``hr_core.store.record.encode_contexts``); the latest line of a run wins; a torn last line
(a kill) is skipped, and cut by the journal's next flush.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hr_core.core.json_text import jsonl_lines
from hr_core.data.reference import Reference
from hr_core.scoring.relevance import contexts_line, judge_contexts
from hr_core.store.record import RunKey, RunRecord, decode_contexts, encode_contexts

__all__ = ["append_contexts", "fill_contexts", "judge_record", "read_contexts"]


def judge_record(record: RunRecord, reference: Reference) -> bool:
    """Judge a record's contexts against its item's gold passages (or by answer
    containment) once: set its ``contexts_line``, ``gold_ranks`` and ``gold_n``
    (:mod:`hr_core.scoring.relevance`); ``False`` (nothing set) for a record without
    contexts or of an item ``reference`` lacks.

    Example:
        >>> from hr_core import hr_reference
        >>> ref = hr_reference([{"id": "q1", "label": "a", "gold_contexts": ["p3"]}])
        >>> record = RunRecord(arm="x", item_id="q1", run=1, contexts=[{"id": "p1"}, {"id": "p3"}])
        >>> judge_record(record, ref), record.contexts_line, record.gold_ranks, record.gold_n
        (True, 'p1, p3', '2', 1)
    """
    contexts = record.contexts
    if contexts is None:
        return False
    try:
        item = reference.get(record.item_id)
    except KeyError:
        return False
    ranks, count = judge_contexts(contexts, reference.gold(item.id), item.label)
    if ranks is not None:
        record.gold_ranks = ranks
    if count is not None:
        record.gold_n = count
    record.contexts_line = contexts_line(contexts, record.contexts_cut) or ""
    return True


def append_contexts(path: Path, records: Iterable[RunRecord]) -> int:
    """Append the passages of the judged records (``contexts_line`` and ``contexts`` set)
    to the contexts file ``path`` and fsync; returns how many lines were written."""
    judged = [r for r in records if r.contexts is not None and r.contexts_line is not None]
    if judged:
        with path.open("ab", buffering=1 << 16) as side:
            for record in judged:
                side.write(encode_contexts(record))
            side.flush()
            os.fsync(side.fileno())
    return len(judged)


def read_contexts(path: Path, keys: set[RunKey] | None = None
                  ) -> dict[RunKey, list[dict[str, Any]]]:
    """The passages a contexts file holds, by run (those of ``keys`` only, when given;
    the latest line of a run wins; a line that does not parse is skipped)."""
    found: dict[RunKey, list[dict[str, Any]]] = {}
    if not path.exists():
        return found
    with open(path, "rb") as handle:
        for _, _, line in jsonl_lines(handle):
            got = decode_contexts(line)
            if got is not None and (keys is None or got[0] in keys):
                found[got[0]] = got[1]
    return found


def fill_contexts(path: Path, records: Iterable[RunRecord]) -> int:
    """Put back the passages of records read from a journal without them
    (``contexts_line`` set, ``contexts`` not) from the contexts file ``path``, for a
    scorer that sees them again or another run that takes the records over; returns how
    many were found."""
    wanted = {r.key: r for r in records if r.contexts is None and r.contexts_line is not None}
    if not wanted:
        return 0
    found = read_contexts(path, set(wanted))
    for key, contexts in found.items():
        wanted[key].contexts = contexts
    return len(found)
