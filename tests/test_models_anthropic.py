"""``anthropic:`` through the official SDK against a real Messages API server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import itertools
import pickle
from collections.abc import Iterator

import pytest
from anthropic_server import FakeAnthropicServer, Fault

from hr_core.judge.config import hr_judge_config
from hr_core.judge.judging import judge_item
from hr_core.models.base import ModelCallError, ModelConfigError, StructuredOutputRejectedError
from hr_core.models.providers.anthropic import DEFAULT_MAX_TOKENS, AnthropicChatModel
from hr_core.models.registry import PROVIDERS, resolve_model

KEY = "sk-ant-test-SECRET-77a1"
MSGS = [{"role": "system", "content": "Answer from the document."},
        {"role": "user", "content": "Document: Paris is the capital of France.\n"
         "Question: What is the capital of France?"}]


class Delays:
    """Records the waits the client asks for (no real sleeping)."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture()
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(api_key=KEY) as running:
        yield running


def _model(server: FakeAnthropicServer, **kwargs) -> AnthropicChatModel:
    args = {"base_url": server.url, "api_key": KEY, "max_retries": 3, "timeout": 5.0,
            "sleep": Delays(), **kwargs}
    return AnthropicChatModel("claude-test", **args)


def _complete(model, messages=MSGS, **kwargs):
    async def call():
        try:
            return await model.complete(messages, **kwargs)
        finally:
            await model.aclose()

    return asyncio.run(call())


def test_message_text_usage_cache_tokens_and_cost(server: FakeAnthropicServer) -> None:
    server.cache_tokens = (5, 20)  # written to / read from Anthropic's prompt cache
    prices = {"claude-test": {"input": 3.0, "output": 15.0, "cached_input": 0.3}}
    reply = _complete(_model(server, prices=prices))
    assert reply.text == "Paris" and not reply.cached and reply.latency_s > 0
    fresh = len(" ".join(m["content"] for m in MSGS).split())  # the server counts words
    assert reply.usage.tokens_in == fresh + 5 + 20 and reply.usage.tokens_out == 1
    # cache reads at the cached price, cache writes at 1.25x the input price
    assert reply.usage.cost_usd == pytest.approx((fresh * 3.0 + 5 * 3.75 + 20 * 0.3 + 15.0)
                                                 / 1e6)
    request = server.requests[0]
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == KEY and "authorization" not in request.headers
    assert request.headers["anthropic-version"]
    assert request.body["system"] == [{"type": "text", "text": "Answer from the document.",
                                       "cache_control": {"type": "ephemeral"}}]
    assert [m["role"] for m in request.body["messages"]] == ["user"]
    assert request.body["max_tokens"] == DEFAULT_MAX_TOKENS


def test_cache_writes_are_billed_at_1_25x_input_and_reads_at_0_1x(
        server: FakeAnthropicServer) -> None:
    # before: cache_creation_input_tokens were priced as plain input (and, without a
    # cached_input price, cache reads too): Anthropic bills writes 1.25x, reads 0.1x
    server.cache_tokens = (1000, 3000)  # written to / read from the prompt cache
    reply = _complete(_model(server, prices={"input": 1.0, "output": 2.0}))
    usage = reply.usage
    fresh = usage.tokens_in - 1000 - 3000
    assert usage.tokens_cache_write == 1000 and usage.tokens_cache_read == 3000
    assert usage.cost_cache_write_usd == pytest.approx(1000 * 1.25 / 1e6)
    assert usage.cost_cache_read_usd == pytest.approx(3000 * 0.1 / 1e6)
    assert usage.cost_input_usd == pytest.approx(fresh * 1.0 / 1e6)
    assert usage.cost_output_usd == pytest.approx(usage.tokens_out * 2.0 / 1e6)
    assert usage.cost_usd == pytest.approx(
        (fresh * 1.0 + 1000 * 1.25 + 3000 * 0.1 + usage.tokens_out * 2.0) / 1e6)
    # a table's own cache rates win over Anthropic's multipliers
    own = _complete(_model(server, prices={"input": 1.0, "output": 2.0, "cached_input": 0.5,
                                           "cache_write": 3.0}))
    assert own.usage.cost_usd == pytest.approx(
        (fresh * 1.0 + 1000 * 3.0 + 3000 * 0.5 + own.usage.tokens_out * 2.0) / 1e6)


