"""Which of a run's contexts are relevant: matched against the item's gold passages, or,
where the item names none, by answer containment (the DPR convention).

A run's contexts (``RunRecord.contexts``: ``{"id", "text", "score"}`` objects, best
first) are judged once, when the runs table is written, into two columns of
``runs.parquet`` (:data:`RETRIEVAL_COLUMNS`) from which every retrieval figure is
computed (:mod:`hr_core.stats.retrieval`):

- ``gold_ranks``: the ranks (from 1) at which the run found the item's gold passages,
  one per gold passage found (its first matching context), ascending, space-separated
  (``""``: none found); under answer containment, the ranks of the contexts that contain
  an accepted answer;
- ``gold_n``: how many gold passages the item names; missing under answer containment
  (its recall is undefined: nobody counted the relevant passages);
- ``attribution``: why a failed run failed (:func:`attribute`), where the item names
  gold passages: ``retrieval miss``, ``reading error`` or ``refusal despite evidence``.

A context matches a gold passage when its ``id`` equals it, or when its text,
normalised by :func:`normalise_passage` (Unicode NFKC, case-folded, every whitespace run
one space, trimmed: ``" ".join(text.split())``), equals or contains the normalised gold
passage (a retrieved chunk that holds the whole gold passage). Answer containment: a
context whose normalised text contains a normalised accepted answer (labels but
``NOT_IN_DOCUMENT``). The columns are missing for a run without contexts, and
``gold_ranks`` for an item with neither gold passages nor an answer.
:func:`contexts_line` is the compact text of the contexts that pages show.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hr_core.scoring.squad import NO_ANSWER

__all__ = ["ATTRIBUTED", "ATTRIBUTIONS", "RETRIEVAL_COLUMNS", "answerable", "attribute",
           "attribute_column", "contexts_line", "gold_ranks", "judge_contexts",
           "normalise_passage"]

RETRIEVAL_COLUMNS = ("contexts", "gold_ranks", "gold_n", "attribution", "contexts_cut")
"""The columns ``runs.parquet`` has when any run returned contexts: the compact text of
the contexts (:func:`contexts_line`), the ranks of the gold passages found, how many the
item names, why a failed run failed (:func:`attribute`), and how many of its passages
were dropped or cut to the record's bounds (missing: none; so a page's note on cut
contexts reads one small column, not every run's contexts)."""

ATTRIBUTIONS = ("retrieval miss", "reading error", "refusal despite evidence")
"""Where the chain broke for a failed run, in the order pages list them."""

_READING = frozenset({"wrong", "parse_failure"})
_REFUSING = frozenset({"not_in_document", "refusal"})
ATTRIBUTED = _READING | _REFUSING
"""The failure kinds :func:`attribute` may attribute (any other run is never attributed)."""

_SPACE = re.compile(r"\s+")
_SHOWN = 5  # contexts a line names
_PREFIX = 40  # characters of a context without an id shown


def normalise_passage(text: str) -> str:
    """A passage or answer as compared: NFKC, case-folded, whitespace runs as one space.

    Example:
        >>> normalise_passage("  The LOIRE\\n is  long. ")
        'the loire is long.'
    """
    if text.isascii():  # NFKC is the identity and casefold is lower on ASCII
        return " ".join(text.lower().split())
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


