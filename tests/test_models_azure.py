"""``azure-openai:`` through the openai SDK's Azure client against a real Azure-format server."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator

import pytest
from azure_server import FakeAzureServer, Fault

from hr_core.models.base import ModelCallError, ModelConfigError
from hr_core.models.providers.azure import DEFAULT_API_VERSION, AzureOpenAIChatModel
from hr_core.models.registry import PROVIDERS, resolve_model

KEY = "azure-test-SECRET-93b1"
TOKEN = "eyJ0eXAiOiJKV1Qi.entra-test-token"
MSGS = [{"role": "user", "content": "Document: Paris is the capital of France.\n"
         "Question: What is the capital of France?"}]


class Delays:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture()
def server() -> Iterator[FakeAzureServer]:
    with FakeAzureServer(deployments={"gpt4o-prod"}, api_key=KEY, token=TOKEN) as running:
        yield running


def _model(server: FakeAzureServer, deployment: str = "gpt4o-prod",
           **kwargs) -> AzureOpenAIChatModel:
    if not any(k in kwargs for k in ("azure_ad_token_provider", "token_command",
                                     "api_key_env")):
        kwargs.setdefault("api_key", KEY)
    args = {"base_url": server.url, "max_retries": 2, "timeout": 5.0, "sleep": Delays(),
            **kwargs}
    return AzureOpenAIChatModel(deployment, **args)


def _complete(model, messages=MSGS, **kwargs):
    async def call():
        try:
            return await model.complete(messages, **kwargs)
        finally:
            await model.aclose()

    return asyncio.run(call())


def _credentials(server: FakeAzureServer) -> list[dict[str, str]]:
    return [{k: v for k, v in r.headers.items() if k in ("api-key", "authorization")}
            for r in server.requests]


def test_a_key_goes_as_the_api_key_header_to_the_deployment(server: FakeAzureServer) -> None:
    model = _model(server, prices={"input": 2.5, "output": 10.0})
    reply = _complete(model, params={"temperature": 0})
    assert reply.text == "Paris" and reply.usage.tokens_out == 1
    assert reply.usage.cost_usd == pytest.approx((reply.usage.tokens_in * 2.5 + 10.0) / 1e6)
    request = server.requests[0]
    assert request.path == (f"/openai/deployments/gpt4o-prod/chat/completions"
                            f"?api-version={DEFAULT_API_VERSION}")
    assert _credentials(server) == [{"api-key": KEY}]
    assert request.body["temperature"] == 0
    assert model.spec == "azure-openai:gpt4o-prod" and KEY not in repr(model)


@pytest.mark.parametrize("asynchronous", [False, True])
def test_an_entra_token_provider_sends_a_bearer_token(server: FakeAzureServer,
                                                      asynchronous: bool) -> None:
    calls: list[int] = []

    def fetch() -> str:
        calls.append(1)
        return TOKEN

    async def afetch() -> str:
        return fetch()

    model = _model(server, azure_ad_token_provider=afetch if asynchronous else fetch)
    assert _complete(model).text == "Paris" and calls
    assert _credentials(server) == [{"authorization": f"Bearer {TOKEN}"}]


def test_a_token_command_gives_the_token_once_per_ttl(server: FakeAzureServer) -> None:
    command = [sys.executable, "-c", f"print({TOKEN!r})"]
    model = _model(server, token_command=command, token_ttl_s=3600)

    async def twice():
        try:
            return [await model.complete(MSGS), await model.complete(MSGS)]
        finally:
            await model.aclose()

    assert [r.text for r in asyncio.run(twice())] == ["Paris", "Paris"]
    assert _credentials(server) == [{"authorization": f"Bearer {TOKEN}"}] * 2


def test_a_failing_token_command_says_why_without_its_output(server: FakeAzureServer) -> None:
    command = [sys.executable, "-c",
               "import sys; print('partial-secret'); sys.exit('az: please run az login')"]
    with pytest.raises(ModelCallError, match=r"exited with status 1 .*please run az login") \
            as info:
        _complete(_model(server, token_command=command))
    assert "partial-secret" not in str(info.value) and not server.requests


def test_429_waits_retry_after_then_succeeds(server: FakeAzureServer) -> None:
    server.inject(Fault("429", retry_after="0.5"))
    model = _model(server)
    assert _complete(model).text == "Paris" and len(server.requests) == 2
    # the endpoint's limiter waits Retry-After (hr_core.models.ratelimit.endpoint), in real time
    assert server.requests[1].at - server.requests[0].at >= 0.5


def test_server_errors_are_retried(server: FakeAzureServer) -> None:
    server.inject("503")
    assert _complete(_model(server)).text == "Paris" and len(server.requests) == 2


@pytest.mark.parametrize("how, message", [
    ({"deployment": "no-such"}, "HTTP 404.*deployment for this resource does not exist"),
    ({"api_key": "wrong-key"}, "Access denied"),
])
def test_a_missing_deployment_or_a_wrong_key_is_not_retried(
        server: FakeAzureServer, how: dict, message: str) -> None:
    with pytest.raises(ModelCallError, match=message) as info:
        _complete(_model(server, **how))
    assert len(server.requests) == 1 and "wrong-key" not in str(info.value)


def test_a_content_filtered_reply_is_a_refusal(server: FakeAzureServer) -> None:
    server.inject("content_filter")
    reply = _complete(_model(server))
    assert reply.text == "" and reply.failure()[0] == "refusal"


@pytest.mark.parametrize("schema", [None, {"type": "object"}])
def test_a_prompt_rejected_by_the_content_filter_is_a_refusal(server: FakeAzureServer,
                                                              schema) -> None:
    server.inject("content_filter_prompt")
    reply = _complete(_model(server), schema=schema)
    assert reply.failure() == ("refusal", "the model refused: Azure's content filter "
                                          "refused the prompt (violence)")
    assert len(server.requests) == 1


def test_token_command_and_api_version_come_from_a_yaml_model_spec(
        server: FakeAzureServer) -> None:
    spec = {"model": "azure-openai:gpt4o-prod", "base_url": server.url,
            "api_version": "2025-04-01-preview",
            "token_command": [sys.executable, "-c", f"print({TOKEN!r})"]}
    _complete(resolve_model(spec))
    assert server.requests[0].path.endswith("?api-version=2025-04-01-preview")
    assert _credentials(server) == [{"authorization": f"Bearer {TOKEN}"}]
    with pytest.raises(ModelConfigError, match="api_version is for azure-openai models only"):
        resolve_model({"model": "openai:gpt-4o", "api_version": "2024-10-21"})


def test_api_version_comes_from_the_argument_or_openai_api_version(
        server: FakeAzureServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_VERSION", "2025-01-01-preview")
    _complete(_model(server))
    _complete(_model(server, api_version="2024-06-01"))
    assert [r.path.rsplit("=", 1)[1] for r in server.requests] == ["2025-01-01-preview",
                                                                     "2024-06-01"]
    # the endpoint hr records (and caches by) names deployment and version
    assert _model(server).base_url != _model(server, api_version="2024-06-01").base_url


def test_the_key_comes_only_from_its_declared_variable(
        server: FakeAzureServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "canary-openai")
    monkeypatch.setenv("AZURE_OPENAI_AD_TOKEN", "canary-ad-token")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    _complete(resolve_model("azure-openai:gpt4o-prod", base_url=server.url))
    monkeypatch.setenv("HR_AZURE_KEY", KEY)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "canary-azure")
    _complete(resolve_model("azure-openai:gpt4o-prod", base_url=server.url,
                            api_key_env="HR_AZURE_KEY"))
    assert _credentials(server) == [{"api-key": KEY}] * 2


@pytest.mark.parametrize("kwargs, message", [
    ({}, "needs the resource endpoint"),
    ({"base_url": "https://r.openai.azure.com/openai"}, "resource endpoint only"),
    ({"base_url": "https://r.openai.azure.com", "api_key": "k", "token_command": "az x"},
     "give one credential, not api_key and token_command"),
    ({"base_url": "https://r.openai.azure.com"}, "set the environment variable "
     "AZURE_OPENAI_API_KEY"),
])
def test_configuration_mistakes_say_what_to_do(monkeypatch: pytest.MonkeyPatch,
                                               kwargs: dict, message: str) -> None:
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelConfigError, match=message):
        AzureOpenAIChatModel("dep", **kwargs)


def test_azure_openai_is_a_provider() -> None:
    assert "azure-openai" in PROVIDERS
    model = resolve_model("azure-openai:dep", base_url="https://r.openai.azure.com/",
                          api_key="k")
    assert isinstance(model, AzureOpenAIChatModel) and model.azure_endpoint == \
        "https://r.openai.azure.com"


@pytest.mark.parametrize("quota, says", [("daily", "asks to wait 24 h"),
                                         ("daily-message", "retry after 24 h"),
                                         ("monthly", "out of call volume quota")])
def test_an_exhausted_quota_halts_the_endpoint_at_once(server: FakeAzureServer, quota: str,
                                                       says: str) -> None:
    # before: the daily quota's 429 (Retry-After 86400) was waited out like a rate limit,
    # each call until its deadline (15 min without one), then an error; the monthly 403
    # was an error of every call, each one sent
    from hr_core.models.ratelimit.endpoint import EndpointStoppedError

    server.quota_after, server.quota = 0, quota
    model = _model(server, rate_limit_wait_s=2.0)
    with pytest.raises(ModelCallError, match=f"quota exhausted .*{says}.*calls to this "
                                             "endpoint stopped") as info:
        _complete(model)
    assert "86400" in str(info.value) or "call volume" in str(info.value)
    with pytest.raises(EndpointStoppedError, match="quota exhausted"):
        _complete(model)
    assert len(server.requests) == 1  # not retried, and nothing more sent


def test_an_exhausted_quota_makes_the_runs_not_made_budget_stops_and_a_resume_makes_them(
        server: FakeAzureServer, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hr_core.models.ratelimit.endpoint import reset_limiters
    from hr_core.run.session import BenchmarkSession, plan_benchmark

    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    items = [{"id": f"i{i}", "document": "Paris is the capital of France.",
              "question": f"What is the capital of France? (#{i})", "label": "Paris"}
             for i in range(30)]
    arm = {"model": "azure-openai:gpt4o-prod", "base_url": server.url,
           "prompt": "Document: {document}\nQuestion: {question}"}

    def run() -> object:
        plan = plan_benchmark({"azure": arm}, items, store=str(tmp_path), concurrency=4)
        return BenchmarkSession(plan).run_sync()

    server.quota_after = 5
    bench = run()
    runs = bench.runs  # type: ignore[attr-defined]
    kinds = runs["failure_kind"].fillna("correct").value_counts().to_dict()
    sent = len(server.requests)
    assert sent <= 5 + 4, sent  # the answered ones, then at most the 4 in flight
    assert kinds["error"] == 1 and kinds["budget_stop"] >= 30 - 9, kinds
    stops = runs[runs["failure_kind"] == "budget_stop"]
    assert stops["error"].str.contains("quota exhausted").all()
    assert "86400" in runs.loc[runs["failure_kind"] == "error", "error"].iloc[0]
    assert "quota exhausted" in bench.manifest["halts"]["azure"]  # type: ignore[attr-defined]
    server.quota_after = None  # the quota is back: a resume (a new process) makes the rest
    reset_limiters()
    again = run()
    assert len(server.requests) - sent == kinds["budget_stop"]
    assert "budget_stop" not in set(again.runs["failure_kind"].dropna())  # type: ignore[attr-defined]
