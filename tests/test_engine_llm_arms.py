"""Declarative LLM arms in the engine: prompt from the payload, usage and cost, the cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hr_core.run.arms import LLMArm
from hr_core.run.session import BenchmarkSession, plan_benchmark

DOC = "The bridge opened in 1931. The bridge was designed by Helen Marsh."
ITEMS = [{"id": "q1", "document": DOC, "question": "Who designed the bridge?",
          "label": "Helen Marsh"},
         {"id": "q2", "document": DOC, "question": "What colour is the moon?",
          "label": "grey"}]


def test_an_llm_arm_answers_with_usage_and_the_runs_replay_from_the_cache(
    tmp_path: Path, openai_server: object,
) -> None:
    arm = {"model": "openai-compatible:tiny", "base_url": openai_server.url,  # type: ignore[attr-defined]
           "api_key_env": "HR_TEST_LLM_KEY", "price_in": 1.0, "price_out": 2.0,
           "prompt": "Context: {document}\nQuestion: {question}", "params": {"temperature": 0}}
    import os

    os.environ["HR_TEST_LLM_KEY"] = "sk-test"
    try:
        plan = plan_benchmark({"llm": arm}, ITEMS, runs=2, store=str(tmp_path))
        bench = BenchmarkSession(plan).run_sync()
        runs = bench.runs
        assert runs["output"].tolist()[:2] == ["Helen Marsh", "Helen Marsh"]
        assert runs["failure_kind"].tolist()[2:] == ["not_in_document"] * 2
        assert (runs["tokens_in"] > 0).all() and (runs["tokens_out"] > 0).all()
        expected = (runs["tokens_in"] * 1.0 + runs["tokens_out"] * 2.0) / 1e6
        assert (runs["cost_usd"] - expected.astype(float)).abs().max() < 1e-12
        assert (Path(bench.run_dir) / "responses.sqlite").is_file()  # the run's own cache
        calls = len(openai_server.requests)  # type: ignore[attr-defined]
        assert calls == 4  # the run index is part of the cache key
        # a resume of the same run (its journal lost, say) replays the cached replies
        (Path(bench.run_dir) / "journal.jsonl").unlink()
        BenchmarkSession(plan_benchmark({"llm": arm}, ITEMS, runs=2,
                                        store=str(tmp_path))).run_sync()
        assert len(openai_server.requests) == calls  # type: ignore[attr-defined]
        # before (issue 9): a fresh run was served from the store's cache (4 calls, not 8)
        again = plan_benchmark({"llm": arm}, ITEMS, runs=2, store=str(tmp_path), fresh=True)
        fresh = BenchmarkSession(again).run_sync()
        assert len(openai_server.requests) == 2 * calls  # type: ignore[attr-defined]
        assert fresh.manifest["response_cache"] == {
            "path": str(Path(fresh.run_dir) / "responses.sqlite"), "shared": False}
        # an explicit opt-in shares the store's cache between fresh runs
        for _ in range(2):
            shared = plan_benchmark({"llm": arm}, ITEMS, runs=2, store=str(tmp_path),
                                    fresh=True, shared_cache=True)
            bench = BenchmarkSession(shared).run_sync()
        assert len(openai_server.requests) == 3 * calls  # type: ignore[attr-defined]
        assert bench.manifest["response_cache"] == {
            "path": str(tmp_path / "responses.sqlite"), "shared": True}
    finally:
        del os.environ["HR_TEST_LLM_KEY"]


def test_an_llm_arm_given_as_a_model_object_is_recorded_without_secrets(tmp_path: Path) -> None:
    arm = LLMArm(model="mock:reader", prompt="Context: {document}\nQuestion: {question}",
                 api_key_env="SOME_KEY")
    plan = plan_benchmark({"mock": arm}, ITEMS, store=str(tmp_path))
    bench = BenchmarkSession(plan).run_sync()
    assert bench.runs["correct"].tolist() == [True, False]
    assert bench.manifest["arms"]["mock"]["api_key_env"] == "SOME_KEY"


def test_two_runs_in_one_process_leave_no_client_to_a_closed_event_loop(
    tmp_path: Path, openai_server: object, caplog: Any,
) -> None:
    """Each run_sync is its own event loop. The SDK client of the first was left open
    and garbage-collected in the second, whose loop then tried to close the first's
    connections: "Task exception was never retrieved ... Event loop is closed" on stderr
    (seen in bench_ratelimit and bench_real_model, 15 times in one bench run)."""
    import asyncio
    import gc
    import logging

    arm = {"model": "openai-compatible:tiny", "base_url": openai_server.url,  # type: ignore[attr-defined]
           "prompt": "Context: {document}\nQuestion: {question}"}
    caplog.set_level(logging.ERROR, logger="asyncio")
    held = []
    for _ in range(2):
        plan = plan_benchmark({"llm": arm}, ITEMS, store=str(tmp_path), fresh=True)
        bench = BenchmarkSession(plan).run_sync()
        assert bench.runs["output"].tolist() == ["Helen Marsh", "NOT_IN_DOCUMENT"]
        held.append(plan)

    async def collect_in_another_loop() -> None:
        held.clear()  # the runs' models (and their SDK clients) go here, in a running loop
        gc.collect()
        await asyncio.sleep(0.1)

    asyncio.run(collect_in_another_loop())
    problems = [r.getMessage() for r in caplog.records if r.name == "asyncio"]
    assert problems == []