class _Texts:
    """A run's context texts, lowered and normalised once, when first needed: most
    checks are decided by a context's id, or by one look for the gold passage's longest
    word in all the run's texts lowered together (ASCII), without normalising each 1 KB
    passage."""

    __slots__ = ("_blob", "_normalised", "texts")

    def __init__(self, contexts: Sequence[dict[str, Any]]) -> None:
        self.texts = [c.get("text") if isinstance(c.get("text"), str) else None
                      for c in contexts]
        self._blob: str | None = None
        self._normalised: dict[int, str] = {}

    def may_hold(self, wanted: str, key: str) -> bool:
        """``False`` when no text can contain ``wanted`` (its longest word ``key`` is in
        none of them); ``True`` when some might."""
        if self._blob is None:
            self._blob = "\0".join(t for t in self.texts if t is not None)
        blob = self._blob
        if not blob:
            return False
        return not (wanted.isascii() and blob.isascii()) or key in blob.lower()

    def holds(self, index: int, wanted: str) -> bool:
        """Whether context ``index``'s normalised text contains ``wanted`` (normalised)."""
        text = self.texts[index]
        if text is None:
            return False
        normalised = self._normalised.get(index)
        if normalised is None:
            normalised = self._normalised[index] = normalise_passage(text)
        return wanted in normalised


def _key(wanted: str) -> str:
    return max(wanted.split(" "), key=len)


def gold_ranks(contexts: Sequence[dict[str, Any]], gold: Sequence[str]) -> list[int]:
    """The rank (from 1) of the first context matching each gold passage, ascending; the
    gold passages no context matches are left out.

    Example:
        >>> gold_ranks([{"id": "p7"}, {"id": "p3"}, {"text": "Paris is in FRANCE."}],
        ...            ["p3", "paris is in france.", "p9"])
        [2, 3]
    """
    ids = [c.get("id") for c in contexts]
    texts = _Texts(contexts)
    ranks = []
    for passage in gold:
        at = ids.index(passage) if passage in ids else len(ids)
        wanted = normalise_passage(passage)
        if at and wanted and texts.may_hold(wanted, _key(wanted)):  # an earlier text holds it
            at = next((i for i in range(at) if texts.holds(i, wanted)), at)
        if at < len(ids):
            ranks.append(at + 1)
    return sorted(ranks)


def _containing(contexts: Sequence[dict[str, Any]], label: Any) -> list[int] | None:
    """Ranks of the contexts holding an accepted answer; ``None`` without an answer."""
    accepted = label if isinstance(label, list) else [label]
    answers = [normalise_passage(str(a)) for a in accepted
               if a is not None and not isinstance(a, bool) and a != NO_ANSWER]
    answers = [a for a in answers if a]
    if not answers:
        return None
    texts = _Texts(contexts)
    answers = [a for a in answers if texts.may_hold(a, _key(a))]
    return [index + 1 for index in range(len(contexts))
            if any(texts.holds(index, a) for a in answers)]


def judge_contexts(contexts: Sequence[dict[str, Any]] | None, gold: Sequence[str],
                   label: Any) -> tuple[str | None, int | None]:
    """``(gold_ranks, gold_n)`` of one run (see the module's docstring).

    Example:
        >>> judge_contexts([{"id": "p1"}, {"id": "p3"}], ["p3"], "x")
        ('2', 1)
        >>> judge_contexts([{"text": "It is Paris."}], [], ["Paris"])
        ('1', None)
        >>> judge_contexts(None, ["p3"], "x")
        (None, None)
    """
    if contexts is None:
        return None, None
    if gold:
        return " ".join(map(str, gold_ranks(contexts, gold))), len(gold)
    found = _containing(contexts, label)
    return (None if found is None else " ".join(map(str, found))), None


def attribute(failure_kind: str | None, ranks: str | None, n_gold: int | None,
              label: Any) -> str | None:
    """Why a failed run failed, where its item names gold passages: a ``retrieval miss``
    (no gold passage among its contexts), a ``reading error`` (one retrieved; the answer
    ``wrong`` or a ``parse_failure``) or a ``refusal despite evidence`` (one retrieved;
    ``not_in_document`` or a ``refusal``). ``None`` for any other run: correct, ``error``
    or ``budget_stop`` (no answer to blame), no contexts, no gold passages (answer
    containment does not attribute), an unanswerable item. One run of
    :func:`attribute_column`, the rule's one definition.

    Example:
        >>> attribute("wrong", "", 1, "x"), attribute("wrong", "2", 1, "x")
        ('retrieval miss', 'reading error')
        >>> attribute("refusal", "1", 2, "x"), attribute("error", "", 1, "x")
        ('refusal despite evidence', None)
    """
    blamed = attribute_column(pa.array([failure_kind], pa.string()),
                              pa.array([ranks], pa.string()), pa.array([n_gold], pa.int64()),
                              answerable([label]))
    return blamed[0].as_py()


