"""Sorting out outputs that are not answers: the seed's rules 1-4, one definition for every scorer.

Every built-in scorer (``exact`` and the families in :mod:`hr_core.scoring`)
applies these rules first, in this order:

1. an output carrying a failure kind from the list is wrong for that reason;
2. an output whose ``ok`` is false is an ``"error"``;
3. no text (``None``, NaN, ``""``, white space only, nothing in ``answer``/``text``)
   is a ``"parse_failure"`` with outcome ``None``;
4. the text ``NOT_IN_DOCUMENT`` (any case, white space ignored) is
   ``"not_in_document"`` unless the label accepts it (the scorer's own comparison
   decides, so the scorer calls :func:`unmatched` after comparing).

A scorer (the built-ins and the judge scorer) applies rules 1-3 with :func:`sort_out`
(or :func:`plain_answer` first, on its hot path) and :func:`failed`, compares, and ends
an answer its comparison did not accept with :func:`unmatched` (rule 4, then no label or
wrong). Whether an item has a label is :func:`has_label`, for scorers and the engine alike.

**An empty list label** (``[]``, or a list of missing values only) is no label, as
``None``: runs of its item get no verdict (``correct=None``, failures keep their kind).
The reference reader reads such a cell as no label too (and warns), so a scorer, the
engine and the reader agree. A question whose right answer is that the document does
not say is labelled ``NOT_IN_DOCUMENT`` (SQuAD's empty answer list means that, and the
SQuAD reader writes it so).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from hr_core.core.failures import FAILURE_KINDS, FailureKind
from hr_core.core.text import is_missing, output_text, plain_digits
from hr_core.results import ArmResult, ScoreResult

__all__ = ["failed", "has_label", "is_false", "is_not_in_document", "sort_out", "unmatched"]

_KINDS: frozenset[str] = frozenset(FAILURE_KINDS)
_NOT_IN_DOCUMENT: FailureKind = "not_in_document"
_WRONG: FailureKind = "wrong"
_new = tuple.__new__


def is_false(ok: Any) -> bool:
    """``ok`` is false: ``False`` or a numpy ``False`` (other values count as ok)."""
    return ok is False or (type(ok).__name__ in ("bool_", "bool") and not ok)


def sort_out(output: Any) -> tuple[str | None, FailureKind | None]:
    """The output's text, and the failure kind of rules 1-3 when it is not an answer.

    Example:
        >>> sort_out({"answer": "Paris", "failure_kind": "refusal"})
        ('Paris', 'refusal')
        >>> sort_out("  "), sort_out(" Paris ")
        ((None, 'parse_failure'), (' Paris ', None))
    """
    kind_of = type(output)
    if kind_of is str:
        text: str | None = output
        kind: Any = None
        ok: Any = True
    elif kind_of is dict:
        kind, ok = output.get("failure_kind"), output.get("ok", True)
        answer = output.get("answer")
        text = answer if type(answer) is str and answer else output_text(output)
    elif kind_of is ArmResult:
        kind, ok, answer = output.failure_kind, output.ok, output.answer
        text = answer if type(answer) is str and answer else output_text(output)
    elif output is None:
        return None, "parse_failure"
    elif kind_of is int or kind_of is float:
        return (plain_digits(output), None) if output == output else (None, "parse_failure")
    else:
        if isinstance(output, Mapping):
            kind, ok = output.get("failure_kind"), output.get("ok", True)
        else:
            kind, ok = getattr(output, "failure_kind", None), getattr(output, "ok", True)
        text = output_text(output)
    if type(kind) is str and kind in _KINDS:
        return text, cast(FailureKind, kind)
    if ok is not True and is_false(ok):
        return text, "error"
    if not text or text.isspace():
        return None, "parse_failure"
    return text, None


def plain_answer(output: Any) -> Any:
    """The answer text of an output that passes the seed's rules 1-3 at a glance, else
    ``None`` (then :func:`sort_out` decides): a str; a dict or ``ArmResult`` without
    failure kind, with ``ok`` and its ``answer`` (a str or not: the caller checks); a
    number, in plain digits. Dispatch is on the exact type (the scorers' hot path).

    Example:
        >>> plain_answer({"answer": "Paris"}), plain_answer({"ok": False}), plain_answer(2.5)
        ('Paris', None, '2.5')
    """
    kind_of = type(output)
    if kind_of is str:
        return output
    if kind_of is dict:
        if output.get("failure_kind") is None and output.get("ok", True) is True:
            return output.get("answer")
    elif kind_of is ArmResult:
        if output.failure_kind is None and output.ok is True:
            return output.answer
    elif (kind_of is int or kind_of is float) and output == output:
        return str(output) if kind_of is int else plain_digits(output)
    return None


def has_label(label: Any) -> bool:
    """Whether an item's label can score a run: not ``None``/NaN/``NA``, nor a list holding
    no accepted answer (``[]``: see the module's note). The one predicate of scorers,
    engine and reader.

    Example:
        >>> has_label("Paris"), has_label(["Paris"]), has_label(0)
        (True, True, True)
        >>> has_label(None), has_label(float("nan")), has_label([]), has_label([None])
        (False, False, False, False)
    """
    kind = type(label)
    if kind is str or kind is int:
        return True
    if kind is float:
        return label == label
    if kind is list or kind is tuple:
        return any(not is_missing(value) for value in label)
    return not is_missing(label)


def failed(label: Any, outcome: str | None, kind: FailureKind,
           score: float | None = None) -> ScoreResult:
    """A failed run's result: ``correct`` False on a labelled item, ``None`` without label."""
    if has_label(label):
        if score is None:
            return _new(ScoreResult, (False, outcome, kind))
        return _new(ScoreResult, (False, outcome, kind, score))
    return _new(ScoreResult, (None, outcome, kind))


def unmatched(labelled: bool, text: str, outcome: str | None, kind: FailureKind | None = None,
              score: float | None = None) -> ScoreResult:
    """The result of an answer the scorer's comparison did not accept: rule 4 (the text
    ``NOT_IN_DOCUMENT``: ``"not_in_document"``), else ``kind`` (the comparison's own,
    e.g. a pattern that does not match) or ``"wrong"``; without a label no verdict
    (``correct`` and ``score`` ``None``; a kind is kept).

    Example:
        >>> unmatched(True, "Lyon", "lyon")
        ScoreResult(correct=False, outcome='lyon', failure_kind='wrong')
        >>> unmatched(False, " not_in_document", "not_in_document")[::2]
        (None, 'not_in_document')
    """
    if is_not_in_document(text):
        kind = _NOT_IN_DOCUMENT
    if not labelled:
        return _new(ScoreResult, (None, outcome, kind))
    if score is None:
        return _new(ScoreResult, (False, outcome, kind or _WRONG))
    return _new(ScoreResult, (False, outcome, kind or _WRONG, score))


def is_not_in_document(text: str) -> bool:
    """Whether ``text`` is ``NOT_IN_DOCUMENT`` (any case, surrounding white space ignored).

    >>> is_not_in_document("  not_in_document\\n"), is_not_in_document("Paris")
    (True, False)
    """
    return len(text) >= 15 and "_" in text and text.strip().casefold() == "not_in_document"
