"""Tests of hr_core.scoring.scorer: the seed's examples, SPEC section 5 rule by rule."""

from __future__ import annotations

import asyncio
import math
import re
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hr_core import (
    FAILURE_KINDS,
    ArmResult,
    Scorer,
    ScorerError,
    ScoreResult,
    hr_scorer,
    hr_scorer_exact,
    settle_score,
)
from hr_core.core.text import plain_digits

exact = hr_scorer_exact()
exact_raw = hr_scorer_exact(normalise=False)


def _within_1pct(item: Any, output: Any, label: Any) -> dict[str, Any]:
    try:
        x = float(output)
    except (TypeError, ValueError):
        return {"correct": False, "outcome": None, "failure_kind": "parse_failure"}
    return {
        "correct": abs(x - label) <= 0.01 * abs(label),
        "outcome": format(x, "g"),
        "failure_kind": None,
    }


near = hr_scorer(_within_1pct, name="within_1pct")


# --- the seed's examples -------------------------------------------------------------


def test_seed_exact_folds_case_and_white_space_paris() -> None:
    result = exact.fn("Capital of France?", "  paris ", "Paris")
    assert result == ScoreResult(correct=True, outcome="paris", failure_kind=None)


def test_seed_exact_lyon_is_wrong() -> None:
    assert exact.fn("Capital of France?", "Lyon", "Paris").failure_kind == "wrong"
    assert exact.fn("Capital of France?", "Lyon", "Paris") == ScoreResult(False, "lyon", "wrong")


def test_seed_own_scorer_within_1pct() -> None:
    assert near.name == "within_1pct"
    assert near.fn(None, "45.3", 45.2) == {
        "correct": True,
        "outcome": "45.3",
        "failure_kind": None,
    }
    assert near(None, "45.3", 45.2) == ScoreResult(True, "45.3", None)


def test_seed_own_scorer_reports_a_parse_failure() -> None:
    assert near(None, "about forty", 45.2) == ScoreResult(False, None, "parse_failure")
    assert near(None, "50", 45.2) == ScoreResult(False, "50", None)


def test_exact_is_named_exact_and_fn_returns_a_score_result() -> None:
    assert isinstance(exact, Scorer)
    assert exact.name == "exact"
    assert type(exact.fn(None, "Paris", "Paris")) is ScoreResult
    assert exact(None, "Paris", "Paris") == ScoreResult(True, "paris", None)


# --- exact, rule 1: the output's own failure kind ------------------------------------


@pytest.mark.parametrize("kind", FAILURE_KINDS)
@pytest.mark.parametrize("wrap", [dict, lambda **kw: ArmResult(**kw)])
def test_an_output_carrying_a_failure_kind_is_wrong_for_that_reason(kind: str, wrap: Any) -> None:
    output = wrap(answer="Paris", failure_kind=kind)
    assert exact.fn(None, output, "Paris") == ScoreResult(False, "paris", kind)


def test_the_output_failure_kind_comes_before_ok_false_and_no_text() -> None:
    assert exact.fn(None, {"ok": False, "failure_kind": "refusal"}, "Paris") == ScoreResult(
        False, None, "refusal"
    )
    assert exact.fn(None, ArmResult(ok=False, failure_kind="budget_stop"), "x").failure_kind == (
        "budget_stop"
    )


def test_an_unknown_failure_kind_on_an_output_is_ignored() -> None:
    assert exact.fn(None, {"answer": "Paris", "failure_kind": "tired"}, "Paris").correct is True
    assert exact.fn(None, {"answer": "Paris", "failure_kind": ["wrong"]}, "Paris").correct is True


# --- exact, rule 2: ok false -> error ------------------------------------------------


@pytest.mark.parametrize(
    "output",
    [
        {"ok": False, "answer": "Paris"},
        {"ok": False},
        {"ok": np.False_, "answer": "Paris"},
        ArmResult(ok=False, text="Paris", error="TimeoutError: read timed out"),
        ArmResult(ok=False),
    ],
)
def test_an_output_with_ok_false_is_an_error(output: Any) -> None:
    result = exact.fn(None, output, "Paris")
    assert result.correct is False
    assert result.failure_kind == "error"


def test_ok_false_comes_before_no_text() -> None:
    assert exact.fn(None, {"ok": False, "answer": ""}, "Paris").failure_kind == "error"