def answerable(labels: Sequence[Any]) -> np.ndarray:
    """Whether each label is answerable (not :data:`~hr_core.scoring.squad.NO_ANSWER`).

    Example:
        >>> answerable(["Paris", "NOT_IN_DOCUMENT", ["a", "b"]]).tolist()
        [True, False, True]
    """
    return np.fromiter((label != NO_ANSWER for label in labels), dtype=bool,
                       count=len(labels))


_BLAME = pa.array([None, *ATTRIBUTIONS], pa.string())
_READ_KINDS = pa.array(sorted(_READING), pa.string())
_ATTRIBUTED_KINDS = pa.array(sorted(ATTRIBUTED), pa.string())


def attribute_column(kinds: pa.Array | pa.ChunkedArray, ranks: pa.Array | pa.ChunkedArray,
                     counts: pa.Array | pa.ChunkedArray, answerable: np.ndarray) -> pa.Array:
    """:func:`attribute` of many runs at once, from their columns: ``failure_kind``,
    ``gold_ranks``, ``gold_n`` (Arrow arrays) and whether each run's item is answerable
    (its label is not :data:`~hr_core.scoring.squad.NO_ANSWER`); a string array.

    Example:
        >>> blamed = attribute_column(pa.array(["wrong", "refusal", None, "wrong"]),
        ...                           pa.array(["", "1", "1", "2"]), pa.array([1, 1, 1, None]),
        ...                           np.array([True, True, True, True]))
        >>> blamed.to_pylist()
        ['retrieval miss', 'refusal despite evidence', None, None]
    """
    def flags(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
        return np.asarray(pc.fill_null(values, False).to_numpy(zero_copy_only=False), dtype=bool)

    judged = (flags(pc.is_valid(counts)) & flags(pc.is_valid(ranks)) & answerable
              & flags(pc.is_in(kinds, value_set=_ATTRIBUTED_KINDS)))
    missed = flags(pc.equal(pc.utf8_length(ranks), 0))
    reading = flags(pc.is_in(kinds, value_set=_READ_KINDS))
    codes = np.where(judged, np.where(missed, 1, np.where(reading, 2, 3)), 0)
    return _BLAME.take(pa.array(codes.astype(np.int8)))


def contexts_line(contexts: Sequence[dict[str, Any]] | None, cut: int | None = None
                  ) -> str | None:
    """The contexts as one short line: the first few ids (a quoted text prefix for one
    without an id), with their scores, and how many more there were.

    Example:
        >>> contexts_line([{"id": "p3", "score": 0.8125}, {"text": "The Loire is long."},
        ...                *[{"id": f"x{i}"} for i in range(5)]], cut=2)
        'p3 (0.812), "The Loire is long.", x0, x1, x2 (+2 more; 2 cut)'
    """
    if contexts is None:
        return None
    parts = []
    for context in contexts[:_SHOWN]:
        cid, text, score = context.get("id"), context.get("text"), context.get("score")
        if cid is not None:
            shown = str(cid)
        else:
            plain = _SPACE.sub(" ", str(text)).strip()
            shown = '"' + (plain if len(plain) <= _PREFIX else plain[:_PREFIX - 1] + "…") + '"'
        if isinstance(score, int | float):
            shown += f" ({score:.3g})"
        parts.append(shown)
    more = len(contexts) - _SHOWN
    notes = [f"+{more} more"] if more > 0 else []
    if cut:
        notes.append(f"{cut} cut")
    line = ", ".join(parts) or "(none)"
    return f"{line} ({'; '.join(notes)})" if notes else line
