"""Honest cost and cache: what a run spent beside what its outputs cost; the cache key
holds the endpoint and every request parameter. Real servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from openai_server import FakeOpenAIServer

from hr_core.engine.session import BenchmarkSession, plan_benchmark
from hr_core.models.cache import CachedModel, ResponseCache
from hr_core.models.openai_client import OpenAIChatModel

MSGS = [{"role": "user", "content": "Document: Paris is the capital of France.\n"
         "Question: What is the capital of France?"}]
ITEMS = [{"id": f"q{i}", "document": "Paris is the capital of France.",
          "question": "What is the capital of France?", "label": "Paris"} for i in range(3)]


def test_the_cache_key_holds_the_endpoint_from_openai_base_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # before: the key took base_url only, None for openai:, so a cache filled against
    # one OPENAI_BASE_URL answered for another endpoint without calling it
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    cache = ResponseCache(tmp_path / "c.sqlite")
    with FakeOpenAIServer() as first, FakeOpenAIServer() as second:
        for server in (first, second):
            monkeypatch.setenv("OPENAI_BASE_URL", server.url)
            model = CachedModel(OpenAIChatModel("gpt-4o-mini"), cache)
            assert asyncio.run(model.complete(MSGS)).cached is False
        assert len(first.requests) == len(second.requests) == 1


def test_the_cache_key_holds_every_request_parameter_and_the_schema_mode(
    openai_server: FakeOpenAIServer, tmp_path: Path,
) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    schema = {"type": "object", "properties": {"verdict": {"type": "string"}}}

    def model(**kwargs: object) -> CachedModel:
        inner = OpenAIChatModel("m", provider="openai-compatible", base_url=openai_server.url,
                                **kwargs)  # type: ignore[arg-type]
        return CachedModel(inner, cache)

    variants = [model(), model(params={"temperature": 0.5}), model(params={"seed": 1}),
                model(structured_output="instructions")]
    for variant in variants:
        assert not asyncio.run(variant.complete(MSGS, schema=schema)).cached
    assert asyncio.run(variants[1].complete(MSGS, schema=schema)).cached
    assert len(openai_server.requests) == 4


def test_the_summary_says_what_was_spent_beside_what_the_outputs_cost(
    openai_server: FakeOpenAIServer, tmp_path: Path,
) -> None:
    arm = {"model": "openai-compatible:tiny", "base_url": openai_server.url,
           "price_in": 1.0, "price_out": 2.0, "prompt": "Context: {document}\nQ: {question}"}
    plan = plan_benchmark({"llm": arm}, ITEMS, store=str(tmp_path))
    bench = BenchmarkSession(plan).run_sync()
    first = bench.summary().set_index("arm").loc["llm"]
    assert first["cost_usd"] > 0 and first["spent_usd"] == pytest.approx(first["cost_usd"])
    assert not bench.runs["replayed"].any()
    calls = len(openai_server.requests)
    # the journal lost: a resume replays every reply from the run's response cache
    # (before: the summary counted the replayed replies' cost as spent again)
    (Path(bench.run_dir) / "journal.jsonl").unlink()
    again = BenchmarkSession(plan_benchmark({"llm": arm}, ITEMS, store=str(tmp_path))).run_sync()
    assert len(openai_server.requests) == calls
    summary = again.summary().set_index("arm").loc["llm"]
    assert summary["cost_usd"] == pytest.approx(first["cost_usd"])
    assert summary["spent_usd"] == 0
    assert again.runs["replayed"].all()
