"""A judge as the scorer: judge failures counted apart, require_valid_judge, manifest."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path

import pytest

from hr_core import SpecError
from hr_core.judge import (
    ValidityThresholds,
    compute_validation,
    hr_judge_config,
    hr_scorer_judge,
    judge_labelled,
    save_validation,
)
from hr_core.models import resolve_model
from hr_core.run.session import BenchmarkSession, apply_judge_policy, plan_benchmark

ITEMS = [{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}"} for i in range(6)]
RUBRIC = "Is the response's answer the reference's?"
LABELLED = [{"item": "2+2?", "response": "4", "reference": "4", "human": "pass"},
            {"item": "2+2?", "response": "5", "reference": "4", "human": "fail"}]


LOOSE = ValidityThresholds(min_items=0, min_agreement=0)


def _arm(payload: dict) -> str:
    n = int(payload["question"][1:])
    return f"a{n}" if n % 2 else "nope"


def _plan(tmp_path: Path, rubric: str = RUBRIC):
    config = hr_judge_config("mock-model", rubric, mode="grade")
    return plan_benchmark({"arm": _arm}, ITEMS, hr_scorer_judge(config), store=str(tmp_path))


def _validate(rubric: str, store: Path) -> None:
    config = hr_judge_config("mock-model", rubric, mode="grade")
    results = asyncio.run(judge_labelled(config, resolve_model(config.model), LABELLED))
    save_validation(compute_validation(config, results, [r["human"] for r in LABELLED]), store)


def test_a_judge_scorer_grades_runs_and_counts_judge_failures_apart(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    apply_judge_policy(plan, "ignore", str(tmp_path / "judges"))
    bench = BenchmarkSession(plan).run_sync()
    assert bench.runs["correct"].tolist() == [False, True] * 3
    assert "judge_status" in bench.runs and set(bench.runs["judge_status"]) == {"ok"}
    row = bench.summary().iloc[0]
    assert (row["accuracy"], row["judge_no_consensus"], row["judge_error"]) == (0.5, 0, 0)
    assert bench.manifest["judge"]["hash"] == plan.scorer.judge.hash
    assert bench.manifest["judge"]["validation"] == "missing"


def test_require_valid_judge_warns_refuses_or_ignores_a_missing_record(tmp_path: Path) -> None:
    store = str(tmp_path / "judges")
    with pytest.warns(UserWarning, match="no validation record"):
        assert apply_judge_policy(_plan(tmp_path), "warn", store) == "missing"
    with pytest.raises(SpecError, match="hr_judge_validate"):
        apply_judge_policy(_plan(tmp_path), "refuse", store)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert apply_judge_policy(_plan(tmp_path), "ignore", store) == "missing"


def test_a_record_for_another_rubric_is_stale_and_names_the_field(tmp_path: Path) -> None:
    store = tmp_path / "judges"
    _validate("Another rubric entirely?", store)
    with pytest.raises(SpecError, match=r"changed config: differs in rubric"):
        apply_judge_policy(_plan(tmp_path), "refuse", str(store))
    _validate(RUBRIC, store)
    plan = _plan(tmp_path)
    assert apply_judge_policy(plan, "refuse", str(store), LOOSE) == "valid"
    assert plan.judge["validation"] == "valid" and plan.judge["reasons"] == []


def test_a_record_for_this_config_below_the_thresholds_refuses_and_says_why(
        tmp_path: Path) -> None:
    store = tmp_path / "judges"
    _validate(RUBRIC, store)  # 2 items, both agreed: exact interval 15.8%-100%
    with pytest.raises(SpecError) as refused:
        apply_judge_policy(_plan(tmp_path), "refuse", str(store))
    assert str(refused.value).endswith(
        " is not valid: too few items: 2 < min_items 50; agreement too low: lower bound "
        "15.8% < min_agreement 70.0%; validate it on more labelled items "
        "(hr_judge_validate) or set judge_min_items / judge_min_agreement")
    only_items = ValidityThresholds(min_items=3, min_agreement=0.1)
    with pytest.raises(SpecError, match=r"not valid: too few items: 2 < min_items 3; validate"):
        apply_judge_policy(_plan(tmp_path), "refuse", str(store), only_items)
    plan = _plan(tmp_path)
    with pytest.warns(UserWarning, match=r"lower bound 15.8% < min_agreement 20.0%"):
        status = apply_judge_policy(plan, "warn", str(store),
                                    ValidityThresholds(min_items=2, min_agreement=0.2))
    assert status == "insufficient"
    assert plan.judge["reasons"] == ["agreement too low: lower bound 15.8% < min_agreement 20.0%"]


def test_the_judge_config_is_part_of_the_run_id(tmp_path: Path) -> None:
    assert _plan(tmp_path).run_id != _plan(tmp_path, "Other rubric?").run_id
