"""hr_judge_config: seed example, hash, orders rules, errors, immutability."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hr_core.core.errors import HrError
from hr_core.judge.config import (
    CONFIG_FIELDS,
    JudgeConfigError,
    canonical_json,
    config_hash,
    hr_judge_config,
)
from hr_core.judge.judging import map_verdict
from hr_core.judge.prompts import LETTERS

RUBRIC = "Is the response's answer the reference's?"
ROOT = Path(__file__).resolve().parents[1]


def test_seed_example_prints_the_seed_lines() -> None:
    cfg = hr_judge_config("mock-model", RUBRIC, mode="grade")
    lines = str(cfg).splitlines()
    assert lines[0] == f"<hr_judge_config {cfg.hash[:12]}> grade, 2 order(s), unanimous"
    assert lines[1:] == [
        "  model: mock-model",
        "  grades: pass, fail (positive: pass)",
        f"  rubric: {RUBRIC}",
    ]
    assert repr(cfg) == str(cfg)


def test_seed_example_another_rubric_is_another_configuration() -> None:
    cfg = hr_judge_config("mock-model", RUBRIC, mode="grade")
    other = hr_judge_config("mock-model", "Is the response fully correct?", mode="grade")
    assert cfg.hash != other.hash


def test_print_has_no_grades_line_outside_grade() -> None:
    cfg = hr_judge_config("mock-model", "Which is best?", mode="select", orders=3)
    assert str(cfg).splitlines() == [
        f"<hr_judge_config {cfg.hash[:12]}> select, 3 order(s), unanimous",
        "  model: mock-model",
        "  rubric: Which is best?",
    ]


def test_fields_and_defaults_per_mode() -> None:
    grade = hr_judge_config("mock-model", RUBRIC, mode="grade")
    assert grade.grades == ("pass", "fail") and grade.positive == "pass"
    assert grade.aggregation == "unanimous"
    assert grade.schema["properties"]["verdict"]["enum"] == ["pass", "fail"]
    pair = hr_judge_config("mock-model", RUBRIC, mode="pairwise")
    assert pair.schema["properties"]["verdict"]["enum"] == ["A", "B", "tie"]
    assert pair.grades is None and pair.positive is None
    select = hr_judge_config("mock-model", RUBRIC)
    assert select.mode == "select"
    assert select.schema["properties"]["verdict"] == {"type": "string", "pattern": "^[A-Z]$"}
    assert set(select.to_dict()) == set(CONFIG_FIELDS)


def test_hash_is_sha256_of_the_documented_canonical_json() -> None:
    import hashlib

    cfg = hr_judge_config("mock-model", RUBRIC, mode="grade")
    body = canonical_json({k: cfg.to_dict()[k] for k in CONFIG_FIELDS})
    assert cfg.hash == hashlib.sha256(body.encode("utf-8")).hexdigest()
    assert " " not in canonical_json({"b": [1, 2], "a": {"d": 1, "c": 2}})


def test_custom_schema_gives_grades_and_positive() -> None:
    schema = {"type": "object", "properties": {
        "verdict": {"type": "string", "enum": ["correct", "partial", "wrong"]},
        "reason": {"type": "string"}}}
    cfg = hr_judge_config("mock-model", RUBRIC, mode="grade", schema=schema, positive="correct")
    assert cfg.grades == ("correct", "partial", "wrong")
    assert hr_judge_config("mock-model", RUBRIC, mode="grade", schema=schema).positive == "correct"
    assert '"partial"' in cfg.prompt


def test_positive_is_ignored_outside_grade() -> None:
    a = hr_judge_config("mock-model", RUBRIC, mode="pairwise")
    b = hr_judge_config("mock-model", RUBRIC, mode="pairwise", positive="A")
    assert b.positive is None and a.hash == b.hash


def test_equal_arguments_equal_hash_and_equality() -> None:
    a = hr_judge_config("openai:gpt-4o-mini", RUBRIC, mode="grade")
    b = hr_judge_config("openai:gpt-4o-mini", RUBRIC, mode="grade")
    assert a == b and hash(a) == hash(b) and a.hash == b.hash


_SCRIPT = (
    "from hr_core.judge.config import hr_judge_config as h;"
    "print(h('mock-model', 'Is it right? é', mode='grade').hash);"
    "print(h('openai:gpt-4o-mini', 'best', orders=3).hash)"
)


@pytest.mark.parametrize("seed", ["0", "12345"])
def test_hash_is_equal_across_processes(seed: str) -> None:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == [hr_judge_config("mock-model", "Is it right? é", mode="grade").hash,
                   hr_judge_config("openai:gpt-4o-mini", "best", orders=3).hash]


_BASE = {"model": "mock-model", "rubric": RUBRIC, "mode": "grade", "orders": 2}
_CHANGES = [
    {"model": "mock:other"},
    {"rubric": RUBRIC + "!"},
    {"mode": "pairwise"},
    {"orders": 1},
    {"positive": "fail"},
    {"schema": {"type": "object", "properties": {
        "verdict": {"type": "string", "enum": ["pass", "fail"]}}}},
    {"schema": {"type": "object", "properties": {
        "verdict": {"type": "string", "enum": ["fail", "pass"]}}}, "positive": "pass"},
]


@pytest.mark.parametrize("change", _CHANGES, ids=lambda c: "+".join(c))
def test_changing_any_argument_changes_the_hash(change: dict) -> None:
    base = hr_judge_config(**_BASE)
    assert hr_judge_config(**{**_BASE, **change}).hash != base.hash


@pytest.mark.parametrize("field", CONFIG_FIELDS)
def test_changing_any_hashed_field_changes_the_hash(field: str) -> None:
    fields = hr_judge_config(**_BASE).to_dict()
    changed = dict(fields)
    value = fields[field]
    changed[field] = (value + 1 if isinstance(value, int) else
                      [*value, "x"] if isinstance(value, list) else
                      {**value, "x": 1} if isinstance(value, dict) else f"{value}x")
    assert config_hash(changed) != config_hash(fields)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "rank"}, "judge mode 'rank' is unknown"),
        ({"mode": "select", "orders": 1}, "orders=1 is allowed only for grade"),
        ({"mode": "pairwise", "orders": 3}, "pairwise needs exactly orders=2"),
        ({"mode": "grade", "orders": 3}, "grade allows orders=1 or 2"),
        ({"orders": 0}, "orders must be a positive integer"),
        ({"orders": True}, "orders must be a positive integer"),
        ({"mode": "grade", "positive": "maybe"}, "positive='maybe' is not one of the grades"),
        ({"schema": {"type": "object", "properties": {"verdict": {"type": "integer"}}}},
         "string 'verdict' property"),
        ({"schema": {"type": "array"}}, "string 'verdict' property"),
        ({"schema": "json"}, "schema must be a JSON schema"),
        ({"mode": "grade", "schema": {"type": "object",
                                      "properties": {"verdict": {"type": "string"}}}},
         "needs an 'enum'"),
        ({"model": ""}, "model must be one non-empty string"),
        ({"rubric": None}, "rubric must be one non-empty string"),
    ],
)
def test_invalid_arguments_raise_value_errors_saying_what_is_allowed(kwargs: dict,
                                                                      message: str) -> None:
    args = {"model": "mock-model", "rubric": RUBRIC, **kwargs}
    with pytest.raises(JudgeConfigError, match=message) as info:
        hr_judge_config(**args)
    assert isinstance(info.value, HrError) and isinstance(info.value, ValueError)


def test_config_is_immutable_and_schema_is_a_copy() -> None:
    cfg = hr_judge_config("mock-model", RUBRIC, mode="grade")
    with pytest.raises(AttributeError):
        cfg.rubric = "other"  # type: ignore[misc]
    cfg.schema["properties"]["verdict"]["enum"].append("maybe")
    assert cfg.schema["properties"]["verdict"]["enum"] == ["pass", "fail"]
    assert cfg.hash == hr_judge_config("mock-model", RUBRIC, mode="grade").hash


def test_config_pickles_to_an_equal_config() -> None:
    cfg = hr_judge_config("mock-model", RUBRIC, mode="grade", orders=1)
    assert pickle.loads(pickle.dumps(cfg)).hash == cfg.hash


def test_orderings_per_mode() -> None:
    assert hr_judge_config("m", RUBRIC, mode="grade").orderings(2) == [(0, 1), (1, 0)]
    assert hr_judge_config("m", RUBRIC, mode="grade", orders=1).orderings(2) == [(0, 1)]
    assert hr_judge_config("m", RUBRIC, orders=2).orderings(4) == [(0, 1, 2, 3), (3, 2, 1, 0)]
    assert hr_judge_config("m", RUBRIC, orders=4).orderings(4)[1] == (1, 2, 3, 0)


def test_orderings_reject_more_orders_than_candidates() -> None:
    with pytest.raises(JudgeConfigError, match="orders=3 needs at least 3 candidates"):
        hr_judge_config("m", RUBRIC, orders=3).orderings(2)
    with pytest.raises(JudgeConfigError, match="exactly 2"):
        hr_judge_config("m", RUBRIC, mode="pairwise").orderings(3)


@given(n=st.integers(2, 26), data=st.data())
def test_orderings_are_permutations_and_mapping_back_inverts_them(n: int, data) -> None:
    orders = data.draw(st.integers(2, n))
    cfg = hr_judge_config("m", RUBRIC, orders=orders)
    orderings = cfg.orderings(n)
    assert len(orderings) == orders and len(set(orderings)) == orders
    for order in orderings:
        assert sorted(order) == list(range(n))
        for original in range(n):
            shown_letter = LETTERS[order.index(original)]
            assert map_verdict("select", order, shown_letter) == LETTERS[original]


@given(order=st.permutations([0, 1]), shown=st.sampled_from(["A", "B", "tie"]))
def test_pairwise_mapping_back_inverts_the_swap(order: list[int], shown: str) -> None:
    back = map_verdict("pairwise", tuple(order), shown)
    if shown == "tie":
        assert back == "tie"
    else:
        assert back == LETTERS[order[LETTERS.index(shown)]]
