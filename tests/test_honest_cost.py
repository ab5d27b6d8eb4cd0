"""Honest cost and cache: what a run spent beside what its outputs cost; the cache key
holds the endpoint and every request parameter. Real servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from openai_server import FakeOpenAIServer

from hr_core.models.cache import CachedModel, ResponseCache
from hr_core.models.providers.openai import OpenAIChatModel
from hr_core.run.session import BenchmarkSession, plan_benchmark

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


def _usage_without_reply(body: dict[str, object]) -> dict[str, object]:
    """200 with usage but no choices: a failed attempt that still cost tokens."""
    return {"id": "x", "object": "chat.completion",
            "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}}


def test_tokens_of_failed_attempts_are_counted(openai_server: FakeOpenAIServer,
                                               tmp_path: Path) -> None:
    from openai_server import mock_reply

    from hr_core.models.base import ModelCallError

    model = OpenAIChatModel("m", provider="openai-compatible", base_url=openai_server.url,
                            max_retries=1, backoff_base_s=0.001, backoff_max_s=0.002,
                            prices={"input": 1.0, "output": 1.0})
    calls: list[int] = []

    def once_broken(body: dict[str, object]) -> object:
        calls.append(1)
        return _usage_without_reply(body) if len(calls) == 1 else mock_reply(body)

    openai_server.reply = once_broken
    reply = asyncio.run(model.complete(MSGS))
    words = len(MSGS[0]["content"].split())  # the server counts words as tokens
    assert reply.text == "Paris" and reply.usage.tokens_in == 11 + words  # before: words
    assert reply.usage.tokens_out == 5 + 1
    openai_server.reply = _usage_without_reply
    with pytest.raises(ModelCallError) as info:
        asyncio.run(model.complete(MSGS))
    assert info.value.usage is not None and info.value.usage.tokens_in == 22
    # in a benchmark: the error run carries them and the budget counts them
    arm = {"model": {"model": "openai-compatible:m", "base_url": openai_server.url,
                     "retry": {"max_retries": 1, "backoff_base_s": 0.001, "backoff_max_s": 0.002},
                     "prices": {"input": 1.0, "output": 1.0}}, "prompt": "{question}"}
    bench = BenchmarkSession(plan_benchmark({"llm": arm}, ITEMS[:1],
                                            store=str(tmp_path))).run_sync()
    run = bench.runs.iloc[0]
    assert run["failure_kind"] == "error" and run["tokens_in"] == 22  # both attempts
    assert run["cost_usd"] == pytest.approx((11 + 5) * 2 / 1e6)  # before: nothing counted