def test_ok_true_or_absent_is_not_an_error() -> None:
    assert exact.fn(None, {"ok": True, "answer": "Paris"}, "Paris").correct is True
    assert exact.fn(None, {"ok": None, "answer": "Paris"}, "Paris").correct is True


# --- exact, rule 3: no text -> parse_failure ----------------------------------------


@pytest.mark.parametrize(
    "output",
    [
        None,
        float("nan"),
        np.float64("nan"),
        pd.NA,
        "",
        " ",
        "\t\n",
        "\u00a0",
        "\u2003\u3000",
        "\u00a0 \u202f\u205f",
        {},
        {"question": "Capital?"},
        {"answer": None, "text": None},
        {"answer": "", "text": ""},
        {"answer": "  ", "text": "Paris"},
        {"answer": None, "text": "\u3000"},
        ArmResult(),
        ArmResult(answer="", text="  "),
        object(),
        ["Paris"],
        True,
        False,
    ],
)
@pytest.mark.parametrize("scorer", [exact, exact_raw], ids=["normalise", "as_is"])
def test_an_output_without_text_is_a_parse_failure(output: Any, scorer: Scorer) -> None:
    assert scorer.fn(None, output, "Paris") == ScoreResult(False, None, "parse_failure")


def test_no_text_comes_before_not_in_document_and_compare() -> None:
    assert exact.fn(None, "", "").failure_kind == "parse_failure"
    assert exact.fn(None, "  ", ["", " "]).failure_kind == "parse_failure"


# --- exact, rule 4: NOT_IN_DOCUMENT --------------------------------------------------


@pytest.mark.parametrize(
    "output",
    [
        "NOT_IN_DOCUMENT",
        "not_in_document",
        "Not_In_Document",
        "  NOT_IN_DOCUMENT \n",
        "\u00a0NOT_IN_DOCUMENT\u3000",
        "NOT_IN_DOCUMENT\n" + " " * 60,
        {"answer": "NOT_IN_DOCUMENT"},
        ArmResult(text="not_in_document"),
    ],
)
def test_not_in_document_in_any_case_is_its_own_failure_kind(output: Any) -> None:
    assert exact.fn(None, output, "Paris") == ScoreResult(
        False, "not_in_document", ("not_in_document")
    )


def test_not_in_document_without_normalise_keeps_the_text_as_outcome() -> None:
    result = exact_raw.fn(None, " Not_In_Document ", "Paris")
    assert result == ScoreResult(False, " Not_In_Document ", "not_in_document")


@pytest.mark.parametrize(
    "output",
    ["NOT IN DOCUMENT", "NOT_IN_DOCUMENT.", "The answer is NOT_IN_DOCUMENT", "not_ın_document"],
)
def test_only_the_exact_marker_is_not_in_document(output: str) -> None:
    assert exact.fn(None, output, "Paris").failure_kind == "wrong"


@pytest.mark.parametrize(
    "label", ["NOT_IN_DOCUMENT", "not_in_document", ["Paris", "NOT_IN_DOCUMENT"]]
)
def test_not_in_document_is_correct_when_the_label_accepts_it(label: Any) -> None:
    assert exact.fn(None, " not_in_document", label) == ScoreResult(True, "not_in_document", None)


def test_not_in_document_without_normalise_needs_the_label_as_written() -> None:
    assert exact_raw.fn(None, "NOT_IN_DOCUMENT", "NOT_IN_DOCUMENT").correct is True
    assert exact_raw.fn(None, "not_in_document", "NOT_IN_DOCUMENT").failure_kind == (
        "not_in_document"
    )


# --- exact, rule 5: compare ----------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "label", "correct", "outcome"),
    [
        ("Paris", "Paris", True, "paris"),
        ("PARIS", "paris", True, "paris"),
        ("New\u00a0 York\n", "new york", True, "new york"),
        ("New York", "NewYork", False, "new york"),
        ("Straße", "STRASSE", True, "strasse"),
        ("Paris", " Paris\t", True, "paris"),
        ({"answer": "Paris", "text": "I think it is Paris"}, "Paris", True, "paris"),
        ({"text": "Paris"}, "Paris", True, "paris"),
        (ArmResult(text="Paris", usage={"tokens_in": 3}), "Paris", True, "paris"),
        ("Paris.", "Paris", False, "paris."),
    ],
)
def test_exact_compares_the_folded_text_with_the_label(
    output: Any, label: Any, correct: bool, outcome: str
) -> None:
    kind = None if correct else "wrong"
    assert exact.fn(None, output, label) == ScoreResult(correct, outcome, kind)


