"""judge_item: one call per ordering, verdicts mapped back, unanimous aggregation."""

from __future__ import annotations

import asyncio
import json

import pytest

from hr_core.judge.config import JudgeConfigError, hr_judge_config
from hr_core.judge.judging import JudgeResult, judge_item
from hr_core.models.base import ModelReply
from hr_core.models.mock import MockModel
from hr_core.models.scripted import ScriptedModel
from hr_core.results import Usage

GRADE = hr_judge_config("mock-model", "Right?", mode="grade")
PAIR = hr_judge_config("mock-model", "Which is right?", mode="pairwise")
SELECT = hr_judge_config("mock-model", "Which is right?")


def _judge(config, model, **kwargs) -> JudgeResult:
    return asyncio.run(judge_item(config, model, item="Capital of France?", **kwargs))


def _shown(messages) -> dict:
    return json.loads(messages[-1]["content"].split("\n", 1)[1])


def test_one_call_per_ordering_with_the_schema() -> None:
    model = ScriptedModel(lambda m: '{"verdict": "pass", "reason": "ok"}')
    result = _judge(GRADE, model, candidates=["Paris"], reference="Paris", run=3)
    assert len(model.calls) == 2 and result.status == "ok" and result.verdict == "pass"
    assert all(c["schema"] == GRADE.schema and c["run"] == 3 for c in model.calls)
    assert [o.order for o in result.orders] == [(0, 1), (1, 0)]
    assert result.config_hash == GRADE.hash


def test_grade_with_one_order_calls_once() -> None:
    cfg = hr_judge_config("mock-model", "Right?", mode="grade", orders=1)
    model = ScriptedModel(lambda m: '{"verdict": "fail", "reason": "no"}')
    result = _judge(cfg, model, candidates=["Lyon"], reference="Paris")
    assert len(model.calls) == 1 and result.verdict == "fail"


def test_verdicts_are_mapped_back_to_the_original_candidates() -> None:
    # A judge that always picks the candidate "Paris" wherever it is shown.
    def pick_paris(messages) -> str:
        shown = _shown(messages)["candidates"]
        letter = next(k for k, v in shown.items() if v == "Paris")
        return json.dumps({"verdict": letter, "reason": "Paris"})

    cfg = hr_judge_config("mock-model", "Which?", orders=3)
    result = _judge(cfg, ScriptedModel(pick_paris), candidates=["Lyon", "Nice", "Paris"])
    assert [o.shown_verdict for o in result.orders] == ["C", "B", "A"]
    assert result.order_verdicts == ["C", "C", "C"]
    assert (result.status, result.verdict) == ("ok", "C")


def test_position_biased_judge_has_no_consensus() -> None:
    model = ScriptedModel(lambda m: '{"verdict": "A", "reason": "first"}')
    result = _judge(PAIR, model, candidates=["Paris", "Lyon"])
    assert result.order_verdicts == ["A", "B"]
    assert (result.status, result.verdict) == ("no_consensus", None)


def test_a_bad_reply_in_one_order_is_a_parse_failure_keeping_every_raw_reply() -> None:
    replies = iter(['{"verdict": "A", "reason": "x"}', "I think A"])
    result = _judge(PAIR, ScriptedModel(lambda m: next(replies)), candidates=["a", "b"])
    assert result.status == "parse_failure" and result.verdict is None
    assert [o.raw for o in result.orders] == ['{"verdict": "A", "reason": "x"}', "I think A"]
    assert [o.status for o in result.orders] == ["ok", "parse_failure"]
    assert result.orders[1].error


def test_a_model_error_is_an_error_status_not_raised() -> None:
    def boom(messages) -> str:
        raise RuntimeError("provider down")

    result = _judge(PAIR, ScriptedModel(boom), candidates=["a", "b"])
    assert result.status == "error"
    assert result.orders[0].error == "RuntimeError: provider down"


def test_usage_is_summed_over_orders() -> None:
    reply = ModelReply('{"verdict": "tie", "reason": "x"}',
                       Usage(tokens_in=10, tokens_out=2, cost_usd=0.5))
    result = _judge(PAIR, ScriptedModel(lambda m: reply), candidates=["a", "b"])
    assert result.usage == Usage(tokens_in=20, tokens_out=4, cost_usd=1.0)


def test_result_serialises_to_json_and_back() -> None:
    result = _judge(SELECT, MockModel(), candidates=["Lyon", "Paris"], reference="Paris")
    assert JudgeResult.model_validate_json(result.model_dump_json()) == result


@pytest.mark.parametrize(
    ("config", "kwargs", "message"),
    [
        (GRADE, {"candidates": ["a", "b"], "reference": "a"}, "exactly one response"),
        (GRADE, {"candidates": ["a"]}, "needs a reference"),
        (PAIR, {"candidates": ["a", "b", "c"]}, "exactly 2"),
        (hr_judge_config("m", "x", orders=3), {"candidates": ["a", "b"]}, "at least 3"),
    ],
)
def test_wrong_number_of_candidates_raises(config, kwargs: dict, message: str) -> None:
    with pytest.raises(JudgeConfigError, match=message):
        _judge(config, MockModel(), **kwargs)


def test_mt_bench_style_bracket_replies_reach_a_verdict_in_every_mode() -> None:
    # Pairwise: a judge that prefers "Paris" wherever shown, answering [[A]]/[[B]].
    def pairwise(messages) -> str:
        shown = _shown(messages)["candidates"]
        letter = next(k for k, v in shown.items() if v == "Paris")
        return f"Assistant {letter} names the capital.\n\n[[{letter}]]"

    result = _judge(PAIR, ScriptedModel(pairwise), candidates=["Lyon", "Paris"])
    assert (result.status, result.verdict) == ("ok", "B")
    tie = _judge(PAIR, ScriptedModel(lambda m: "Both equally good. [[C]]"),
                 candidates=["Paris", "paris"])
    assert (tie.status, tie.verdict) == ("ok", "tie")

    # Select: a lone letter.
    def select(messages) -> str:
        shown = _shown(messages)["candidates"]
        return next(k for k, v in shown.items() if v == "Paris")

    picked = _judge(SELECT, ScriptedModel(select), candidates=["Lyon", "Nice", "Paris"])
    assert (picked.status, picked.verdict) == ("ok", "C")

    # Grade on a numeric scale: Rating: [[n]].
    scale = hr_judge_config("mock-model", "Rate 1-5", mode="grade", schema={
        "type": "object", "properties": {"verdict": {"type": "string",
                                                     "enum": ["1", "2", "3", "4", "5"]}},
        "required": ["verdict"]}, positive="5")
    rated = _judge(scale, ScriptedModel(lambda m: "Accurate and complete.\nRating: [[5]]"),
                   candidates=["Paris"], reference="Paris")
    assert (rated.status, rated.verdict) == ("ok", "5")
    assert rated.orders[0].reason == "Accurate and complete."


def test_a_bracket_reply_naming_two_verdicts_is_a_parse_failure() -> None:
    result = _judge(PAIR, ScriptedModel(lambda m: "[[A]]... actually [[B]]"),
                    candidates=["Lyon", "Paris"])
    assert result.status == "parse_failure"
    assert all(o.error == "ambiguous reply: several different verdicts" for o in result.orders)
