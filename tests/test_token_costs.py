"""Cost that counts every kind of token, and prompt caching: real servers on 127.0.0.1
speaking OpenAI's and Anthropic's wire formats report cached, cache-written and
reasoning tokens; hr prices each kind, keeps them as columns and shows cost by kind."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from anthropic_server import FakeAnthropicServer
from openai_server import FakeOpenAIServer

from hr_core.analysis.benchmark import RUN_COLUMNS, Benchmark
from hr_core.analysis.diff import diff_runs
from hr_core.judge.config import hr_judge_config
from hr_core.judge.judging import judge_item
from hr_core.models.providers.anthropic import AnthropicChatModel
from hr_core.models.providers.openai import (
    DEFAULT_PRICES,
    PRICES_AS_OF,
    OpenAIChatModel,
    price_for,
)
from hr_core.models.spec import ModelSpec
from hr_core.report.markdown import report_markdown
from hr_core.run.arms import normalise_arms
from hr_core.run.session import BenchmarkSession, plan_benchmark
from hr_core.store.record import RunRecord, decode, encode

MSGS = [{"role": "user", "content": "What is the capital of France?"}]
ITEMS = [{"id": f"q{i}", "document": "Paris is the capital of France.",
          "question": "What is the capital of France?", "label": "Paris"} for i in range(3)]
CACHE_CONTROL = {"type": "ephemeral"}


def _completion(body: dict[str, Any]) -> dict[str, Any]:
    """OpenAI's chat completion with a cached prompt and a reasoning model's usage."""
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": int(time.time()),
        "model": body["model"],
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "Paris"}}],
        "usage": {"prompt_tokens": 2000, "completion_tokens": 500, "total_tokens": 2500,
                  "prompt_tokens_details": {"cached_tokens": 1536, "audio_tokens": 0},
                  "completion_tokens_details": {"reasoning_tokens": 320,
                                                "audio_tokens": 0}},
    }


def _ask(model: Any, messages: Any = MSGS) -> Any:
    async def call() -> Any:
        try:
            return await model.complete(messages)
        finally:
            await model.aclose()

    return asyncio.run(call())


def test_openai_cached_tokens_at_the_cached_rate_and_reasoning_inside_output(
        openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = _completion
    model = OpenAIChatModel("gpt-4o-mini", base_url=openai_server.url, api_key="sk-test")
    usage = _ask(model).usage
    assert (usage.tokens_in, usage.tokens_cache_read, usage.tokens_cache_write) == (2000, 1536,
                                                                                   None)
    assert (usage.tokens_out, usage.tokens_reasoning) == (500, 320)  # a part, not added
    # hr's default price of gpt-4o-mini: 0.15 in, 0.075 cached, 0.60 out per million
    assert usage.cost_input_usd == pytest.approx(464 * 0.15 / 1e6)
    assert usage.cost_cache_read_usd == pytest.approx(1536 * 0.075 / 1e6)
    assert usage.cost_output_usd == pytest.approx(500 * 0.6 / 1e6)
    assert usage.cost_usd == pytest.approx((464 * 0.15 + 1536 * 0.075 + 500 * 0.6) / 1e6)
    # a user's own table wins over hr's defaults
    own = OpenAIChatModel("gpt-4o-mini", base_url=openai_server.url, api_key="sk-test",
                          prices={"input": 1.0, "output": 4.0, "cached_input": 0.25})
    assert _ask(own).usage.cost_usd == pytest.approx((464 * 1.0 + 1536 * 0.25 + 500 * 4.0) / 1e6)
    # an openai-compatible server bills its own way: no default price
    local = OpenAIChatModel("gpt-4o-mini", provider="openai-compatible",
                            base_url=openai_server.url)
    assert _ask(local).usage.cost_usd is None


def test_the_default_prices_are_dated_and_batch_is_half() -> None:
    assert PRICES_AS_OF[:4].isdigit() and len(DEFAULT_PRICES) >= 10
    haiku = price_for(None, "anthropic", "claude-haiku-4-5")
    assert haiku is not None and haiku.cache_write_per_million == pytest.approx(1.25)
    batch = haiku.batch()
    assert (batch.input_per_million, batch.output_per_million) == (0.5, 2.5)
    assert price_for(None, "azure-openai", "gpt-4o") is None  # a deployment: its own bill


def test_anthropic_cache_control_on_the_system_prompt_and_the_marked_document(
        anthropic_server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    arm = {"model": {"provider": "anthropic", "model": "claude-x",
                     "base_url": anthropic_server.url},
           "system": "Answer from the document.", "cached_prefix": "Document: {document}",
           "prompt": "Question: {question}"}
    llm = normalise_arms({"qa": arm})["qa"]
    assert _ask(llm.model(), llm.llm.messages(ITEMS[0])).text  # the server accepts it
    body = anthropic_server.requests[0].body
    assert body["system"] == [{"type": "text", "text": "Answer from the document.",
                               "cache_control": CACHE_CONTROL}]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "cache_control": CACHE_CONTROL,
                                      "text": "Document: Paris is the capital of France."}]},
        {"role": "user", "content": "Question: What is the capital of France?"}]
    off = normalise_arms({"qa": {**arm, "cache": "off"}})["qa"]
    _ask(off.model(), off.llm.messages(ITEMS[0]))
    plain = anthropic_server.requests[1].body
    assert plain["system"] == "Answer from the document."
    assert "cache_control" not in json.dumps(plain)
    assert [m["content"] for m in plain["messages"]] == [
        "Document: Paris is the capital of France.", "Question: What is the capital of France?"]


def test_openai_gets_the_prompt_as_written_without_hr_s_prefix_mark(
        openai_server: FakeOpenAIServer) -> None:
    arm = {"model": "openai-compatible:m", "base_url": openai_server.url,
           "cached_prefix": "Document: {document}", "prompt": "Question: {question}"}
    llm = normalise_arms({"qa": arm})["qa"]
    _ask(llm.model(), llm.llm.messages(ITEMS[0]))
    assert openai_server.requests[0].body["messages"] == [
        {"role": "user", "content": "Document: Paris is the capital of France."},
        {"role": "user", "content": "Question: What is the capital of France?"}]


def test_a_judge_s_instructions_and_rubric_are_cached(
        anthropic_server: FakeAnthropicServer) -> None:
    config = hr_judge_config(ModelSpec.of("anthropic:claude-x"), "Same answer?", mode="grade",
                             orders=1)
    model = AnthropicChatModel("claude-x", base_url=anthropic_server.url, api_key="k")

    async def judge() -> Any:
        try:
            return await judge_item(config, model, item="Capital?", candidates=["Paris"],
                                    reference="Paris")
        finally:
            await model.aclose()

    asyncio.run(judge())
    system = anthropic_server.requests[0].body["system"]
    assert system[0]["cache_control"] == CACHE_CONTROL and "Same answer?" in system[0]["text"]


# fingerprints made by hr before `cache` existed (commit b9d3cb8): still the same
ARM_SPEC_BEFORE = "646cfc0419a184e457fe70951601d0ec94225faeca664c6457beb2caf0e82e4a"
JUDGE_HASH_BEFORE = "c987d168a64cc2c4f452d9622f66145e1eb70549e065058ab164f65e5038762f"


def test_cache_changes_neither_an_arm_s_fingerprint_nor_a_judge_s_hash() -> None:
    from hr_core.core.identity import fingerprint

    model = {"provider": "anthropic", "model": "claude-x",
             "prices": {"input": 3.0, "output": 15.0, "cached_input": 0.3}}
    arm = {"model": model, "system": "S", "prompt": "{question}"}
    arms = (arm, {**arm, "cache": "off"}, {**arm, "model": {**model, "cache": "off"}},
            {**arm, "cache": False})  # YAML reads a bare `off` as false
    specs = [normalise_arms({"a": a})["a"].spec for a in arms]
    assert specs[0] == specs[1] == specs[2] == specs[3]
    assert normalise_arms({"a": arms[3]})["a"].llm.model_spec().cache == "off"
    assert fingerprint(specs[0]) == ARM_SPEC_BEFORE
    hashes = {hr_judge_config(m, "Same answer?", mode="grade").hash for m in (
        "anthropic:claude-x", ModelSpec.of({"model": "anthropic:claude-x", "cache": "off"}))}
    assert hashes == {JUDGE_HASH_BEFORE}


def test_a_benchmark_keeps_tokens_and_cost_by_kind(
        anthropic_server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    anthropic_server.cache_tokens = (1000, 3000)
    arm = {"model": "anthropic:claude-x", "base_url": anthropic_server.url,
           "price_in": 1.0, "price_out": 2.0, "system": "Answer from the document.",
           "prompt": "Context: {document}\nQ: {question}"}
    bench = BenchmarkSession(plan_benchmark({"claude": arm}, ITEMS, store=str(tmp_path))
                             ).run_sync()
    runs = Benchmark.load(bench.run_dir).runs
    assert runs["tokens_cache_write"].tolist() == [1000] * 3
    assert runs["tokens_cache_read"].tolist() == [3000] * 3
    assert runs["tokens_reasoning"].isna().all()  # Anthropic reports no share of thinking
    assert runs["cost_cache_write_usd"].tolist() == pytest.approx([1000 * 1.25 / 1e6] * 3)
    assert runs["cost_cache_read_usd"].tolist() == pytest.approx([3000 * 0.1 / 1e6] * 3)
    parts = runs[["cost_input_usd", "cost_cache_read_usd", "cost_cache_write_usd",
                  "cost_output_usd"]].sum(axis=1)
    assert parts.tolist() == pytest.approx(runs["cost_usd"].tolist())
    row = Benchmark.load(bench.run_dir).summary().set_index("arm").loc["claude"]
    assert row["tokens_cache_write"] == 3000 and row["tokens_cache_read"] == 9000
    assert row["cost_cache_write_usd"] == pytest.approx(3 * 1000 * 1.25 / 1e6)
    report = report_markdown(Benchmark.load(bench.run_dir))
    assert "cost by kind" in report and "cache write $0.0037" in report
    # an older run's journal (no usage by kind) still reads; its table has no such column
    line = json.loads(encode(RunRecord(arm="a", item_id="q1", run=1, tokens_in=5)))
    assert not set(line) & {"tokens_cache_read", "cost_output_usd"}
    assert decode(json.dumps(line).encode(), "journal.jsonl", 1).tokens_cache_read is None
    diff = diff_runs(Benchmark.load(bench.run_dir), Benchmark.load(bench.run_dir))
    kinds = diff.arms[0].cost_kinds_b
    assert kinds is not None
    assert kinds["cost_cache_write_usd"] == pytest.approx(3 * 1000 * 1.25 / 1e6)
    # what a user sees: hr diff's line, the terminal summary's caption, report.html's table
    from rich.console import Console

    from hr_cli.diff import print_diff
    from hr_cli.tables import summary_table

    console = Console(record=True, width=300)
    print_diff(console, diff)
    console.print(summary_table(Benchmark.load(bench.run_dir).summary()))
    shown = console.export_text()
    assert "cost by kind: input $" in shown
    assert "cache write $0.0037 · output $0.0000 → input $" in shown
    assert "claude: input $" in shown and "3,000 cache write" in shown
    assert 'id="table-cost-kinds"' in (Path(bench.run_dir) / "report.html").read_text("utf-8")


def test_a_benchmark_of_plain_arms_has_no_column_of_kinds(tmp_path: Path) -> None:
    def paris(payload: dict[str, Any]) -> str:
        return "Paris"

    bench = BenchmarkSession(plan_benchmark({"paris": paris}, ITEMS, store=str(tmp_path))
                             ).run_sync()
    assert list(Benchmark.load(bench.run_dir).runs.columns) == list(RUN_COLUMNS)
    assert "cost_output_usd" not in bench.summary().columns


def test_hr_plan_shows_the_expected_cost_live_and_in_batch(
        anthropic_server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    import re

    from rich.console import Console

    from hr_cli.plan import plan_run

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    arm = {"model": "anthropic:claude-x", "base_url": anthropic_server.url,
           "price_in": 1.0, "price_out": 2.0, "prompt": "Context: {document}\nQ: {question}"}

    def two_right(payload: dict[str, Any]) -> str:
        return "Paris" if payload["id"] != "q2" else "Lyon"

    bench = BenchmarkSession(plan_benchmark({"claude": arm, "rule": two_right}, ITEMS,
                                            store=str(tmp_path))).run_sync()
    console = Console(record=True, width=250)
    plan_run(console, bench.run_dir, difference=0.05, power=0.8, level=0.95)
    out = console.export_text()
    assert "expected cost (live / batch)" in out
    figures = re.search(r"│\s*([\d,]+)\s*│\s*\$([\d,.]+) / \$([\d,.]+)", out)
    assert figures is not None, out
    needed, live, batch = (float(v.replace(",", "")) for v in figures.groups())
    per_item = bench.summary().set_index("arm").loc["claude", "cost_usd"] / 3
    assert live == pytest.approx(needed * per_item, abs=1e-4)
    assert batch == pytest.approx(live / 2, abs=1e-4)


def test_a_judge_scorer_s_or_judge_file_s_cache_keeps_its_hash(tmp_path: Path) -> None:
    from hr_cli.judges import load_judge
    from hr_core.run.spec import JudgeScorerSpec

    plain = JudgeScorerSpec(model="anthropic:claude-x", rubric="Same answer?")
    off = JudgeScorerSpec(model="anthropic:claude-x", rubric="Same answer?", cache="off")
    spec = off.model_spec()
    assert isinstance(spec, ModelSpec) and spec.cache == "off"
    assert (hr_judge_config(spec, "Same answer?", mode="grade").hash
            == hr_judge_config(plain.model_spec(), "Same answer?", mode="grade").hash
            == JUDGE_HASH_BEFORE)
    path = tmp_path / "judge.yaml"
    path.write_text("model: anthropic:claude-x\nmode: grade\nrubric: Same answer?\ncache: off\n")
    config = load_judge(path)
    assert config.model_spec.cache == "off" and config.hash == JUDGE_HASH_BEFORE
