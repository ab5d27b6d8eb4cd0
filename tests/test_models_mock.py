"""The mock model: SPEC section 8's judge rules in every mode, and its answer policy."""

from __future__ import annotations

import asyncio
import json

import pytest

from hr_core.judge.config import hr_judge_config
from hr_core.judge.judging import judge_item
from hr_core.models.base import ChatModel
from hr_core.models.mock import MockModel, mock_answer

GRADE = hr_judge_config("mock-model", "Right?", mode="grade")
PAIR = hr_judge_config("mock-model", "Which is right?", mode="pairwise")


def _judge(config, **kwargs):
    return asyncio.run(judge_item(config, MockModel(), item="q", **kwargs))


def test_mock_is_a_chat_model() -> None:
    assert isinstance(MockModel(), ChatModel)
    assert MockModel().spec == "mock-model" and MockModel("x").spec == "mock:x"


@pytest.mark.parametrize(
    ("response", "reference", "verdict"),
    [
        ("  PARIS\n", "Paris", "pass"),
        ("Paris", ["Lyon", "paris"], "pass"),
        ("100000", 100000.0, "pass"),
        ("Lyon", "Paris", "fail"),
        ("Paris, France", "Paris", "fail"),
    ],
)
def test_grade_first_grade_when_folded_response_matches(response, reference, verdict) -> None:
    result = _judge(GRADE, candidates=[response], reference=reference)
    assert (result.status, result.verdict) == ("ok", verdict)


def test_grade_uses_the_schemas_grades_first_and_last() -> None:
    schema = {"type": "object", "properties": {
        "verdict": {"type": "string", "enum": ["good", "meh", "bad"]}}}
    cfg = hr_judge_config("mock-model", "Right?", mode="grade", schema=schema)
    assert _judge(cfg, candidates=["a"], reference="a").verdict == "good"
    assert _judge(cfg, candidates=["b"], reference="a").verdict == "bad"


@pytest.mark.parametrize(
    ("a", "b", "verdict"),
    [("Paris", "Lyon", "A"), ("Lyon", " paris", "B"), ("Paris", "PARIS", "tie"),
     ("Lyon", "Nice", "tie")],
)
def test_pairwise_matching_candidate_wins_both_or_neither_tie(a, b, verdict) -> None:
    result = _judge(PAIR, candidates=[a, b], reference="Paris")
    assert (result.status, result.verdict) == ("ok", verdict)
    assert result.order_verdicts == [verdict, verdict]


def test_select_first_matching_candidate_in_the_order_shown() -> None:
    cfg = hr_judge_config("mock-model", "Which?", orders=3)
    result = _judge(cfg, candidates=["Lyon", "Paris", "Nice"], reference="Paris")
    assert (result.status, result.verdict) == ("ok", "B")
    assert [o.shown_verdict for o in result.orders] == ["B", "A", "C"]


def test_select_two_matches_depend_on_order_and_show_no_consensus() -> None:
    cfg = hr_judge_config("mock-model", "Which?")
    result = _judge(cfg, candidates=["Paris", "Lyon", "paris"], reference="Paris")
    assert result.order_verdicts == ["A", "C"] and result.status == "no_consensus"


def test_select_position_bias_when_none_matches_shows_as_no_consensus() -> None:
    cfg = hr_judge_config("mock-model", "Which?")
    result = _judge(cfg, candidates=["Lyon", "Nice"], reference="Paris")
    assert [o.shown_verdict for o in result.orders] == ["A", "A"]
    assert result.order_verdicts == ["A", "B"]
    assert (result.status, result.verdict) == ("no_consensus", None)


def test_mock_replies_are_deterministic_json_with_usage() -> None:
    from hr_core.judge.prompts import build_messages

    msgs = build_messages(PAIR, item="q", candidates=["Paris", "Lyon"], order=(0, 1),
                          reference="Paris")
    replies = [asyncio.run(MockModel().complete(msgs, schema=PAIR.schema)) for _ in range(2)]
    assert replies[0] == replies[1]
    assert json.loads(replies[0].text)["verdict"] == "A"
    assert replies[0].usage.tokens_in and replies[0].usage.cost_usd == 0.0


@pytest.mark.parametrize(
    ("content", "answer"),
    [
        ("Document: Paris is the capital of France. Lyon is large.\n"
         "Question: What is the capital of France?", "Paris"),
        ("context: The tower is 330 metres tall. The tower was opened in 1889.\n"
         "question: When was the tower opened?", "1889"),
        (json.dumps({"document": "Ice is cold. The boiling point of water is 100 degrees.",
                     "question": "What is the boiling point of water?"}), "100 degrees"),
        ("Document: Cats sleep a lot.\nQuestion: What is the capital of Peru?",
         "NOT_IN_DOCUMENT"),
        ("What is the capital of France?", "NOT_IN_DOCUMENT"),
    ],
)
def test_answer_policy_from_the_document(content: str, answer: str) -> None:
    assert mock_answer([{"role": "user", "content": content}]) == answer


def test_echo_and_schema_wrapping() -> None:
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "hello there"}]
    assert asyncio.run(MockModel("echo").complete(msgs)).text == "hello there"
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    reply = asyncio.run(MockModel().complete(msgs, schema=schema))
    assert json.loads(reply.text) == {"answer": "NOT_IN_DOCUMENT"}