@pytest.mark.parametrize(
    ("output", "correct"), [("Paris", True), ("paris, france", True), ("Lyon", False)]
)
@pytest.mark.parametrize("container", [list, tuple])
def test_a_label_with_several_accepted_answers_accepts_any_one(
    output: str, correct: bool, container: Any
) -> None:
    label = container(["Paris", "Paris, France"])
    assert exact.fn(None, output, label).correct is correct


@pytest.mark.parametrize("label", [100000, 100000.0, 1e5, np.int64(100000), np.float64(1e5)])
@pytest.mark.parametrize(
    ("output", "correct"),
    [
        ("100000", True),
        (" 100000 ", True),
        (100000, True),
        (1e5, True),
        ("1e+05", False),
        ("1e5", False),
        ("100000.0", False),
        ("100,000", False),
    ],
)
def test_a_number_label_is_compared_in_plain_digits(label: Any, output: Any, correct: bool) -> None:
    assert exact.fn(None, output, label).correct is correct


@pytest.mark.parametrize(
    ("label", "accepted", "rejected"),
    [
        (1e-05, "0.00001", "1e-05"),
        (2.5, "2.5", "2.50"),
        (-3, "-3", "-3.0"),
        (0.0, "0", "0.0"),
        ([7, "seven"], "7", "7.0"),
    ],
)
def test_number_labels_as_written_in_plain_digits(label: Any, accepted: str, rejected: str) -> None:
    assert exact.fn(None, accepted, label).correct is True
    assert exact.fn(None, rejected, label) == ScoreResult(False, rejected, "wrong")


@pytest.mark.parametrize(("label", "output"), [(True, "1"), (False, "0"), ([True], "1")])
def test_a_bool_label_is_not_a_number(label: Any, output: str) -> None:
    assert exact.fn(None, output, label).failure_kind == "wrong"


def test_a_bool_output_has_no_text() -> None:
    assert exact.fn(None, True, "1").failure_kind == "parse_failure"


@pytest.mark.parametrize(
    ("output", "label", "correct", "outcome"),
    [
        ("Paris", "Paris", True, "Paris"),
        ("paris", "Paris", False, "paris"),
        ("  Paris ", "Paris", False, "  Paris "),
        ("Paris", "Paris ", False, "Paris"),
        ("New  York", "New  York", True, "New  York"),
        ("100000", 1e5, True, "100000"),
        ({"answer": "Lyon"}, ["Paris", "Lyon"], True, "Lyon"),
    ],
)
def test_normalise_false_compares_the_strings_as_they_are(
    output: Any, label: Any, correct: bool, outcome: str
) -> None:
    kind = None if correct else "wrong"
    assert exact_raw.fn(None, output, label) == ScoreResult(correct, outcome, kind)


def test_normalise_false_has_its_own_name_and_fingerprint() -> None:
    # before (issue 9): named "exact", so a spec switching exact -> exact_raw reused exact's runs
    assert exact_raw.name == "exact_raw"
    assert exact_raw.fingerprint != hr_scorer_exact().fingerprint
    assert exact_raw.spec == {"name": "exact_raw", "options": {"normalise": "none"}}


# --- exact: no label -----------------------------------------------------------------


@pytest.mark.parametrize("label", [None, float("nan"), pd.NA])
@pytest.mark.parametrize(
    ("output", "outcome", "kind"),
    [
        ("Paris", "paris", None),
        ("", None, "parse_failure"),
        (None, None, "parse_failure"),
        ("NOT_IN_DOCUMENT", "not_in_document", "not_in_document"),
        ({"ok": False, "answer": "Paris"}, "paris", "error"),
        ({"answer": "x", "failure_kind": "refusal"}, "x", "refusal"),
        (ArmResult(failure_kind="budget_stop"), None, "budget_stop"),
    ],
)
def test_without_a_label_correct_is_none_and_the_failure_kind_is_kept(
    label: Any, output: Any, outcome: str | None, kind: str | None
) -> None:
    assert exact.fn(None, output, label) == ScoreResult(None, outcome, kind)


# --- exact never raises ------------------------------------------------------------

