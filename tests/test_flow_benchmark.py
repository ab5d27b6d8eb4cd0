"""The hr-benchmark flow: one task per chunk, artifacts, sync/async calls, resume, specs."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from deploy_support import run_artifacts, run_task_runs
from prefect.client.orchestration import get_client

from flows import benchmark_flow, hr_benchmark, hr_benchmark_async
from hr_core import Benchmark, Budget, HrError, HrTypeError
from hr_core.analysis.benchmark import RUN_COLUMNS, SUMMARY_COLUMNS
from hr_core.analysis.health import ErrorRateExceeded
from hr_core.core.errors import SpecError

ITEMS = [{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}"} for i in range(30)]


async def good(payload: dict[str, Any]) -> str:
    return "a" + payload["question"][1:]


def half(payload: dict[str, Any]) -> str:
    n = int(payload["question"][1:])
    if n % 10 == 9:
        raise ValueError(f"no answer for {n}")
    return f"a{n}" if n % 2 else "wrong"


async def _flow_run(flow_run_id: str, n_tasks: int) -> tuple[str, list[str], list[dict[str, Any]]]:
    """The flow run's state, task names and artifacts (task runs arrive as events: poll)."""
    async with get_client() as client:
        for _ in range(50):
            run = await client.read_flow_run(flow_run_id)
            names = [t.name for t in await run_task_runs(client, run.id)]
            if len(names) >= n_tasks:
                break
            await asyncio.sleep(0.1)
        artifacts = await run_artifacts(client, run.id)
    mine = [{"key": a.key, "type": a.type} for a in artifacts]
    return run.state_name or "", names, mine


def test_a_benchmark_runs_as_a_flow_with_a_task_per_chunk_and_artifacts(
    prefect_harness: None, tmp_path: Path,
) -> None:
    seen: list[tuple[str, int, int, int, int]] = []
    bench = hr_benchmark({"good": good, "half": half}, ITEMS, runs=2, store=str(tmp_path),
                         name="Flow Demo", chunk_size=25, concurrency=4,
                         on_progress=lambda *row: seen.append(row))
    assert isinstance(bench, Benchmark)
    assert tuple(bench.runs.columns) == RUN_COLUMNS
    assert tuple(bench.summary().columns) == SUMMARY_COLUMNS
    summary = bench.summary().set_index("arm")
    assert summary.loc["good", "accuracy"] == 1.0
    assert summary.loc["half", "error"] == 6 and summary.loc["half", "wrong"] == 30
    state, tasks, artifacts = asyncio.run(_flow_run(bench.manifest["flow_run_id"], 7))
    assert state == "Completed"
    chunk_tasks = [t for t in tasks if "-chunk-" in t]
    assert len(chunk_tasks) == 2 * 3  # 60 runs per arm in chunks of 25
    assert len(tasks) == len(chunk_tasks) + 1  # write (also publishes the report)
    assert {(a["key"], a["type"]) for a in artifacts} >= {
        ("flow-demo-progress", "progress"), ("flow-demo-summary", "table"),
        ("flow-demo-report", "markdown")}
    assert seen[-2:] == [("good", 60, 60, 0, 0), ("half", 60, 60, 30, 6)]  # 30 wrong, 6 errors


def test_a_second_call_calls_no_arm_and_returns_equal_results(
    prefect_harness: None, tmp_path: Path,
) -> None:
    calls = 0

    def counted(payload: dict[str, Any]) -> str:
        nonlocal calls
        calls += 1
        return "a1"

    first = hr_benchmark({"c": counted}, ITEMS, store=str(tmp_path), budget=Budget(max_calls=20))
    second = hr_benchmark({"c": counted}, ITEMS, store=str(tmp_path), budget=Budget(max_calls=20))
    assert calls == 20
    assert first.summary().loc[0, "coverage"] == pytest.approx(20 / 30)
    report = (Path(first.run_dir or "") / "report.md").read_text(encoding="utf-8")
    assert "> **Warning:** arm 'c': 10 of 30 planned runs were not made" in report
    pd.testing.assert_frame_equal(first.runs, second.runs)
    assert first.run_id == second.run_id
    assert second.manifest["flow_run_id"] != first.manifest["flow_run_id"]
    third = hr_benchmark({"c": counted}, ITEMS, store=str(tmp_path), budget={"max_calls": 100})
    assert calls == 30 and third.summary().loc[0, "budget_stop"] == 0
    assert third.summary().loc[0, "coverage"] == 1.0 and third.coverage_warnings() == []


