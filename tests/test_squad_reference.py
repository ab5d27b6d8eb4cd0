"""Differential tests: hr's own SQuAD folding (``normalise="squad_hr"``), ``exact`` and ``f1``
with it, against a plain reference written here from what hr documents
(hr_core.core.text.squad_hr_tokens, the seed's rules in hr_core.scoring.answers, SQuAD's
no-answer rule in hr_core.scoring.squad, SPEC section 4's output text), on random outputs and
labels. (The default ``squad`` folding is the official one: tests/test_squad_official.py.)

The reference is SQuAD's ``normalize_answer`` and ``compute_f1``, with ``squad_hr``'s
documented differences: case-folded (``str.casefold``); punctuation and symbols of any
script and ``_`` removed (SQuAD: ASCII punctuation only), so ``30,000`` is ``30000`` as in
SQuAD; a decimal number keeps its point in plain digits (``2.50`` -> ``2.5``,
``1,000.0`` -> ``1000``; SQuAD glues ``2.5`` into ``25``); the articles a/an/the removed
as words; white space collapsed.

Left out of the random text: control characters that are not white space. hr keeps them in
ASCII text (its one ``bytes.translate`` pass drops ``string.punctuation`` only) and drops them
from text with other characters (a regex pass), a quirk no real answer meets.
"""

from __future__ import annotations

import collections
import math
import re
import unicodedata
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hr_core import FAILURE_KINDS, ArmResult, hr_scorer_exact
from hr_core.core.text import squad_hr_fold as squad_fold
from hr_core.core.text import squad_hr_tokens as squad_tokens
from hr_core.scoring import hr_scorer_f1

# --- the reference ---------------------------------------------------------------------------

_DECIMAL = re.compile(r"\d+(?:,\d{3})*\.\d+")
_ARTICLES = ("a", "an", "the")


def _drop_punctuation(text: str) -> str:
    return "".join(char for char in text if char.isalnum() or char.isspace())


def _decimal(number: str) -> str:
    whole, _, fraction = number.replace(",", "").partition(".")
    fraction = fraction.rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


def reference_tokens(text: str) -> list[str]:
    """hr's documented SQuAD folding, plainly: case-fold; drop punctuation outside decimal
    numbers, write those numbers in plain digits; split on white space; drop articles."""
    text = text.casefold()
    pieces: list[str] = []
    start = 0
    for number in _DECIMAL.finditer(text):
        pieces += [_drop_punctuation(text[start:number.start()]), _decimal(number.group())]
        start = number.end()
    pieces.append(_drop_punctuation(text[start:]))
    return [word for word in "".join(pieces).split() if word not in _ARTICLES]


