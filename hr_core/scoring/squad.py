"""SQuAD 2.0's scoring rules, as the official evaluate-v2.0.py applies them, for ``exact``
with ``normalise: squad``/``squad_hr`` and for ``f1``.

The official script (``get_raw_scores``) compares the folded prediction with each gold
answer that does not fold to nothing; a question with no such answer (unanswerable) has the
one gold answer ``""``. So:

- an empty prediction (``""``, white space, or one that folds to nothing such as ``"the"``)
  is the no-answer: correct (EM 1, F1 1) on an unanswerable question, EM 0 and F1 0 on an
  answerable one;
- ``NOT_IN_DOCUMENT`` (hr's no-answer, any case) is the empty prediction too;
- a label is unanswerable when it accepts ``NOT_IN_DOCUMENT`` (:data:`NO_ANSWER`, the label
  :func:`~hr_core.hr_reference` gives an unanswerable SQuAD question) or when none of its
  accepted answers folds to something (``"the"``); an empty list is no label, as with
  every scorer (:mod:`hr_core.scoring.answers`).

An output that is not an answer by rules 1-3 (:mod:`hr_core.scoring.answers`: a failure kind, ``ok``
false, no text at all) fails as with every scorer; a string answer, even empty, is an answer.
A run that said "no answer" where there is one is ``not_in_document``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hr_core.core.failures import FAILURE_KINDS
from hr_core.core.text import (
    MEMO_SIZE,
    accepted_texts,
    label_text,
    output_text,
    plain_digits,
    remember,
)
from hr_core.data.squad_file import NO_ANSWER
from hr_core.results import ScoreResult
from hr_core.scoring.answers import failed, is_not_in_document, plain_answer, sort_out

__all__ = ["NO_ANSWER", "SquadPrediction", "squad_golds", "squad_golds_lookup",
           "squad_golds_memo", "squad_number_memos", "squad_prediction", "squad_result"]

"""The label of an unanswerable question (SQuAD's empty gold answer)."""

Fold = Callable[[str], str]

SquadPrediction = tuple[str, str, bool]
"""``(outcome, compared, said_no_answer)``: the prediction folded (the run's outcome), the
text compared with the gold answers (``""`` for ``NOT_IN_DOCUMENT``), and whether the run
said there is no answer (empty, or ``NOT_IN_DOCUMENT``)."""

_new = tuple.__new__
_GOLDS: dict[Fold, dict[Any, tuple[str, ...]]] = {}
"""Each folding's memo of folded labels: a str label (or a number's plain digits) by
itself, a list label by the tuple of its texts."""
_NUMBER_GOLDS: dict[Fold, tuple[dict[Any, tuple[str, ...]], dict[Any, tuple[str, ...]]]] = {}
"""Each folding's memos of int and of float labels, by the number."""


def squad_prediction(output: Any, fold: Fold, label: Any,
                     failed_score: float | None) -> SquadPrediction | ScoreResult:
    """The prediction of an output, or the failed run's result when it is not an answer.

    Rules 1-3 as every scorer, except that an output whose text (SPEC section 4) is empty
    or white space is the empty prediction, not a ``parse_failure``; an output with no
    text at all (``None``, a mapping without ``answer``/``text``) still is one.
    """
    text = plain_answer(output)
    if type(text) is not str or not text:
        found, kind = sort_out(output)
        if kind == "parse_failure" and found is None:
            found = _empty_text(output)
            kind = None if found is not None else kind
        if kind is not None or found is None:
            return failed(label, None if found is None else fold(found),
                          kind or "parse_failure", failed_score)
        text = found
    outcome = fold(text)
    if not outcome or is_not_in_document(text):
        return outcome, "", True
    return outcome, outcome, False


def _empty_text(output: Any) -> str | None:
    """The empty (or white space) text of an output rule 3 would call a parse failure, or
    ``None`` when it has no text at all or carries that failure kind itself."""
    if type(output) is str:
        return output
    carried = (output.get("failure_kind") if isinstance(output, Mapping)
               else getattr(output, "failure_kind", None))
    if type(carried) is str and carried in FAILURE_KINDS:
        return None
    return output_text(output)


def squad_golds(label: Any, fold: Fold) -> tuple[str, ...] | None:
    """The label's gold answers folded, ``("",)`` for an unanswerable one; ``None``: no label.

    Example:
        >>> from hr_core.core.text import squad_fold
        >>> squad_golds(["The Rhine", "the"], squad_fold), squad_golds(NO_ANSWER, squad_fold)
        (('rhine',), ('',))
    """
    memo = _GOLDS.get(fold)
    if memo is None:
        memo = squad_golds_memo(fold)
    kind = type(label)
    if kind is str:
        key: Any = label
    elif (kind is int or kind is float) and label == label:
        numbers = _NUMBER_GOLDS[fold][kind is float]
        found = numbers.get(label)
        if found is None:
            text = str(label) if kind is int else plain_digits(label)
            found = memo.get(text)
            if found is None:
                found = remember(memo, text, lambda one: _fold_golds(fold, (one,)))
            if len(numbers) >= MEMO_SIZE:  # bounded as remember's memos
                numbers.clear()
            numbers[label] = found  # an int or a float, never a bool nor NaN
        return found
    elif kind is list or kind is tuple:
        key = tuple([v if type(v) is str else label_text(v) for v in label])
        if None in key:  # missing values are not accepted answers
            key = tuple([t for t in key if t is not None])
        if not key:  # [] is no label (hr_core.scoring.answers), as the reader reads it
            return None
    else:
        found = accepted_texts(label)
        if found is None:
            return None
        key = found
    golds = memo.get(key)
    if golds is None:
        golds = remember(memo, key, lambda texts: _fold_golds(
            fold, (texts,) if type(texts) is str else texts))
    return golds


def squad_golds_lookup(fold: Fold) -> Callable[[Any], tuple[str, ...] | None]:
    """:func:`squad_golds` for a scorer's hot path (one call per run): a str, str list or
    tuple, int or float label's golds come from :func:`squad_golds_memo`'s and
    :func:`squad_number_memos`' memos at a glance; anything else, or a miss, goes through
    :func:`squad_golds` (the same result: tests/test_squad_label_memos.py).

    Example:
        >>> from hr_core.core.text import squad_fold
        >>> golds_of = squad_golds_lookup(squad_fold)
        >>> golds_of(["The Rhine", "the"]), golds_of(["The Rhine", "the"]), golds_of([])
        (('rhine',), ('rhine',), None)
    """
    memo = squad_golds_memo(fold)
    ints, floats = squad_number_memos(fold)

    def golds_of(label: Any) -> tuple[str, ...] | None:
        kind = type(label)
        if kind is str:
            golds = memo.get(label)
        elif kind is list or kind is tuple:
            try:
                golds = memo.get(tuple(label))
            except TypeError:  # an unhashable value: squad_golds writes it as text
                golds = None
        else:
            golds = ints.get(label) if kind is int else floats.get(label) if (
                kind is float) else None
        return squad_golds(label, fold) if golds is None else golds

    return golds_of


def squad_golds_memo(fold: Fold) -> dict[Any, tuple[str, ...]]:
    """The memo :func:`squad_golds` keeps for ``fold``: a scorer's hot path looks a label
    up in it first and calls :func:`squad_golds` on a miss. A str label is its own key, a
    list or tuple of str labels the tuple of them (every tuple key holds only str: a
    label holding anything else is never found, so it goes to :func:`squad_golds`)."""
    memo = _GOLDS.get(fold)
    if memo is None:
        memo = _GOLDS[fold] = {}
        _NUMBER_GOLDS[fold] = ({}, {})
    return memo


def squad_number_memos(fold: Fold) -> tuple[dict[int, tuple[str, ...]],
                                            dict[float, tuple[str, ...]]]:
    """The memos :func:`squad_golds` keeps for ``fold``'s int and float labels, each keyed
    by the number itself (apart: ``1e23 == 99999999999999991611392``, their digits differ;
    never a bool, never NaN)."""
    squad_golds_memo(fold)
    ints, floats = _NUMBER_GOLDS[fold]
    return ints, floats


def _fold_golds(fold: Fold, texts: tuple[str, ...]) -> tuple[str, ...]:
    golds: list[str] = []
    no_answer = False
    for text in texts:
        if is_not_in_document(text):
            no_answer = True
            continue
        folded = fold(text)
        if folded and folded not in golds:
            golds.append(folded)
    if no_answer or not golds:
        golds.append("")
    return tuple(golds)


def squad_result(prediction: SquadPrediction, correct: bool, label_known: bool,
                 score: float | None) -> ScoreResult:
    """A compared run's result: correct, wrong, or ``not_in_document`` when it said so."""
    outcome, _, no_answer = prediction
    if not label_known:
        return _new(ScoreResult, (None, outcome, "not_in_document" if no_answer else None))
    if correct:
        return _new(ScoreResult, (True, outcome, None) if score is None
                    else (True, outcome, None, score))
    kind = "not_in_document" if no_answer else "wrong"
    return _new(ScoreResult, (False, outcome, kind) if score is None
                else (False, outcome, kind, score))