def test_inside_a_running_event_loop_it_still_returns_the_benchmark(
    prefect_harness: None, tmp_path: Path,
) -> None:
    # before: inside a running loop (a Jupyter cell) hr_benchmark returned a coroutine
    threads: set[str] = set()

    def named(payload: dict[str, Any]) -> str:
        threads.add(threading.current_thread().name)
        return "a" + payload["question"][1:]

    async def cell() -> Any:
        return hr_benchmark({"good": named}, ITEMS[:3], store=str(tmp_path))

    bench = asyncio.run(cell())
    assert isinstance(bench, Benchmark) and bench.runs["correct"].all()
    pd.testing.assert_frame_equal(Benchmark.load(bench.run_dir).runs, bench.runs)
    again = asyncio.run(cell())  # the same run again: resumed, no arm called, same rows
    assert isinstance(again, Benchmark) and again.run_id == bench.run_id
    assert threads and threading.current_thread().name not in threads


def test_inside_a_running_event_loop_its_errors_reach_the_caller(
    prefect_harness: None, tmp_path: Path,
) -> None:
    def broken(payload: dict[str, Any]) -> str:
        raise ValueError("down")

    async def cell() -> Any:
        with pytest.raises(HrTypeError, match="needs a reference set"):
            hr_benchmark({"good": good})  # checked in the caller's thread
        return hr_benchmark({"broken": broken}, ITEMS[:4], store=str(tmp_path))

    with pytest.raises(ErrorRateExceeded, match="broken") as raised:
        asyncio.run(cell())
    assert raised.value.benchmark.runs["error"].eq("ValueError: down").all()


def test_ctrl_c_in_a_running_event_loop_stops_the_benchmark_and_it_resumes(
    prefect_harness: None, tmp_path: Path,
) -> None:
    calls: list[str] = []

    def interrupted(payload: dict[str, Any]) -> str:
        calls.append(payload["question"])
        if len(calls) == 2:  # the user presses Ctrl-C while the cell waits
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(60)  # abandoned (a daemon thread) once the benchmark stops
        return "a" + payload["question"][1:]

    async def cell() -> Any:
        return hr_benchmark({"arm": interrupted}, ITEMS, store=str(tmp_path), concurrency=1,
                            timeout_s=120)

    loop = asyncio.new_event_loop()  # as Jupyter's: no SIGINT handler of asyncio.run's
    # Jupyter's kernel has Python's own SIGINT handler; an earlier test of this process (an
    # in-process `hr` command) may have left another one installed
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(cell())
    finally:
        loop.close()
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - started < 50 and len(calls) == 2
    time.sleep(0.5)
    assert len(calls) == 2  # no call started after the interrupt
    bench = hr_benchmark({"arm": interrupted}, ITEMS, store=str(tmp_path), concurrency=1,
                         timeout_s=120)  # the run folder is not left locked: it resumes
    assert len(bench.runs) == 30 and bench.runs["correct"].all()


def test_hr_benchmark_async_returns_a_coroutine_to_await(
    prefect_harness: None, tmp_path: Path,
) -> None:
    async def main() -> Benchmark:
        with pytest.raises(HrTypeError, match="needs a reference set"):
            hr_benchmark_async({"good": good})  # bad arguments raise at the call
        pending = hr_benchmark_async({"good": good}, ITEMS[:3], store=str(tmp_path))
        assert asyncio.iscoroutine(pending)
        return await pending

    bench = asyncio.run(main())
    assert isinstance(bench, Benchmark) and bench.runs["correct"].all()
    loaded = Benchmark.load(bench.run_dir)
    pd.testing.assert_frame_equal(loaded.runs, bench.runs)
    outside = hr_benchmark({"good": good}, ITEMS[:3], store=str(tmp_path))  # no loop here
    assert isinstance(outside, Benchmark) and outside.run_id == bench.run_id