_numbers = (
    st.integers(-(10**30), 10**30)
    | st.floats()
    | st.sampled_from([float("nan"), float("inf"), -float("inf"), np.float64("nan"), np.int64(5)])
)
_strings = st.text(max_size=30) | st.sampled_from(
    ["Paris", "  PARIS ", "NOT_IN_DOCUMENT", " not_in_document\n", "100000", "1e+05", "\u3000"]
)
_scalars = st.none() | st.booleans() | _numbers | _strings | st.just(pd.NA)
_kinds = st.none() | st.sampled_from(FAILURE_KINDS) | st.text(max_size=5) | st.integers()
_mappings = st.fixed_dictionaries(
    {},
    optional={
        "answer": _scalars,
        "text": _scalars,
        "ok": st.none() | st.booleans() | st.integers(),
        "failure_kind": _kinds,
        "error": st.none() | st.text(max_size=5),
    },
)
_arm_results = st.builds(
    ArmResult,
    ok=st.booleans(),
    text=st.none() | _strings,
    answer=st.none() | _strings,
    failure_kind=st.none() | st.sampled_from(FAILURE_KINDS),
)
_outputs = st.recursive(
    _scalars | _mappings | _arm_results,
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner),
    max_leaves=6,
)
_labels = _scalars | st.lists(_scalars, max_size=4) | st.tuples(_scalars, _scalars)


@settings(max_examples=400, deadline=None)
@given(output=_outputs, label=_labels, normalise=st.booleans())
def test_exact_fn_never_raises_and_returns_a_valid_result(
    output: Any, label: Any, normalise: bool
) -> None:
    scorer = exact if normalise else exact_raw
    result = scorer.fn(None, output, label)
    assert type(result) is ScoreResult
    assert scorer.validate(result) == result
    assert result.correct in (True, False, None)
    assert result.failure_kind is None or result.failure_kind in FAILURE_KINDS
    assert result.outcome is None or isinstance(result.outcome, str)
    if result.correct is True:
        assert result.failure_kind is None
    if result.correct is False:
        assert result.failure_kind is not None
    settled = settle_score(result, has_label=result.correct is not None)
    assert settled.failure_kind == result.failure_kind


@given(st.integers() | st.floats(allow_nan=False, allow_infinity=False))
def test_a_number_label_accepts_its_own_plain_digit_text(number: float) -> None:
    digits = plain_digits(number)
    assert exact.fn(None, digits, number) == ScoreResult(True, digits, None)
    assert exact_raw.fn(None, digits, [number]).correct is True
    assert exact.fn(None, number, number).correct is True


@given(st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: abs(x) >= 1e16))
def test_a_large_number_label_never_accepts_scientific_notation(number: float) -> None:
    assert exact.fn(None, repr(number), number).correct is (repr(number) == plain_digits(number))
    assert "e" not in plain_digits(number)


@given(st.text(), st.text())
def test_exact_agrees_with_folding(output: str, label: str) -> None:
    result = exact.fn(None, output, label)
    folded = " ".join(output.casefold().split())
    if not folded:
        assert result.failure_kind == "parse_failure"
    elif folded == " ".join(label.casefold().split()):
        assert result.correct is True
    else:
        assert result.correct is False


# --- hr_scorer: validation -----------------------------------------------------------


def _returning(value: Any, name: str = "mine") -> Scorer:
    return hr_scorer(lambda item, output, label: value, name)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (ScoreResult(True, "x", None), ScoreResult(True, "x", None)),
        (
            {"correct": False, "outcome": None, "failure_kind": "refusal"},
            ScoreResult(False, None, "refusal"),
        ),
        ({"correct": None, "outcome": "x", "failure_kind": None}, ScoreResult(None, "x", None)),
        ((True, "x", None), ScoreResult(True, "x", None)),
        (
            {"correct": np.True_, "outcome": np.nan, "failure_kind": pd.NA},
            ScoreResult(True, None, None),
        ),
        (
            {"correct": pd.NA, "outcome": "x", "failure_kind": math.nan},
            ScoreResult(None, "x", None),
        ),
    ],
)
def test_calling_a_scorer_validates_into_a_score_result(value: Any, expected: ScoreResult) -> None:
    scorer = _returning(value)
    assert scorer.fn(None, "x", "x") is value
    result = scorer(None, "x", "x")
    assert type(result) is ScoreResult
    assert result == expected
    assert result.correct is expected.correct


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, "None"),
        (True, "True"),
        ("correct", "'correct'"),
        ([True, "x", None], "[True, 'x', None]"),
        ((True, "x"), "(True, 'x')"),
        ({"correct": True}, "{'correct': True}"),
        ({"correct": "yes", "outcome": None, "failure_kind": None}, "'yes'"),
        ({"correct": 1, "outcome": None, "failure_kind": None}, "correct=1"),
        ({"correct": True, "outcome": 45.3, "failure_kind": None}, "45.3"),
        ({"correct": False, "outcome": None, "failure_kind": "timeout"}, "'timeout'"),
        ({"correct": False, "outcome": None, "failure_kind": "Wrong"}, "'Wrong'"),
        ({"correct": False, "outcome": None, "failure_kind": ["wrong"]}, "['wrong']"),
        ({"correct": False, "outcome": None, "failure_kind": {"k": 1}}, "{'k': 1}"),
        ({"correct": False, "outcome": None, "failure_kind": 3}, "3"),
        (ScoreResult(False, None, "nope"), "'nope'"),  # type: ignore[arg-type]
    ],
)
def test_a_wrong_return_raises_scorer_error_naming_the_scorer_and_the_value(
    value: Any, shown: str
) -> None:
    scorer = _returning(value, name="my_scorer")
    with pytest.raises(ScorerError) as caught:
        scorer(None, "x", "x")
    assert "'my_scorer'" in str(caught.value)
    assert shown in str(caught.value)


