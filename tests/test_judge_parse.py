"""Judge reply parsing: JSON, code fences, allowed verdicts; never raises."""

from __future__ import annotations

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
        ("A", 'no JSON object with a "verdict"'),
        ('{"answer": "A"}', 'no JSON object with a "verdict"'),
        ('{"verdict": "C", "reason": "x"}', "verdict 'C' is not one of A, B, tie"),
        ('{"verdict": 1}', "verdict 1 is not one of"),
        ('{"verdict": "A"} or {"verdict": "B"}', "ambiguous reply"),
        ('{"verdict": "A", ', 'no JSON object with a "verdict"'),
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
    reply = f'{prefix.replace("{", "")}{{"verdict": "{verdict}"}}{suffix.replace("{", "")}'
    assert parse_reply(reply, PAIR).verdict == normalise_verdict(verdict, PAIR)
