"""The OpenAI client through the real SDK against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import logging
import pickle

import pytest
from openai_server import FakeOpenAIServer, Fault

from hr_core.core.errors import HrError
from hr_core.judge.config import hr_judge_config
from hr_core.judge.judging import judge_item
from hr_core.models.base import ModelCallError, ModelConfigError, UnknownProviderError
from hr_core.models.providers.openai import OpenAIChatModel, Price, find_price
from hr_core.models.registry import resolve_model

KEY = "sk-test-SECRET-4f1c9b"
MSGS = [{"role": "user", "content": "Document: Paris is the capital of France.\n"
         "Question: What is the capital of France?"}]


class Delays:
    """Records the waits the client asks for (no real sleeping)."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def _model(server: FakeOpenAIServer, **kwargs) -> OpenAIChatModel:
    args = {"provider": "openai-compatible", "base_url": server.url, "api_key": KEY,
            "max_retries": 3, "timeout": 5.0, "sleep": Delays(), **kwargs}
    return OpenAIChatModel("test-model", **args)


def _complete(model, messages=MSGS, **kwargs):
    return asyncio.run(model.complete(messages, **kwargs))


def test_completion_text_usage_and_cost(openai_server: FakeOpenAIServer) -> None:
    model = _model(openai_server, prices={"test-model": {"input": 1.0, "output": 2.0}})
    reply = _complete(model, params={"temperature": 0})
    assert reply.text == "Paris" and not reply.cached and reply.latency_s > 0
    words = len(MSGS[0]["content"].split())  # the test server counts words as tokens
    assert reply.usage.tokens_in == words and reply.usage.tokens_out == 1
    assert reply.usage.cost_usd == pytest.approx((words * 1.0 + 1 * 2.0) / 1e6)
    request = openai_server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "test-model" and request.body["temperature"] == 0
    assert request.headers["authorization"] == f"Bearer {KEY}"


def test_structured_output_sends_the_json_schema(openai_server: FakeOpenAIServer) -> None:
    cfg = hr_judge_config("openai-compatible:test-model", "Right?", mode="grade")
    model = _model(openai_server)
    result = asyncio.run(judge_item(cfg, model, item="q", candidates=["Paris"],
                                    reference="Paris"))
    assert (result.status, result.verdict) == ("ok", "pass")
    fmt = openai_server.requests[0].body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == cfg.schema
    assert fmt["json_schema"]["strict"] is True


def test_a_rejected_response_format_is_an_error_not_a_silent_fallback(
    openai_server: FakeOpenAIServer,
) -> None:
    # before: the model switched structured output off for its life (prompt changed,
    # config hash not); now a loud error (tests/test_reply_fields.py has the fallback)
    openai_server.reject_response_format = True
    cfg = hr_judge_config("openai-compatible:test-model", "Which?", mode="pairwise")
    model = _model(openai_server)
    result = asyncio.run(judge_item(cfg, model, item="q", candidates=["Lyon", "Paris"],
                                    reference="Paris"))
    assert result.status == "error" and model.structured_output == "json_schema"
    assert all("response_format" in r.body for r in openai_server.requests)


@pytest.mark.parametrize(
    "fault",
    [Fault("429", retry_after="0"), Fault("500"), Fault("503"), Fault("truncated"),
     Fault("malformed"), Fault("empty"), Fault("slow", delay_s=1.5)],
    ids=lambda f: f.kind,
)
def test_retries_each_fault_then_succeeds(openai_server: FakeOpenAIServer, fault: Fault) -> None:
    openai_server.inject(fault, fault)
    model = _model(openai_server, timeout=0.5)
    reply = _complete(model)
    assert reply.text == "Paris"
    assert model.stats["retries"] == 2 and len(openai_server.requests) == 3
    # a 429 is waited out by the endpoint's limiter (Retry-After), other faults back off
    assert len(model._sleep.waits) == (0 if fault.kind == "429" else 2)  # type: ignore[attr-defined]


def test_retry_after_is_honoured_and_backoff_grows(openai_server: FakeOpenAIServer) -> None:
    openai_server.inject(Fault("429", retry_after="0.4"), Fault("500"), Fault("500"))
    model = _model(openai_server, backoff_base_s=1.0, backoff_max_s=100.0)
    assert _complete(model).text == "Paris"
    arrivals = [r.at for r in openai_server.requests]
    assert arrivals[1] - arrivals[0] >= 0.4  # the endpoint paused for Retry-After
    waits = model._sleep.waits  # type: ignore[attr-defined]
    assert 0.5 <= waits[0] <= 1.0 and 1.0 <= waits[1] <= 2.0  # 429s are no retries


