"""Tests of hr_core.results: ArmResult (the seed's gr_result), Usage and ScoreResult."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from pydantic import ValidationError

from hr_core import FAILURE_KINDS, ArmResult, ScoreResult, Usage


def test_arm_result_defaults_to_ok_with_nothing_else() -> None:
    result = ArmResult()
    assert result.ok is True
    assert (result.text, result.answer, result.failure_kind, result.error) == (None,) * 4
    assert result.usage == Usage()
    assert result.meta == {}


def test_arm_result_holds_usage_and_meta() -> None:
    result = ArmResult(
        answer="Paris",
        text="The capital is Paris.",
        usage={"tokens_in": 12, "tokens_out": 5, "cost_usd": 0.0001},
        meta={"model": "mock-model"},
    )
    assert result.usage == Usage(tokens_in=12, tokens_out=5, cost_usd=0.0001)
    assert result.meta["model"] == "mock-model"


def test_each_arm_result_gets_its_own_usage_and_meta() -> None:
    first, second = ArmResult(), ArmResult()
    first.meta["x"] = 1
    assert second.meta == {}
    assert first.usage is not second.usage


@pytest.mark.parametrize("kind", FAILURE_KINDS)
def test_arm_result_accepts_every_failure_kind(kind: str) -> None:
    assert ArmResult(ok=False, failure_kind=kind).failure_kind == kind  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "fields",
    [
        {"failure_kind": "timeout"},
        {"failure_kind": "Wrong"},
        {"answr": "Paris"},
        {"usage": {"tokens": 3}},
        {"ok": "maybe"},
    ],
)
def test_arm_result_rejects_unknown_fields_and_kinds(fields: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ArmResult(**fields)


def test_usage_rejects_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        Usage(tokens_total=3)  # type: ignore[call-arg]


def test_arm_result_round_trips_through_json() -> None:
    result = ArmResult(
        ok=False, error="TimeoutError: 30 s", failure_kind="error", usage=Usage(tokens_in=3)
    )
    assert ArmResult.model_validate_json(result.model_dump_json()) == result


def test_score_result_has_the_three_fields_in_order() -> None:
    result = ScoreResult(True, "paris", None)
    assert result._fields == ("correct", "outcome", "failure_kind")
    assert (result.correct, result.outcome, result.failure_kind) == (True, "paris", None)
    correct, outcome, kind = result
    assert (correct, outcome, kind) == (True, "paris", None)


def test_score_result_defaults_outcome_and_failure_kind_to_none() -> None:
    assert ScoreResult(None) == ScoreResult(None, None, None)


def test_score_result_is_a_light_tuple() -> None:
    result = ScoreResult(False, "lyon", "wrong")
    assert isinstance(result, tuple)
    assert result == (False, "lyon", "wrong")
    assert not hasattr(result, "__dict__")
    assert pickle.loads(pickle.dumps(result)) == result
    assert result._replace(failure_kind=None) == ScoreResult(False, "lyon", None)


def test_score_result_prints_its_fields() -> None:
    assert repr(ScoreResult(True, "paris", None)) == (
        "ScoreResult(correct=True, outcome='paris', failure_kind=None)"
    )


def test_score_result_carries_a_score_only_when_given() -> None:
    plain = ScoreResult(True, "paris", None)
    scored = ScoreResult(False, "lower", "wrong", 0.5)
    assert (len(plain), plain.score) == (3, None)
    assert (len(scored), scored.score) == (4, 0.5)
    assert ScoreResult(True, "paris", None, None) == plain
    assert len(ScoreResult(True, "paris", None, None)) == 3
    assert pickle.loads(pickle.dumps(scored)) == scored
    assert scored._replace(score=None) == ScoreResult(False, "lower", "wrong")
    assert scored._asdict()["score"] == 0.5
    assert repr(scored) == (
        "ScoreResult(correct=False, outcome='lower', failure_kind='wrong', score=0.5)")


def test_a_score_result_carries_its_model_usage_beside_the_tuple() -> None:
    spent = Usage(tokens_in=40, tokens_out=2, cost_usd=0.001)
    judged = ScoreResult(True, "judge:pass", None, usage=spent)
    assert judged.usage == spent and ScoreResult(True, "judge:pass", None).usage is None
    correct, outcome, kind = judged  # three values still unpack: usage is no element
    assert (correct, outcome, kind) == (True, "judge:pass", None)
    assert judged == ScoreResult(True, "judge:pass", None)  # the verdict, whatever it cost
    assert isinstance(judged, ScoreResult) and not hasattr(ScoreResult(True), "__dict__")
    assert pickle.loads(pickle.dumps(judged)).usage == spent
    assert judged._replace(outcome="judge:fail").usage == spent
    assert judged._asdict()["usage"] == spent
    assert repr(judged) == ("ScoreResult(correct=True, outcome='judge:pass', failure_kind=None, "
                            "usage=Usage(tokens_in=40, tokens_out=2, cost_usd=0.001))")
    scored = ScoreResult(False, "lower", "wrong", 0.5, usage=spent)
    assert (len(scored), scored.score, scored.usage) == (4, 0.5, spent)
