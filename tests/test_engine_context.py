"""The run context: arm code reads its arm, item id and run index with current_run()."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from hr_core import current_run
from hr_core.run.context import RunContext, run_context
from hr_core.run.session import BenchmarkSession, plan_benchmark

ITEMS = [{"id": f"q{i}", "question": f"Q{i}", "label": "x"} for i in range(6)]


def _describe() -> str:
    run = current_run()
    assert run is not None
    return f"{run.arm}|{run.item_id}|{run.run}"


async def async_arm(payload: dict[str, Any]) -> str:
    await asyncio.sleep(0)
    return _describe()


def sync_arm(payload: dict[str, Any]) -> str:
    assert threading.current_thread() is not threading.main_thread()
    return _describe()


def sync_arm_returning_a_coroutine(payload: dict[str, Any]) -> Any:
    return async_arm(payload)


@pytest.mark.parametrize("arm", [async_arm, sync_arm, sync_arm_returning_a_coroutine])
def test_every_kind_of_arm_sees_its_arm_item_and_run(arm: Any, tmp_path: Path) -> None:
    plan = plan_benchmark({"mine": arm}, ITEMS, runs=3, store=str(tmp_path), concurrency=4)
    runs = BenchmarkSession(plan).run_sync().runs
    expected = [f"mine|{item_id}|{run}" for item_id, run in
                zip(runs["item_id"], runs["run"], strict=True)]
    assert runs["output"].tolist() == expected
    assert len(set(expected)) == 18
    assert current_run() is None


def test_outside_an_arm_call_there_is_no_run() -> None:
    assert current_run() is None


def test_run_context_sets_the_run_for_arm_code_and_restores_it() -> None:
    with run_context("a", "q1", 2) as outer:
        assert outer == RunContext(arm="a", item_id="q1", run=2) == current_run()
        with run_context("a", "q1", 3):
            assert current_run() == RunContext("a", "q1", 3)
        assert current_run() == outer
    assert current_run() is None