def test_openai_params_are_translated_or_refused(server: FakeAnthropicServer) -> None:
    model = _model(server)
    _complete(model, params={"max_completion_tokens": 50, "stop": "END", "temperature": 0})
    body = server.requests[0].body
    assert body["max_tokens"] == 50 and body["stop_sequences"] == ["END"]
    assert body["temperature"] == 0 and "stop" not in body
    with pytest.raises(ModelConfigError, match="parameter 'seed' is OpenAI's"):
        _complete(model, params={"seed": 1})
    assert len(server.requests) == 1  # refused before sending


def test_stop_reason_max_tokens_is_a_truncated_reply_kept_whole(
        server: FakeAnthropicServer) -> None:
    server.reply = lambda body: "one two three four five"
    reply = _complete(_model(server), params={"max_tokens": 2})
    assert reply.text == "one two" and reply.usage.tokens_out == 2
    assert reply.finish_reason == "length" and reply.truncated and reply.failure() is None
    plain = _complete(_model(server))
    assert plain.finish_reason == "stop" and not plain.truncated


def test_stop_reason_refusal_is_a_refusal(server: FakeAnthropicServer) -> None:
    server.inject("refusal")
    reply = _complete(_model(server))
    assert reply.text == "" and reply.finish_reason == "refusal"
    assert reply.failure() == ("refusal", "the model refused (finish_reason 'refusal')")


def test_a_reply_without_text_blocks_is_a_parse_failure(server: FakeAnthropicServer) -> None:
    server.reply = lambda body: ""
    kind, message = _complete(_model(server)).failure()
    assert kind == "parse_failure" and "content null" in message


def test_structured_output_goes_in_output_config(server: FakeAnthropicServer) -> None:
    cfg = hr_judge_config("anthropic:claude-test", "Right?", mode="grade")
    model = _model(server)
    result = asyncio.run(judge_item(cfg, model, item="q", candidates=["Paris"],
                                    reference="Paris"))
    assert (result.status, result.verdict) == ("ok", "pass")
    fmt = server.requests[0].body["output_config"]["format"]
    assert fmt == {"type": "json_schema", "schema": cfg.schema}


def _gaps(server: FakeAnthropicServer) -> list[float]:
    at = [r.at for r in server.requests]
    return [b - a for a, b in itertools.pairwise(at)]


def test_structured_output_as_instructions_puts_the_schema_in_the_system_prompt(
        server: FakeAnthropicServer) -> None:
    cfg = hr_judge_config("anthropic:claude-test", "Right?", mode="grade")
    model = _model(server, structured_output="instructions")
    result = asyncio.run(judge_item(cfg, model, item="q", candidates=["Paris"],
                                    reference="Paris"))
    assert (result.status, result.verdict) == ("ok", "pass")
    body = server.requests[0].body
    assert "output_config" not in body and "JSON schema" in body["system"][0]["text"]
    assert [m["role"] for m in body["messages"]] == ["user"]


def test_a_rejected_json_schema_is_a_loud_configuration_error(
        server: FakeAnthropicServer) -> None:
    server.inject("400")
    with pytest.raises(StructuredOutputRejectedError, match="structured_output: instructions"):
        _complete(_model(server), schema={"type": "object"})
    assert len(server.requests) == 1


def test_429_waits_retry_after_then_succeeds(server: FakeAnthropicServer) -> None:
    server.inject(Fault("429", retry_after="0.5"))
    model = _model(server)
    reply = _complete(model)
    assert reply.text == "Paris" and len(server.requests) == 2
    # the endpoint's limiter (hr_core.models.ratelimit.endpoint) waits it out, in real time
    assert _gaps(server)[0] >= 0.5 and model.stats["rate_limited"] == 1
    assert model.rate_limits["anthropic-ratelimit-requests-limit"] == "1000"


def test_429_without_retry_after_paces_by_the_anthropic_ratelimit_headers(
        server: FakeAnthropicServer) -> None:
    server.requests_limit = 60  # anthropic-ratelimit-requests-limit: one a second
    server.inject(Fault("429"))  # requests-remaining 0, reset in 1 s; no retry-after
    assert _complete(_model(server)).text == "Paris"
    assert _gaps(server)[0] >= 0.9  # the spent limit's next request is due in 1 s