def test_scorer_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="my_scorer"):
        _returning(42, name="my_scorer")(None, "x", "x")


@pytest.mark.parametrize("name", [None, "", "   ", 3])
def test_a_scorer_needs_a_non_empty_name(name: Any) -> None:
    with pytest.raises(ScorerError, match="name"):
        hr_scorer(_within_1pct, name)


def test_a_scorer_needs_a_callable() -> None:
    with pytest.raises(ScorerError, match=r"'broken'.*callable"):
        hr_scorer("not a function", "broken")  # type: ignore[arg-type]


def test_hr_scorer_works_as_a_decorator() -> None:
    @hr_scorer(name="startswith")
    def starts(item: Any, output: Any, label: Any) -> ScoreResult:
        ok = str(output).startswith(label)
        return ScoreResult(ok, str(output), None if ok else "wrong")

    assert isinstance(starts, Scorer)
    assert starts.name == "startswith"
    assert starts(None, "Paris, France", "Paris") == ScoreResult(True, "Paris, France", None)
    assert starts.fn(None, "Lyon", "Paris") == ScoreResult(False, "Lyon", "wrong")


def test_scorer_fn_is_the_function_as_given() -> None:
    assert near.fn is _within_1pct


async def _async_exact(item: Any, output: Any, label: Any) -> dict[str, Any]:
    await asyncio.sleep(0)
    return {"correct": output == label, "outcome": output, "failure_kind": None}


async_scorer = hr_scorer(_async_exact, "async_exact")


def test_an_async_scorer_called_outside_a_loop_returns_a_score_result() -> None:
    assert async_scorer.is_async
    assert async_scorer(None, "Paris", "Paris") == ScoreResult(True, "Paris", None)
    assert async_scorer(None, "Lyon", "Paris") == ScoreResult(False, "Lyon", None)


def test_an_async_scorer_is_awaited_with_ascore() -> None:
    async def main() -> list[ScoreResult]:
        return list(
            await asyncio.gather(
                async_scorer.ascore(None, "Paris", "Paris"),
                async_scorer.ascore(None, "Lyon", "Paris"),
                exact.ascore(None, "  paris ", "Paris"),
            )
        )

    assert asyncio.run(main()) == [
        ScoreResult(True, "Paris", None),
        ScoreResult(False, "Lyon", None),
        ScoreResult(True, "paris", None),
    ]


def test_an_async_scorer_called_inside_a_loop_says_to_use_ascore() -> None:
    async def main() -> None:
        async_scorer(None, "Paris", "Paris")

    with pytest.raises(ScorerError, match=r"'async_exact'.*ascore"):
        asyncio.run(main())


def test_an_async_scorer_is_validated_too() -> None:
    async def bad(item: Any, output: Any, label: Any) -> str:
        return "yes"

    scorer = hr_scorer(bad, "bad_async")
    with pytest.raises(ScorerError, match=r"'bad_async'.*'yes'"):
        scorer(None, "x", "x")
    with pytest.raises(ScorerError, match=r"'bad_async'.*'yes'"):
        asyncio.run(scorer.ascore(None, "x", "x"))


