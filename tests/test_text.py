"""Tests of hr_core.core.text: folding, plain digits, the text of an output, labels."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hr_core import ArmResult
from hr_core.core.text import accepted_texts, fold, is_missing, output_text, plain_digits

UNICODE_SPACES = ["\u00a0", "\u2003", "\u3000", "\u2009", "\u202f", "\u205f", "\u1680", "\x0b"]


@pytest.mark.parametrize(
    ("text", "folded"),
    [
        ("  paris ", "paris"),
        ("Paris", "paris"),
        ("PARIS", "paris"),
        ("New\t\tYork\n", "new york"),
        ("  Hello\u00a0\tWORLD\n", "hello world"),
        ("Stra\u00dfe", "strasse"),
        ("a\u3000\u2003b", "a b"),
        ("", ""),
        (" \t\n ", ""),
    ],
)
def test_fold_casefolds_trims_and_collapses_white_space(text: str, folded: str) -> None:
    assert fold(text) == folded


@pytest.mark.parametrize("space", UNICODE_SPACES)
def test_fold_treats_every_unicode_space_as_white_space(space: str) -> None:
    assert fold(f"{space}a{space}{space}b{space}") == "a b"


@given(st.text())
def test_fold_is_idempotent(text: str) -> None:
    assert fold(fold(text)) == fold(text)


@given(st.text())
def test_fold_leaves_no_outer_or_double_white_space(text: str) -> None:
    folded = fold(text)
    assert folded == folded.strip()
    assert "  " not in folded
    assert all(not c.isspace() or c == " " for c in folded)


@pytest.mark.parametrize(
    ("number", "digits"),
    [
        (100000, "100000"),
        (100000.0, "100000"),
        (1e5, "100000"),
        (1e-05, "0.00001"),
        (2.5, "2.5"),
        (-2.5, "-2.5"),
        (0, "0"),
        (0.0, "0"),
        (-0.0, "0"),
        (1e22, "10000000000000000000000"),
        (-1.5e-7, "-0.00000015"),
        (0.1 + 0.2, "0.30000000000000004"),
        (123456789012345678901234567890, "123456789012345678901234567890"),
        (Decimal("1E+5"), "100000"),
        (Decimal("100.00"), "100"),
        (Decimal("-0.00"), "0"),
        (Fraction(1, 4), "0.25"),
        (np.int64(7), "7"),
        (np.float64(1e5), "100000"),
    ],
)
def test_plain_digits_never_uses_scientific_notation(number: object, digits: str) -> None:
    assert plain_digits(number) == digits
    assert "e" not in plain_digits(number).lower()


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_plain_digits_of_a_float_reads_back_as_the_same_float(number: float) -> None:
    text = plain_digits(number)
    assert "e" not in text
    assert float(text) == number


def _digits_by_decimal(number: float) -> str:
    text = format(Decimal(repr(number)), "f")
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text in ("-0", "") else text


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=5))
def test_plain_digits_of_floats_is_the_decimal_of_their_shortest_repr(numbers: list[float]) -> None:
    for number in numbers + numbers:  # twice: the second time may come from the cache
        assert plain_digits(number) == _digits_by_decimal(number)


def test_plain_digits_tells_equal_int_and_float_apart_when_they_print_differently() -> None:
    assert plain_digits(2**60) == "1152921504606846976"
    assert plain_digits(2.0**60) == "1152921504606847000"
    assert plain_digits(0.0) == plain_digits(-0.0) == "0"


@given(st.integers())
def test_plain_digits_of_an_int_is_its_decimal_form(number: int) -> None:
    assert plain_digits(number) == str(number)


@pytest.mark.parametrize(
    "value",
    [None, float("nan"), np.float64("nan"), np.float32("nan"), Decimal("NaN"), pd.NA, pd.NaT],
)
def test_is_missing_is_true_for_none_and_every_nan(value: object) -> None:
    assert is_missing(value)


@pytest.mark.parametrize("value", ["", "nan", 0, 0.0, False, [], {}, float("inf"), Decimal("1")])
def test_is_missing_is_false_for_values(value: object) -> None:
    assert not is_missing(value)


@pytest.mark.parametrize(
    ("output", "text"),
    [
        ("  paris ", "  paris "),
        ("", ""),
        ({"answer": "Paris"}, "Paris"),
        ({"text": "Paris"}, "Paris"),
        ({"answer": "Paris", "text": "The answer is Paris"}, "Paris"),
        ({"answer": "", "text": "Paris"}, "Paris"),
        ({"answer": None, "text": "Paris"}, "Paris"),
        ({"answer": float("nan"), "text": "Paris"}, "Paris"),
        ({"answer": 100000.0}, "100000"),
        ({"answer": True, "text": "Paris"}, "Paris"),
        (ArmResult(text="Paris"), "Paris"),
        (ArmResult(answer="Paris", text="It is Paris"), "Paris"),
        (100000, "100000"),
        (100000.0, "100000"),
        (1e-05, "0.00001"),
        (np.int64(42), "42"),
        ({"question": "x"}, None),
        ({}, None),
        (ArmResult(), None),
        (None, None),
        (float("nan"), None),
        (np.float32("nan"), None),
        (pd.NA, None),
        (True, None),
        (np.bool_(False), None),
        (["Paris"], None),
        (object(), None),
    ],
)
def test_output_text_follows_spec_section_4(output: object, text: str | None) -> None:
    assert output_text(output) == text


class _Reply:
    answer = None
    text = "Paris"


def test_output_text_reads_attributes_of_any_object() -> None:
    assert output_text(_Reply()) == "Paris"


@pytest.mark.parametrize(
    ("label", "texts"),
    [
        ("Paris", ("Paris",)),
        ("", ("",)),
        (["Paris", "paris, France"], ("Paris", "paris, France")),
        (("Paris", 75), ("Paris", "75")),
        (100000, ("100000",)),
        (100000.0, ("100000",)),
        (1e-05, ("0.00001",)),
        (2.5, ("2.5",)),
        (["Paris", None, float("nan"), 1e5], ("Paris", "100000")),
        ([], ()),
        (None, None),
        (float("nan"), None),
        (pd.NA, None),
    ],
)
def test_accepted_texts_lists_every_accepted_answer_in_plain_digits(
    label: object, texts: tuple[str, ...] | None
) -> None:
    assert accepted_texts(label) == texts


def test_accepted_texts_does_not_read_a_bool_label_as_a_number() -> None:
    assert accepted_texts(True) == ("True",)
    assert accepted_texts([False]) == ("False",)


@given(st.floats(allow_nan=False) | st.integers())
def test_a_number_label_is_accepted_as_its_plain_digits(number: float) -> None:
    texts = accepted_texts(number)
    assert texts == (plain_digits(number),)
    assert texts is not None and not math.isnan(float(texts[0]))