def test_anthropic_models_of_one_endpoint_share_its_limiter(
        server: FakeAnthropicServer) -> None:
    # two models (arm and judge, say) with one key at one endpoint: one limiter, whose
    # pause on a 429's retry-after holds both, and which reads anthropic-ratelimit-*
    from hr_core.models.ratelimit.endpoint import limiters

    server.requests_limit = 600
    server.inject(Fault("429", retry_after="1"))
    arm, judge = _model(server, concurrency=3), _model(server, concurrency=3)
    assert arm._limiter() is judge._limiter()
    assert arm._limiter().ceiling == 6  # the two models' concurrency added up

    async def both() -> list[str]:
        try:
            replies = await asyncio.gather(*(m.complete(MSGS) for m in (arm, judge) * 3))
            return [r.text for r in replies]
        finally:
            await arm.aclose()
            await judge.aclose()

    assert asyncio.run(both()) == ["Paris"] * 6
    first, *rest = server.requests
    assert first.fault == "429" and len(rest) == 6
    # the endpoint's first call went alone (its limits unknown), met the 429; no call of
    # either model went out before its retry-after was over
    assert all(r.at >= first.at + 1.0 - 0.005 for r in rest), [r.at - first.at for r in rest]
    snapshot = arm._limiter().snapshot()
    assert snapshot["rpm"] == 600 and snapshot["rate_limited"] == 1 and snapshot["ok"] == 6
    assert [lim for lim in limiters() if lim.label == f"anthropic:{server.url}"] == [
        arm._limiter()]


def test_overloaded_529_is_waited_out_like_a_rate_limit(server: FakeAnthropicServer) -> None:
    server.inject("529", "529", "529")  # more than max_retries
    model = _model(server, max_retries=1)
    assert _complete(model).text == "Paris" and len(server.requests) == 4
    assert model.stats["rate_limited"] == 3


def test_server_errors_are_retried_max_retries_times(server: FakeAnthropicServer) -> None:
    server.inject("500", "500")
    assert _complete(_model(server)).text == "Paris" and len(server.requests) == 3
    server.inject(*["500"] * 4)
    with pytest.raises(ModelCallError, match=r"gave up after 4 attempt\(s\).*HTTP 500 api_error"):
        _complete(_model(server))


def test_a_spend_limit_429_halts_the_endpoint(server: FakeAnthropicServer) -> None:
    from hr_core.models.ratelimit.endpoint import EndpointStoppedError

    server.inject("spend_limit")
    model = _model(server)
    with pytest.raises(ModelCallError, match="spend limit reached .*HTTP 429 rate_limit_error "
                                             r"\(enforced_spend_limit_reached\)"):
        _complete(model)
    with pytest.raises(EndpointStoppedError, match="not sent"):
        _complete(model)
    assert len(server.requests) == 1  # not retried, and nothing more sent


@pytest.mark.parametrize("kind, error_type", [("400", "invalid_request_error"),
                                               ("401", "authentication_error")])
def test_client_errors_are_not_retried(server: FakeAnthropicServer, kind: str,
                                       error_type: str) -> None:
    server.inject(kind)
    with pytest.raises(ModelCallError, match=f"call failed: HTTP {kind} {error_type}"):
        _complete(_model(server))
    assert len(server.requests) == 1


def test_malformed_body_is_retried(server: FakeAnthropicServer) -> None:
    server.inject("malformed")
    assert _complete(_model(server)).text == "Paris" and len(server.requests) == 2


def test_the_key_comes_only_from_its_declared_variable(
        server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_AUTH_TOKEN", "AZURE_OPENAI_API_KEY"):
        monkeypatch.setenv(variable, f"canary-{variable}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    model = resolve_model("anthropic:claude-test", base_url=server.url)
    _complete(model)
    monkeypatch.setenv("HR_CLAUDE_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "canary-ANTHROPIC_API_KEY")
    _complete(resolve_model("anthropic:claude-test", base_url=server.url,
                            api_key_env="HR_CLAUDE_KEY"))
    for request in server.requests:
        assert request.headers["x-api-key"] == KEY
        assert "authorization" not in request.headers
        assert "canary" not in repr(request.headers)


def test_a_missing_key_says_which_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-other")
    with pytest.raises(ModelConfigError, match="set the environment variable ANTHROPIC_API_KEY"):
        resolve_model("anthropic:claude-test")


def test_the_key_is_never_shown(server: FakeAnthropicServer) -> None:
    server.api_key = "another"
    model = _model(server)
    with pytest.raises(ModelCallError) as info:
        _complete(model)
    assert KEY not in str(info.value) and KEY not in repr(model)
    with pytest.raises(TypeError, match="not pickled"):
        pickle.dumps(model)


def test_anthropic_is_a_provider() -> None:
    assert "anthropic" in PROVIDERS
    model = resolve_model("anthropic:claude-x", base_url="http://127.0.0.1:9/", api_key="k")
    assert isinstance(model, AnthropicChatModel) and model.spec == "anthropic:claude-x"
    assert model.base_url == "http://127.0.0.1:9"