def test_gives_up_after_the_limit_with_a_clear_error(openai_server: FakeOpenAIServer) -> None:
    openai_server.inject(*[Fault("500")] * 10)
    model = _model(openai_server, max_retries=2)
    with pytest.raises(ModelCallError, match=r"gave up after 3 attempt\(s\) \(max_retries=2\)"
                       r"; last error: HTTP 500") as info:
        _complete(model)
    assert isinstance(info.value, HrError)
    assert len(openai_server.requests) == 3 and model.stats["failed"] == 1


def test_client_errors_are_not_retried(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = lambda body: {"error": "unused"}
    model = _model(openai_server, base_url=openai_server.url.replace("/v1", "/nope"))
    with pytest.raises(ModelCallError, match="HTTP 404"):
        _complete(model)
    assert len(openai_server.requests) == 1


def test_fault_injection_campaign_every_call_finally_succeeds(
    openai_server: FakeOpenAIServer,
) -> None:
    kinds = ["429", "500", "503", "truncated", "malformed", "empty"]
    faults = [Fault(kinds[i % len(kinds)], retry_after="0") for i in range(24)]
    openai_server.inject(*faults)
    # the fault queue is global: one call may meet every fault, so allow that many retries
    model = _model(openai_server, max_retries=len(faults), concurrency=4)

    async def many() -> list:
        return await asyncio.gather(*(model.complete(MSGS, run=i) for i in range(20)))

    replies = asyncio.run(many())
    assert [r.text for r in replies] == ["Paris"] * 20
    assert openai_server.pending_faults == 0
    assert model.stats["retries"] == 24 and model.stats["failed"] == 0
    assert len(openai_server.requests) == 44


def test_the_key_is_in_no_repr_log_error_or_record(openai_server: FakeOpenAIServer,
                                                   caplog: pytest.LogCaptureFixture,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("OPENAI_LOG", "debug")
    model = _model(openai_server)
    cfg = hr_judge_config("openai-compatible:test-model", "Right?", mode="grade")
    result = asyncio.run(judge_item(cfg, model, item="q", candidates=["Lyon"],
                                    reference="Paris"))
    openai_server.inject(*[Fault("500")] * 5)
    with pytest.raises(ModelCallError) as info:
        _complete(model)
    texts = [repr(model), str(model), result.model_dump_json(), str(cfg), cfg.hash,
             str(info.value), json.dumps(model.stats), caplog.text,
             *(r.getMessage() for r in caplog.records)]
    assert all(KEY not in t for t in texts)
    assert openai_server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    with pytest.raises(TypeError, match="not pickled"):
        pickle.dumps(model)


def test_key_from_the_environment_keeps_only_the_variable_name(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HR_TEST_KEY", KEY)
    model = resolve_model("openai-compatible:test-model", base_url=openai_server.url,
                          api_key_env="HR_TEST_KEY")
    assert _complete(model).text == "Paris"
    assert openai_server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in repr(vars(model))


def test_openai_without_a_key_says_which_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelConfigError, match="set the environment variable OPENAI_API_KEY"):
        resolve_model("openai:gpt-4o-mini")


@pytest.mark.parametrize(
    ("model", "error", "message"),
    [
        ("claude:sonnet", UnknownProviderError, "unknown provider 'claude'"),
        ("gpt-4o", UnknownProviderError, "names no provider"),
        ("openai-compatible:llama", ModelConfigError, "needs base_url"),
    ],
)
def test_resolve_model_errors(model: str, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        resolve_model(model)


def test_prices_forms() -> None:
    assert find_price({"input": 1, "output": 2}, "openai", "x") == Price(1.0, 2.0)
    assert find_price({"openai:x": (3, 4)}, "openai", "x") == Price(3.0, 4.0)
    assert find_price({"y": (3, 4)}, "openai", "x") is None
    with pytest.raises(ModelConfigError, match="non-negative"):
        find_price({"x": (-1, 4)}, "openai", "x")


def test_one_model_serves_several_event_loops(openai_server: FakeOpenAIServer) -> None:
    model = _model(openai_server)
    assert _complete(model).text == _complete(model).text == "Paris"

    async def close_and_reuse() -> str:
        await model.complete(MSGS)
        await model.aclose()
        return (await model.complete(MSGS)).text

    assert asyncio.run(close_and_reuse()) == "Paris"


def test_concurrency_limit_holds(openai_server: FakeOpenAIServer) -> None:
    openai_server.inject(*[Fault("slow", delay_s=0.2)] * 6)
    model = _model(openai_server, concurrency=2)

    async def many() -> None:
        await asyncio.gather(*(model.complete(MSGS, run=i) for i in range(6)))

    asyncio.run(many())
    starts = sorted(r.at for r in openai_server.requests)
    # with 2 in flight, the 3rd request cannot start before the first slow reply ended
    assert starts[2] - starts[0] >= 0.15
