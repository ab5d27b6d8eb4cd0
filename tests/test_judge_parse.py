"""Judge reply parsing: JSON, code fences, allowed verdicts; never raises."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hr_core.judge.parse import ParsedReply, normalise_verdict, parse_reply

PAIR = ["A", "B", "tie"]


@pytest.mark.parametrize(
    ("reply", "verdict", "reason"),
    [
        ('{"verdict": "A", "reason": "closer"}', "A", "closer"),
        ('  {"verdict": "b", "reason": "r"}\n', "B", "r"),
        ('{"verdict": "TIE", "reason": "same"}', "tie", "same"),
        ('```json\n{"verdict": "tie", "reason": "same"}\n```', "tie", "same"),
        ('Here you go:\n```\n{"verdict": "A"}\n```\nThanks', "A", None),
        ('My answer: {"verdict": "B", "reason": "ok"} -- done', "B", "ok"),
        ('{"verdict": " a ", "reason": 3}', "A", None),
    ],
)
def test_valid_replies_parse(reply: str, verdict: str, reason: str | None) -> None:
    assert parse_reply(reply, PAIR) == ParsedReply(verdict, reason, None)


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ("", "empty reply"),
        (None, "empty reply"),
        ("A", 'no verdict in the reply'),
        ('{"answer": "A"}', 'no verdict in the reply'),
        ('{"verdict": "C", "reason": "x"}', "verdict 'C' is not one of A, B, tie"),
        ('{"verdict": 1}', "verdict 1 is not one of"),
        ('{"verdict": "A"} or {"verdict": "B"}', "ambiguous reply"),
        ('{"verdict": "A", ', 'no verdict in the reply'),
    ],
)
def test_invalid_replies_are_parse_failures(reply: str, error: str) -> None:
    parsed = parse_reply(reply, PAIR)
    assert parsed.verdict is None and parsed.error is not None and error in parsed.error


def test_grades_match_exactly_then_case_insensitively() -> None:
    assert parse_reply('{"verdict": "PASS"}', ["pass", "fail"]).verdict == "pass"
    assert normalise_verdict("Pass", ["pass", "PASS"]) is None
    assert normalise_verdict("PASS", ["pass", "PASS"]) == "PASS"


def test_same_verdict_repeated_is_not_ambiguous() -> None:
    reply = '```json\n{"verdict": "A", "reason": "x"}\n```\n{"verdict": "A"}'
    assert parse_reply(reply, PAIR).verdict == "A"


@given(text=st.text(max_size=300))
def test_parser_never_raises_on_arbitrary_text(text: str) -> None:
    parsed = parse_reply(text, PAIR)
    assert isinstance(parsed, ParsedReply)
    assert (parsed.verdict is None) != (parsed.error is None)
    assert parsed.verdict is None or parsed.verdict in PAIR


@given(value=st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=3),
    max_leaves=10,
))
def test_parser_never_raises_on_arbitrary_json(value: object) -> None:
    import json

    for text in (json.dumps(value), json.dumps({"verdict": value})):
        parsed = parse_reply(text, ["pass", "fail"])
        assert parsed.verdict in (None, "pass", "fail")


@given(prefix=st.text(max_size=50), suffix=st.text(max_size=50),
       verdict=st.sampled_from(["a", "B", "Tie"]))
def test_embedded_valid_object_is_found(prefix: str, suffix: str, verdict: str) -> None:
    prefix, suffix = (t.replace("{", "").replace("[", "") for t in (prefix, suffix))
    reply = f'{prefix}{{"verdict": "{verdict}"}}{suffix}'
    assert parse_reply(reply, PAIR).verdict == normalise_verdict(verdict, PAIR)


# --- verdicts in the formats widespread judge prompts produce --------------------------

GRADES = ["1", "2", "3", "4", "5"]
LETTERS3 = ["A", "B", "C"]


@pytest.mark.parametrize(("reply", "verdict"), [
    ("Assistant A follows the instructions better. [[A]]", "A"),
    ("[[B]]", "B"),
    ("Both answers are equally good.\n\nFinal verdict: [[C]]", "tie"),
    ("[[ tie ]]", "tie"),
    ("[[b]]", "B"),
    ('{"verdict": "A", "reason": "x"} so [[A]]', "A"),
])
def test_pairwise_double_bracket_verdicts(reply: str, verdict: str) -> None:
    assert parse_reply(reply, PAIR, mode="pairwise").verdict == verdict
    assert parse_reply(reply, PAIR).verdict == verdict


def test_a_bracket_verdict_keeps_the_text_before_it_as_reason() -> None:
    parsed = parse_reply("A is more accurate.\n[[A]]", PAIR)
    assert parsed == ParsedReply("A", "A is more accurate.", None)


@pytest.mark.parametrize(("reply", "verdict"), [
    ("The answer is helpful and correct.\nRating: [[5]]", "5"),
    ("Rating: [[4]]", "4"),
    ("[[3.0]]", "3"),
    ("[[ 2 ]]", "2"),
])
def test_numeric_grades_in_double_brackets(reply: str, verdict: str) -> None:
    assert parse_reply(reply, GRADES, mode="grade").verdict == verdict


def test_word_grades_in_double_brackets() -> None:
    assert parse_reply("Verdict: [[PASS]]", ["pass", "fail"], mode="grade").verdict == "pass"


@pytest.mark.parametrize(("reply", "verdict"), [
    ("B", "B"), (" c\n", "C"), ("(A)", "A"), ("B.", "B"), ("**C**", "C"), ("[[B]]", "B"),
])
def test_select_accepts_a_lone_letter(reply: str, verdict: str) -> None:
    assert parse_reply(reply, LETTERS3, mode="select").verdict == verdict


def test_a_lone_letter_counts_only_in_select_mode() -> None:
    assert parse_reply("B", PAIR, mode="pairwise").verdict is None
    assert parse_reply("B", LETTERS3).verdict is None
    assert parse_reply("D", LETTERS3, mode="select").verdict is None


def test_c_is_a_candidate_not_a_tie_when_c_is_allowed() -> None:
    assert parse_reply("[[C]]", LETTERS3, mode="select").verdict == "C"


@pytest.mark.parametrize(("reply", "allowed"), [
    ("[[A]] ... on reflection [[B]]", PAIR),
    ("[[A]] or maybe [[C]]", PAIR),
    ('{"verdict": "A"} but [[B]]', PAIR),
    ("Rating: [[4]] ... Rating: [[5]]", GRADES),
])
def test_two_different_verdicts_are_ambiguous(reply: str, allowed: list[str]) -> None:
    parsed = parse_reply(reply, allowed)
    assert parsed.verdict is None and parsed.error == "ambiguous reply: several different verdicts"


@pytest.mark.parametrize(("reply", "allowed", "error"), [
    ("[[D]]", PAIR, "verdict '[[D]]' is not one of A, B, tie"),
    ("Rating: [[11]]", GRADES, "verdict '[[11]]' is not one of 1, 2, 3, 4, 5"),
    ("[[C]]", ["A", "B"], "verdict '[[C]]' is not one of A, B"),
])
def test_a_bracket_verdict_outside_the_allowed_ones_is_a_parse_failure(
        reply: str, allowed: list[str], error: str) -> None:
    assert parse_reply(reply, allowed) == ParsedReply(None, None, error)


_fragments = st.sampled_from(["[[A]]", "[[B]]", "[[C]]", "[[tie]]", "[[5]]", "[[", "]]",
                              "Rating: ", '{"verdict": "A"}', "B", "(", ")", "\n", " "])


@given(parts=st.lists(_fragments | st.text(max_size=8), max_size=8),
       mode=st.sampled_from([None, "pairwise", "grade", "select"]),
       allowed=st.sampled_from([PAIR, GRADES, LETTERS3, ["pass", "fail"]]))
def test_parser_never_raises_and_never_picks_one_of_two_verdicts(
        parts: list[str], mode: str | None, allowed: list[str]) -> None:
    reply = "".join(parts)
    parsed = parse_reply(reply, allowed, mode=mode)
    assert (parsed.verdict is None) != (parsed.error is None)
    assert parsed.verdict is None or parsed.verdict in allowed
    named = {parse_reply(f"[[{b}]]", allowed).verdict
             for b in re.findall(r"\[\[\s*([^\[\]\n]{1,40}?)\s*\]\]", reply)}
    if len(named - {None}) > 1:
        assert parsed.verdict is None