# --- settle_score: the record rules --------------------------------------------------


@pytest.mark.parametrize(
    "result",
    [
        ScoreResult(True, "paris", None),
        ScoreResult(False, "lyon", "wrong"),
        ScoreResult(False, "lyon", None),
        ScoreResult(None, None, "parse_failure"),
        ScoreResult(True, "x", "refusal"),
        ScoreResult(None, "x", None),
    ],
)
def test_an_item_without_label_is_recorded_none_with_its_failure_kind_kept(
    result: ScoreResult,
) -> None:
    assert settle_score(result, has_label=False) == ScoreResult(
        None, result.outcome, result.failure_kind
    )


@pytest.mark.parametrize("kind", FAILURE_KINDS)
@pytest.mark.parametrize("correct", [None, False])
def test_a_failure_kind_with_correct_none_or_false_is_recorded_false(
    kind: str, correct: bool | None
) -> None:
    settled = settle_score(ScoreResult(correct, "x", kind), has_label=True)  # type: ignore[arg-type]
    assert settled == ScoreResult(False, "x", kind)
    assert settled.correct is False


@pytest.mark.parametrize("kind", FAILURE_KINDS)
def test_a_failure_kind_with_correct_true_is_an_error_in_the_scorer(kind: str) -> None:
    with pytest.raises(ScorerError, match=rf"correct=True.*{kind}"):
        settle_score(ScoreResult(True, "x", kind), has_label=True)  # type: ignore[arg-type]


def test_correct_false_without_failure_kind_is_recorded_wrong() -> None:
    assert settle_score(ScoreResult(False, "lyon", None), has_label=True) == ScoreResult(
        False, "lyon", "wrong"
    )


def test_correct_none_on_a_labelled_item_without_failure_kind_stays_unscored() -> None:
    assert settle_score(ScoreResult(None, "x", None), has_label=True) == ScoreResult(
        None, "x", None
    )


def test_correct_true_without_failure_kind_is_kept() -> None:
    assert settle_score(ScoreResult(True, "paris", None), has_label=True) == ScoreResult(
        True, "paris", None
    )


def test_settle_score_turns_the_seed_scorer_into_records() -> None:
    parse = near(None, "n/a", 45.2)
    assert settle_score(parse, has_label=True) == ScoreResult(False, None, "parse_failure")
    off = near(None, "50", 45.2)
    assert settle_score(off, has_label=True) == ScoreResult(False, "50", "wrong")


# --- partial credit: score beside correct --------------------------------------------


@pytest.mark.parametrize("value", [
    {"correct": False, "outcome": "x", "failure_kind": None, "score": 0.25},
    (False, "x", None, 0.25),
    ScoreResult(False, "x", None, 0.25),
    {"correct": False, "outcome": "x", "failure_kind": None, "score": np.float32(0.25)},
])
def test_a_scorer_may_return_a_score_in_a_mapping_tuple_or_score_result(value: Any) -> None:
    scorer = hr_scorer(lambda item, output, label: value, name="partial")
    result = scorer(None, "x", "y")
    assert result == ScoreResult(False, "x", None, 0.25) and type(result.score) is float
    assert settle_score(result, has_label=True) == ScoreResult(False, "x", "wrong", 0.25)
    assert settle_score(result, has_label=False) == ScoreResult(None, "x", None)


def test_three_field_results_stay_three_fields() -> None:
    scorer = hr_scorer(lambda item, output, label: (True, "x", None), name="three")
    correct, outcome, kind = scorer(None, "x", "x")
    assert (correct, outcome, kind) == (True, "x", None)


@pytest.mark.parametrize(("score", "message"), [
    (1.5, "returned score=1.5, outside [0, 1]"), (-0.1, "returned score=-0.1, outside [0, 1]"),
    (True, "returned score=True; use a number in [0, 1] or None"), ("0.5", "returned score='0.5'"),
])
def test_a_score_outside_zero_one_is_a_scorer_error(score: Any, message: str) -> None:
    scorer = hr_scorer(lambda i, o, label: (True, "x", None, score), name="bad")
    with pytest.raises(ScorerError, match=re.escape(f"scorer 'bad' {message}")):
        scorer(None, "x", "x")


def test_a_nan_score_is_no_score() -> None:
    scorer = hr_scorer(lambda i, o, label: (True, "x", None, math.nan), name="nan")
    assert scorer(None, "x", "x").score is None