def test_a_yaml_spec_path_runs_with_its_settings(prefect_harness: None, tmp_path: Path) -> None:
    (tmp_path / "ref.jsonl").write_text(
        "\n".join(f'{{"id": "q{i}", "question": "Q{i}", "label": "a{i}"}}' for i in range(5)))
    spec = tmp_path / "demo.yaml"
    spec.write_text(
        "name: yaml-demo\nreference: ref.jsonl\n"
        "arms:\n  good: test_flow_benchmark:good\n"
        f"runs: 2\nstore: {tmp_path / 'results'}\n"
    )
    bench = hr_benchmark(spec)
    assert bench.manifest["name"] == "yaml-demo" and len(bench.runs) == 10
    assert bench.manifest["arms"]["good"] == {  # the imported code counts, not only its path
        "kind": "import", "path": "test_flow_benchmark:good",
        "source_sha256": bench.manifest["arms"]["good"]["source_sha256"]}
    assert Path(bench.run_dir).parent == tmp_path / "results" / "yaml-demo"
    # a deployment runs the flow itself with the spec's path: same run, nothing to redo
    again = asyncio.run(benchmark_flow(spec=str(spec)))
    assert again.run_id == bench.run_id
    pd.testing.assert_frame_equal(again.runs, bench.runs)


BENCHMARK_MISTAKES = {
    "no reference set": ({}, HrTypeError, "needs a reference set"),
    "store that is not a path": ({"store": 3}, HrTypeError, "store must be a folder path"),
    "judge store that is not a path": ({"judge_store": 3}, HrTypeError, "judge_store"),
    "progress callback that is not a function": ({"on_progress": "bars"}, HrTypeError,
                                                 "on_progress must be a function"),
    "task runner by name": ({"task_runner": "dask"}, HrTypeError, "make_task_runner"),
    "budget of another shape": ({"budget": 5}, HrTypeError, "budget must be a Budget"),
    "budget with an unknown field": ({"budget": {"max_call": 5}}, SpecError, "max_call"),
    "negative budget": ({"budget": {"max_calls": -1}}, SpecError, "max_calls"),
    "runs below one": ({"runs": 0}, SpecError, "runs must be a positive integer"),
    "chunk size below one": ({"chunk_size": -5}, SpecError, "chunk_size"),
    "unknown judge policy": ({"require_valid_judge": "maybe"}, SpecError, "require_valid_judge"),
    "arms as a list": ({"arms": [good]}, SpecError, "arms must be a non-empty mapping"),
}


@pytest.mark.parametrize("case", list(BENCHMARK_MISTAKES))
def test_a_mistake_in_hr_benchmark_arguments_is_an_hr_error_before_prefect_starts(
    case: str, tmp_path: Path,
) -> None:
    changes, error, message = BENCHMARK_MISTAKES[case]
    kwargs: dict[str, Any] = {"arms": {"good": good}, "store": str(tmp_path), **changes}
    if case != "no reference set":
        kwargs["reference"] = ITEMS
    with pytest.raises(error, match=message) as raised:
        hr_benchmark(**kwargs)
    assert isinstance(raised.value, HrError)
    assert not any(tmp_path.iterdir())


def squad_reader(payload: dict[str, Any]) -> str:
    return {"Q0": "the a0", "Q1": "a1 and more", "Q2": "nothing"}.get(payload["question"], "x")


def test_a_yaml_spec_with_f1_and_per_arm_runs_runs_as_a_flow(
        prefect_harness: None, tmp_path: Path) -> None:
    (tmp_path / "ref.jsonl").write_text(
        "\n".join(f'{{"id": "q{i}", "question": "Q{i}", "label": "a{i}"}}' for i in range(3)))
    spec = tmp_path / "f1.yaml"
    spec.write_text(
        "name: f1-demo\nreference: ref.jsonl\nscorer: {f1: {threshold: 0.6}}\nruns: 3\n"
        "arms:\n  reader: {arm: 'test_flow_benchmark:squad_reader', runs: 1}\n"
        "  good: test_flow_benchmark:good\n"
        f"store: {tmp_path / 'results'}\n"
    )
    bench = hr_benchmark(spec)
    assert bench.runs.groupby("arm").size().to_dict() == {"good": 9, "reader": 3}
    reader = bench.runs[bench.runs["arm"] == "reader"].set_index("item_id")
    assert reader["score"].tolist() == pytest.approx([1.0, 0.5, 0.0])
    assert reader["correct"].tolist() == [True, False, False]
    summary = bench.summary().set_index("arm")
    assert summary.loc["reader", "score_mean"] == pytest.approx(0.5)
    assert summary.loc["good", "score_mean"] == 1.0
    assert bench.manifest["scorer"] == "f1" and bench.manifest["arm_runs"] == {
        "reader": 1, "good": 3}
