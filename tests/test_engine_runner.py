"""Running arms in chunks: sync/async arms, errors as rows, usage, scoring, budget stops."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from hr_core import ArmResult, Budget, ScorerError, ScoreResult, Usage, hr_scorer
from hr_core.run.session import BenchmarkSession, plan_benchmark

ITEMS = [{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}"} for i in range(20)]


def _answer(payload: dict[str, Any]) -> str:
    return "a" + payload["question"][1:]


def run(arms: dict[str, Any], tmp_path: Path, items: list = ITEMS, **kwargs: Any):
    plan = plan_benchmark(arms, items, store=str(tmp_path), **kwargs)
    return BenchmarkSession(plan).run_sync()


def test_sync_and_async_arms_give_the_same_rows(tmp_path: Path) -> None:
    async def async_arm(payload: dict) -> str:
        await asyncio.sleep(0)
        return _answer(payload)

    bench = run({"sync": _answer, "async": async_arm}, tmp_path)
    summary = bench.summary().set_index("arm")
    assert summary.loc["sync", "accuracy"] == summary.loc["async", "accuracy"] == 1.0
    assert list(bench.runs["arm"].unique()) == ["sync", "async"]


def test_an_arm_that_raises_is_an_error_row_and_the_benchmark_goes_on(tmp_path: Path) -> None:
    def flaky(payload: dict) -> str:
        if payload["question"] == "Q3":
            raise RuntimeError("boom at Q3")
        return _answer(payload)

    runs = run({"flaky": flaky}, tmp_path).runs.set_index("item_id")
    assert runs.loc["q3", "failure_kind"] == "error"
    assert runs.loc["q3", "error"] == "RuntimeError: boom at Q3"
    assert runs.loc["q3", "correct"] == False  # noqa: E712 (pandas NA-aware)
    assert runs["correct"].sum() == 19


def test_usage_and_reported_errors_come_from_arm_results_and_mappings(tmp_path: Path) -> None:
    def arm(payload: dict) -> Any:
        if payload["question"] == "Q0":
            return {"answer": "a0", "usage": {"tokens_in": 5, "tokens_out": 2, "cost_usd": 0.1}}
        if payload["question"] == "Q1":
            return ArmResult(ok=False, error="upstream 500", usage=Usage(tokens_in=3))
        return ArmResult(answer=_answer(payload), usage=Usage(tokens_in=1, tokens_out=1))

    runs = run({"arm": arm}, tmp_path).runs.set_index("item_id")
    assert runs.loc["q0", ["tokens_in", "tokens_out", "cost_usd"]].tolist() == [5, 2, 0.1]
    assert runs.loc["q1", ["failure_kind", "error"]].tolist() == ["error", "upstream 500"]
    assert runs.loc["q2", "output"] == "a2"


def test_concurrency_bounds_the_runs_in_flight_per_arm(tmp_path: Path) -> None:
    in_flight, peak = 0, 0

    async def arm(payload: dict) -> str:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.001)
        in_flight -= 1
        return _answer(payload)

    run({"arm": arm}, tmp_path, concurrency=3, chunk_size=4)
    assert peak == 3


def test_sync_arms_run_in_a_bounded_thread_pool(tmp_path: Path) -> None:
    threads: set[str] = set()

    def arm(payload: dict) -> str:
        threads.add(threading.current_thread().name)
        return _answer(payload)

    run({"arm": arm}, tmp_path, concurrency=2)
    assert threads and all(t.startswith("hr-arm") for t in threads) and len(threads) <= 2


def test_runs_beyond_the_call_budget_are_budget_stop_rows(tmp_path: Path) -> None:
    calls = 0

    def arm(payload: dict) -> str:
        nonlocal calls
        calls += 1
        return _answer(payload)

    bench = run({"arm": arm}, tmp_path, runs=2, budget=Budget(max_calls=7), concurrency=4)
    assert calls == 7
    assert bench.runs["failure_kind"].eq("budget_stop").sum() == 33
    assert bench.summary().loc[0, "budget_stop"] == 33


def test_resuming_with_a_larger_budget_runs_the_stopped_runs(tmp_path: Path) -> None:
    calls = 0

    def arm(payload: dict) -> str:
        nonlocal calls
        calls += 1
        return _answer(payload)

    first = run({"arm": arm}, tmp_path, budget=Budget(max_calls=5))
    again = run({"arm": arm}, tmp_path, budget=Budget(max_calls=5))
    assert calls == 5
    pd.testing.assert_frame_equal(first.runs, again.runs)
    more = run({"arm": arm}, tmp_path, budget=Budget(max_calls=50))
    assert calls == 20 and more.runs["failure_kind"].isna().all()


def test_a_second_identical_call_calls_no_arm_and_returns_equal_results(tmp_path: Path) -> None:
    calls = 0

    def arm(payload: dict) -> str:
        nonlocal calls
        calls += 1
        return "a1"

    first = run({"arm": arm}, tmp_path, runs=2)
    second = run({"arm": arm}, tmp_path, runs=2)
    assert calls == 40
    pd.testing.assert_frame_equal(first.runs, second.runs)
    pd.testing.assert_frame_equal(first.summary(), second.summary())


def test_fresh_gives_a_new_run_id_and_resume_false_starts_over(tmp_path: Path) -> None:
    calls = 0

    def arm(payload: dict) -> str:
        nonlocal calls
        calls += 1
        return "x"

    first = run({"arm": arm}, tmp_path)
    fresh = run({"arm": arm}, tmp_path, fresh=True)
    assert fresh.run_id != first.run_id and calls == 40
    run({"arm": arm}, tmp_path, resume=False)
    assert calls == 60


def test_a_broken_scorer_keeps_the_outputs_and_a_fixed_one_rescores_without_arms(
    tmp_path: Path,
) -> None:
    calls = 0

    def arm(payload: dict) -> str:
        nonlocal calls
        calls += 1
        return _answer(payload)

    broken = hr_scorer(lambda item, output, label: (True, output, "wrong"), name="mine")
    with pytest.raises(ScorerError, match="re-score"):
        run({"arm": arm}, tmp_path, scorer=broken)
    fixed = hr_scorer(lambda item, output, label: (output == label, output, None), name="mine")
    bench = run({"arm": arm}, tmp_path, scorer=fixed)
    assert calls == 20
    assert bench.runs["correct"].all()


def test_items_without_label_are_unscored_with_their_failure_kind_kept(tmp_path: Path) -> None:
    items = [{"id": "q1", "label": "x"}, {"id": "q2", "label": None}]
    bench = run({"arm": lambda payload: ""}, tmp_path, items=items)
    assert bench.runs["correct"].tolist() == [False, pd.NA]
    assert bench.runs["failure_kind"].tolist() == ["parse_failure", "parse_failure"]
    row = bench.summary().iloc[0]
    assert (row["scored"], row["unscored"], row["parse_failure"]) == (1, 1, 2)


def test_a_sync_callable_returning_a_coroutine_is_awaited(tmp_path: Path) -> None:
    async def answer(payload: dict) -> str:
        return _answer(payload)

    bench = run({"wrapped": lambda payload: answer(payload)}, tmp_path)
    assert bench.runs["correct"].all()


def test_partials_with_other_arguments_are_other_arms_in_the_run_id(tmp_path: Path) -> None:
    import functools

    def arm(payload: dict, suffix: str) -> str:
        return _answer(payload) + suffix

    first = plan_benchmark({"a": functools.partial(arm, suffix="")}, ITEMS, store=str(tmp_path))
    other = plan_benchmark({"a": functools.partial(arm, suffix="!")}, ITEMS, store=str(tmp_path))
    same = plan_benchmark({"a": functools.partial(arm, suffix="")}, ITEMS, store=str(tmp_path))
    assert first.run_id != other.run_id and first.run_id == same.run_id


def test_a_scorers_usage_counts_in_the_budget_as_a_judges(tmp_path: Path) -> None:
    def metered(item: Any, output: Any, label: Any) -> Any:
        n = int(label[1:])
        if n % 2:  # a mapping may carry it too
            return {"correct": output == label, "outcome": output, "failure_kind": None,
                    "usage": {"tokens_in": 10 + n, "tokens_out": 1}}
        return ScoreResult(output == label, output, None,
                           usage=Usage(tokens_in=10 + n, tokens_out=1))

    scorer = hr_scorer(metered, "metered")
    # one run at a time: q0, q1, q2 spend 11 + 12 + 13 = 36 tokens (under 45), q3 brings
    # it to 50: the 16 runs left are never made
    capped = run({"arm": _answer}, tmp_path / "a", scorer=scorer,
                 budget=Budget(max_tokens=45, counts="judge"), concurrency=1)
    assert capped.runs["failure_kind"].eq("budget_stop").sum() == 16
    free = run({"arm": _answer}, tmp_path / "b", scorer=scorer,
               budget=Budget(max_tokens=45, counts="arm"), concurrency=1)
    assert free.runs["correct"].all()


def test_a_scorer_returning_no_usage_spends_nothing(tmp_path: Path) -> None:
    plain = hr_scorer(lambda item, output, label: ScoreResult(output == label, output, None),
                      name="plain")
    bench = run({"arm": _answer}, tmp_path, scorer=plain,
                budget=Budget(max_tokens=1, counts="judge"))
    assert bench.runs["correct"].all() and len(bench.runs) == 20
    assert bench.summary().loc[0, "judge_tokens_in"] == 0


def test_a_scorer_usage_that_is_no_usage_leaves_the_run_unscored_with_one_message(
    tmp_path: Path,
) -> None:
    bad = hr_scorer(lambda item, output, label: {"correct": True, "outcome": output,
                                                 "failure_kind": None,
                                                 "usage": {"tokens": 3}}, name="bad")
    with pytest.raises(ScorerError, match=r"scorer 'bad' returned usage=\{'tokens': 3\}: "
                                          r"check tokens \(the fields are tokens_in"):
        run({"arm": _answer}, tmp_path, items=ITEMS[:1], scorer=bad)
