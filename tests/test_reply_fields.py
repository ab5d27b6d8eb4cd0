"""Reply fields honoured: finish_reason, refusal and null content, against a real server.

The server (tests/openai_server.py) answers in OpenAI's wire format with the
choice each item's question asks for, so one benchmark meets every case:
``finish_reason: length`` (kept, scored, marked ``truncated``),
``content_filter`` and a ``refusal`` field (``refusal``), ``content: null``
(``parse_failure`` naming why). A server that rejects a JSON schema is a loud
error, never a silent prompt change.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from openai_server import FakeOpenAIServer

from hr_core.judge.config import hr_judge_config
from hr_core.judge.judging import judge_item
from hr_core.models.base import StructuredOutputRejectedError
from hr_core.models.cache import CachedModel, ResponseCache
from hr_core.models.providers.openai import OpenAIChatModel
from hr_core.run.session import BenchmarkSession, plan_benchmark

CHOICES: dict[str, dict[str, Any]] = {
    "stop": {"finish_reason": "stop", "message": {"role": "assistant", "content": "Paris"}},
    "length": {"finish_reason": "length",
               "message": {"role": "assistant", "content": "Paris"}},
    "cut": {"finish_reason": "length", "message": {"role": "assistant", "content": "Lyo"}},
    "filter": {"finish_reason": "content_filter",
               "message": {"role": "assistant", "content": None}},
    "refusal": {"finish_reason": "stop",
                "message": {"role": "assistant", "content": None,
                            "refusal": "I can't help with that."}},
    "null": {"finish_reason": "stop", "message": {"role": "assistant", "content": None}},
}


def reply(body: dict[str, Any]) -> dict[str, Any]:
    """The completion whose choice the last message names (``case: NAME``)."""
    case = str(body["messages"][-1]["content"]).rsplit("case: ", 1)[-1].strip()
    return {"id": "chatcmpl-x", "object": "chat.completion", "created": int(time.time()),
            "model": body["model"], "choices": [{"index": 0, **CHOICES[case]}],
            "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}}


def _model(server: FakeOpenAIServer, **kwargs: Any) -> OpenAIChatModel:
    return OpenAIChatModel("m", provider="openai-compatible", base_url=server.url, **kwargs)


def test_the_reply_keeps_finish_reason_and_refusal(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = reply
    model = _model(openai_server)

    async def ask(case: str) -> Any:
        return await model.complete([{"role": "user", "content": f"case: {case}"}])

    got = {case: asyncio.run(ask(case)) for case in CHOICES}
    assert got["stop"].failure() is None and not got["stop"].truncated
    assert got["length"].truncated and got["length"].text == "Paris"
    assert got["length"].failure() is None  # kept and scored
    assert got["filter"].failure() == (
        "refusal", "the provider's content filter stopped the reply "
        "(finish_reason 'content_filter')")
    assert got["refusal"].failure() == ("refusal", "the model refused: I can't help with that.")
    assert got["null"].failure() == (
        "parse_failure", "the model's reply had no content (content null, finish_reason 'stop')")


def test_the_cache_replays_the_reply_fields(openai_server: FakeOpenAIServer,
                                            tmp_path: Path) -> None:
    openai_server.reply = reply
    cached = CachedModel(_model(openai_server), ResponseCache(tmp_path / "c.sqlite"))

    async def ask(case: str) -> Any:
        return await cached.complete([{"role": "user", "content": f"case: {case}"}])

    first = {case: asyncio.run(ask(case)) for case in ("length", "refusal", "null")}
    again = {case: asyncio.run(ask(case)) for case in first}
    assert len(openai_server.requests) == 3 and all(r.cached for r in again.values())
    for case, hit in again.items():
        assert (hit.truncated, hit.failure()) == (first[case].truncated, first[case].failure())


def test_a_benchmark_marks_truncated_runs_and_refusals(
    openai_server: FakeOpenAIServer, tmp_path: Path,
) -> None:
    openai_server.reply = reply
    items = [{"id": case, "question": f"case: {case}", "label": "Paris"} for case in CHOICES]
    arm = {"model": "openai-compatible:m", "base_url": openai_server.url,
           "prompt": "{question}"}
    bench = BenchmarkSession(plan_benchmark({"llm": arm}, items, store=str(tmp_path))).run_sync()
    runs = bench.runs.set_index("item_id")
    assert runs.loc["length", "correct"] and runs.loc["length", "truncated"]
    assert runs.loc["length", "output"] == "Paris"
    assert runs.loc["cut", "truncated"] and runs.loc["cut", "failure_kind"] == "wrong"
    assert not runs.loc["stop", "truncated"] and runs.loc["stop", "correct"]
    assert runs.loc["filter", "failure_kind"] == "refusal"
    assert "content filter" in runs.loc["filter", "error"]
    assert runs.loc["refusal", "failure_kind"] == "refusal"
    assert runs.loc["refusal", "error"] == "the model refused: I can't help with that."
    assert runs.loc["null", "failure_kind"] == "parse_failure"
    assert "content null" in runs.loc["null", "error"]
    summary = bench.summary().set_index("arm")
    assert summary.loc["llm", "truncated"] == 2
    assert summary.loc["llm", "refusal"] == 2 and summary.loc["llm", "parse_failure"] == 1
    from hr_core.report.html import write_report

    page = Path(write_report(bench.run_dir)).read_text(encoding="utf-8")
    assert ">truncated<" in page


def test_a_rejected_json_schema_is_a_loud_error_not_a_prompt_change(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.reject_response_format = True
    cfg = hr_judge_config("openai-compatible:m", "Right?", mode="grade")
    model = _model(openai_server)
    with pytest.raises(StructuredOutputRejectedError, match="structured_output: instructions"):
        asyncio.run(model.complete([{"role": "user", "content": "q"}], schema=cfg.schema))
    assert len(openai_server.requests) == 1  # no second request with another prompt
    # before: every later request silently carried the schema in the system message
    result = asyncio.run(judge_item(cfg, model, item="q", candidates=["Paris"],
                                    reference="Paris"))
    assert result.status == "error"
    assert all("response_format" in r.body for r in openai_server.requests)


def test_the_documented_fallback_sends_the_schema_as_instructions(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.reject_response_format = True
    cfg = hr_judge_config("openai-compatible:m", "Which?", mode="pairwise")
    model = _model(openai_server, structured_output="instructions")
    result = asyncio.run(judge_item(cfg, model, item="q", candidates=["Lyon", "Paris"],
                                    reference="Paris"))
    assert (result.status, result.verdict) == ("ok", "B")
    body = openai_server.requests[-1].body
    assert "response_format" not in body and "JSON schema" in body["messages"][0]["content"]


def test_anthropic_stop_reasons_reach_the_reply(anthropic_server: Any) -> None:
    # before: anthropic:'s ModelReply had no finish_reason (a max_tokens cut was not
    # truncated, a refusal stop reason was a parse failure)
    from hr_core.models.providers.anthropic import AnthropicChatModel

    model = AnthropicChatModel("claude-test", base_url=anthropic_server.url, api_key="k")
    anthropic_server.reply = lambda body: "one two three four five"
    cut = asyncio.run(model.complete([{"role": "user", "content": "q"}],
                                     params={"max_tokens": 2}))
    assert cut.truncated and cut.text == "one two" and cut.failure() is None
    anthropic_server.inject("refusal")
    refused = asyncio.run(model.complete([{"role": "user", "content": "q"}]))
    assert refused.failure() == ("refusal", "the model refused (finish_reason 'refusal')")