def reference_f1(predicted: list[str], gold: list[str]) -> Fraction:
    """SQuAD's ``compute_f1`` on token lists, as an exact fraction."""
    if not predicted or not gold:
        return Fraction(predicted == gold)
    same = sum((collections.Counter(predicted) & collections.Counter(gold)).values())
    return Fraction(2 * same, len(predicted) + len(gold))


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _digits(number: int | float) -> str:
    """A number in plain digits (never scientific notation), as the seed asks."""
    if isinstance(number, int):
        return str(number)
    text = format(Decimal(repr(number)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _value_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool) and not _missing(value):
        return _digits(value)
    return None


def reference_sort_out(output: Any) -> tuple[str | None, str | None]:
    """The seed's rules 1-3: (text, failure kind); text is ``None`` when there is none."""
    if isinstance(output, str):
        text, kind, ok = output, None, True
    elif isinstance(output, dict):
        text = _value_text(output.get("answer")) or _value_text(output.get("text"))
        kind, ok = output.get("failure_kind"), output.get("ok", True)
    elif isinstance(output, ArmResult):
        text = _value_text(output.answer) or _value_text(output.text)
        kind, ok = output.failure_kind, output.ok
    else:  # None, a number, a bool
        text, kind, ok = _value_text(output), None, True
    if kind in FAILURE_KINDS:
        return text, kind
    if ok is False:
        return text, "error"
    if text is None:  # SQuAD's scorers: an empty text is the empty answer (hr_core.scoring.squad)
        return None, "parse_failure"
    return text, None


def reference_accepted(label: Any) -> list[str] | None:
    """A label's accepted answers as text; ``None``: no label (the item cannot be scored),
    an empty list (or one of missing values only) included."""
    if _missing(label):
        return None
    values = label if isinstance(label, list | tuple) else [label]
    return [value if isinstance(value, str) else _value_text(value) or str(value)
            for value in values if not _missing(value)] or None


def _not_in_document(text: str) -> bool:
    return text.strip().casefold() == "not_in_document"


def _golds(accepted: list[str]) -> list[str]:
    """SQuAD's gold answers: those that fold to something; ``""`` for an unanswerable label
    (none does) and for one accepting ``NOT_IN_DOCUMENT``."""
    golds = [" ".join(reference_tokens(a)) for a in accepted if not _not_in_document(a)]
    golds = [g for g in golds if g]
    if not golds or any(_not_in_document(a) for a in accepted):
        golds.append("")
    return golds


def _prediction(text: str) -> tuple[str, str, bool]:
    """(outcome, compared, said no answer): ``NOT_IN_DOCUMENT`` is the empty prediction."""
    outcome = " ".join(reference_tokens(text))
    none = outcome == "" or _not_in_document(text)
    return outcome, "" if none else outcome, none


def reference_exact_squad(output: Any, label: Any) -> tuple[Any, ...]:
    text, kind = reference_sort_out(output)
    accepted = reference_accepted(label)
    correct = None if accepted is None else False
    if kind is not None:
        return correct, None if text is None else " ".join(reference_tokens(text)), kind
    assert text is not None
    outcome, compared, none = _prediction(text)
    if accepted is None:
        return None, outcome, "not_in_document" if none else None
    if compared in _golds(accepted):
        return True, outcome, None
    return False, outcome, "not_in_document" if none else "wrong"


def reference_f1_scorer(output: Any, label: Any) -> tuple[Any, ...]:
    """``(correct or None, outcome, failure kind, exact F1)``; ``correct`` None on a labelled
    answer (the threshold decides); F1 ``None`` when the result carries no score."""
    text, kind = reference_sort_out(output)
    accepted = reference_accepted(label)
    if kind is not None:
        outcome = None if text is None else " ".join(reference_tokens(text))
        return (False, outcome, kind, Fraction(0)) if accepted is not None else (
            None, outcome, kind, None)
    assert text is not None
    outcome, compared, none = _prediction(text)
    nid = "not_in_document" if none else None
    if accepted is None:
        return None, outcome, nid, None
    best = max(reference_f1(compared.split(), gold.split()) for gold in _golds(accepted))
    return None, outcome, nid, best


# --- random outputs and labels ---------------------------------------------------------------

_PIECES = ["the", "The", "A", "an", "AN", "a", "Paris", "Lower Rhine", "São Paulo", "Straße",
           "İstanbul", "ﬁne", "ǅ", "30,000", "1,000.50", "2.50", "3.5", "0.0", "10.", ".5",
           "1,00.5", "1,234,567.890", "٣.٥", "１２.５", "1e+05", "100000", "42", "-3", "2.5.6",
           "NOT_IN_DOCUMENT", "not_in_document", "Levi's", "U.S.A.", "rock-n-roll", "...", "_",
           "—", "“x”", "(B)", "e\u0301", "½", "€", "日本", "\u00a0", "\t", "\n", "\u2028"]
_chars = st.characters(blacklist_categories=("Cs",)).filter(
    lambda c: unicodedata.category(c) != "Cc" or c.isspace())
_texts = st.lists(st.sampled_from(_PIECES) | st.text(_chars, max_size=6)
                  | st.sampled_from([" ", ", ", ". ", "!", "  "]), max_size=8).map("".join)
_numbers = (st.integers(-10**9, 10**9)
            | st.floats(allow_nan=False, allow_infinity=False, min_value=-1e20, max_value=1e20)
            | st.sampled_from([100000, 100000.0, 2.5, 1e-05, 30000, 0.1, -0.0]))
_fields = st.none() | _texts | _numbers | st.just(float("nan")) | st.booleans()
_kinds = st.none() | st.sampled_from([*FAILURE_KINDS, "tired"])
_dicts = st.fixed_dictionaries({}, optional={
    "answer": _fields, "text": _fields, "failure_kind": _kinds,
    "ok": st.booleans() | st.none() | st.integers(0, 1), "usage": st.just({"tokens_in": 9}),
})
_arm_results = st.builds(ArmResult, ok=st.booleans(), answer=st.none() | _texts,
                         text=st.none() | _texts,
                         failure_kind=st.none() | st.sampled_from(FAILURE_KINDS))
_outputs = (_texts | _dicts | _arm_results | st.none() | _numbers | st.booleans()
            | st.sampled_from(["", " \n", "NOT_IN_DOCUMENT", " not_in_document\n"]))
_labels = (_texts | _numbers | st.none() | st.just(float("nan"))
           | st.lists(_texts | _numbers | st.none(), max_size=4)
           | st.lists(_texts, max_size=3).map(tuple)
           | st.sampled_from(["NOT_IN_DOCUMENT", ["NOT_IN_DOCUMENT", "x"]]))


# --- the tests -------------------------------------------------------------------------------


@settings(max_examples=1500, deadline=None)
@given(text=_texts)
def test_squad_tokens_equal_the_reference(text: str) -> None:
    assert squad_tokens(text) == reference_tokens(text)
    assert squad_fold(text) == " ".join(reference_tokens(text))


squad = hr_scorer_exact(normalise="squad_hr")


@settings(max_examples=1500, deadline=None)
@given(output=_outputs, label=_labels)
def test_exact_squad_equals_the_reference(output: Any, label: Any) -> None:
    assert tuple(squad.fn(None, output, label)) == reference_exact_squad(output, label)


@pytest.mark.parametrize("threshold", [0.5, 1.0, 0.3])
@settings(max_examples=800, deadline=None)
@given(output=_outputs, label=_labels)
def test_f1_equals_the_reference(threshold: float, output: Any, label: Any) -> None:
    result = hr_scorer_f1(threshold=threshold, normalise="squad_hr").fn(None, output, label)
    correct, outcome, kind, best = reference_f1_scorer(output, label)
    assert (result.outcome, result.score is None) == (outcome, best is None)
    if best is None or correct is not None:  # no label, or a failed run
        assert (result.correct, result.failure_kind) == (correct, kind)
        assert result.score == best
        return
    assert result.score == float(best)  # the exact F1, rounded once
    assert result.correct is (result.score >= threshold)
    if abs(best - Fraction(threshold)) > Fraction(1, 10**9):  # clear of float rounding
        assert result.correct is (best >= threshold)
    expected_kind = None if result.correct else kind or "wrong"
    assert result.failure_kind == expected_kind


def test_the_reference_is_squads_definition_on_its_own_examples() -> None:
    assert reference_tokens("The  Lower Rhine, 30,000 km!") == ["lower", "rhine", "30000", "km"]
    assert reference_tokens("2.50 m; 1,000.0") == ["2.5", "m", "1000"]
    assert reference_tokens("An apple a day") == ["apple", "day"]
    assert reference_f1(["lower", "rhine"], ["rhine"]) == Fraction(2, 3)
    assert reference_exact_squad({"answer": "x", "failure_kind": "refusal"}, "x") == (
        False, "x", "refusal")
    assert reference_exact_squad(ArmResult(ok=False, answer="The X"), None) == (
        None, "x", "error")
    assert reference_exact_squad("NOT_IN_DOCUMENT", "not in document") == (
        False, "notindocument", "not_in_document")
    assert reference_exact_squad("NOT_IN_DOCUMENT", "not_in_document") == (
        True, "notindocument", None)
    assert reference_exact_squad("", "NOT_IN_DOCUMENT") == (True, "", None)
    assert reference_exact_squad(" ", ["the"]) == (True, "", None)
    assert reference_f1_scorer("", ["x"]) == (None, "", "not_in_document", Fraction(0))
    assert reference_exact_squad(100000.0, [1e5]) == (True, "100000", None)


def test_an_f1_of_exactly_the_threshold_is_correct_whether_or_not_the_label_repeats_a_token(
) -> None:
    """7 shared tokens of 8 answered and 20 in the label: F1 = 14/28 = 0.5 on both paths
    (was 0.4999999999999999, wrong at the default threshold, when the label repeats one)."""
    answer = " ".join(["x"] + [f"w{i}" for i in range(6)] + ["zz"])
    repeats = " ".join(["x", "x"] + [f"w{i}" for i in range(18)])
    distinct = " ".join(["x", "y"] + [f"w{i}" for i in range(18)])
    for label in (repeats, distinct):
        result = hr_scorer_f1(threshold=0.5, normalise="squad_hr").fn(None, answer, label)
        assert (result.score, result.correct) == (0.5, True), label
