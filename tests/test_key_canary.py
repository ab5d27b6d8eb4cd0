"""Keys go only where declared: a canary key in every variable, checked AT THE SERVER.

Every key variable hr or an SDK might read holds its own canary value. Arms and
judges then call several real HTTP servers on 127.0.0.1, and each server's
recorded requests say which credential headers arrived there, holding which
canary. A key may arrive only at the endpoint it was declared for:

- ``openai:`` reads ``OPENAI_API_KEY`` (and ``OPENAI_BASE_URL`` says where it goes);
- ``openai-compatible:`` reads no key unless ``api_key_env`` names one;
- no ``OpenAI-Organization``/``OpenAI-Project`` from the environment goes to a
  server that is not OpenAI's.

- ``anthropic:`` reads ``ANTHROPIC_API_KEY`` (sent as ``x-api-key``), never
  ``ANTHROPIC_AUTH_TOKEN``;
- ``azure-openai:`` reads ``AZURE_OPENAI_API_KEY`` (sent as ``api-key``), never
  ``AZURE_OPENAI_AD_TOKEN`` (an Entra token is given explicitly).

To add a provider: start its wire-format server (:attr:`Case.server`), give it a
:class:`Case` with the model it should receive requests from and the
``{header: variable}`` it should see; :func:`arrived` reads ``authorization``,
``x-api-key`` and ``api-key``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from anthropic_server import FakeAnthropicServer
from azure_server import FakeAzureServer
from openai_server import FakeOpenAIServer

from hr_core.run.arms import normalise_arms

CANARIES: dict[str, str] = {
    "OPENAI_API_KEY": "sk-canary-openai-0c1d2e3f4a5b",
    "ANTHROPIC_API_KEY": "sk-ant-canary-anthropic-6a7b8c9d",
    "ANTHROPIC_AUTH_TOKEN": "canary-anthropic-token-2b3c4d5e",
    "AZURE_OPENAI_API_KEY": "canary-azure-1f2e3d4c5b6a",
    "AZURE_OPENAI_AD_TOKEN": "canary-azure-ad-token-7c8d9e0f",
    "OPENAI_ADMIN_KEY": "sk-admin-canary-9e8d7c6b5a",
    "HR_CANARY_CUSTOM_KEY": "canary-custom-5d4c3b2a1f0e",
}
"""Every key variable set to its own canary."""

IDENTITY: dict[str, str] = {"OPENAI_ORG_ID": "org-canary-identity",
                            "OPENAI_PROJECT_ID": "proj-canary-identity"}
"""OpenAI account identifiers the SDK reads from the environment: OpenAI's only."""

CREDENTIAL_HEADERS: tuple[str, ...] = ("authorization", "x-api-key", "api-key")
IDENTITY_HEADERS: tuple[str, ...] = ("openai-organization", "openai-project")

MSGS = [{"role": "user", "content": "Document: Paris is the capital of France.\n"
         "Question: What is the capital of France?"}]


def arrived(server: Any) -> dict[str, set[str]]:
    """``{header: {variable or '<other>'}}``: every credential or identity header the
    server received, by which canary's variable it carried (``<other>`` for a value
    that is no canary, e.g. a placeholder like ``Bearer no-key``)."""
    seen: dict[str, set[str]] = {}
    for request in server.requests:
        for header in (*CREDENTIAL_HEADERS, *IDENTITY_HEADERS):
            value = request.headers.get(header)
            if value is None:
                continue
            names = {n for n, c in {**CANARIES, **IDENTITY}.items() if c in value}
            seen.setdefault(header, set()).update(names or {"<other>"})
    return seen


def leaked(server: Any) -> set[str]:
    """The variables whose canary is in ANY header or body the server received."""
    found: set[str] = set()
    for request in server.requests:
        text = " ".join(request.headers.values()) + repr(request.body)
        found.update(n for n, c in {**CANARIES, **IDENTITY}.items() if c in text)
    return found


@dataclass(frozen=True)
class Case:
    """One endpoint: how to build the model that calls it, and what it may receive.

    ``build(url)`` returns a chat model (or an awaitable-producing callable's
    model) for the server at ``url``; ``expect`` maps each credential header the
    server must see to the variable whose canary it must carry (every other
    header and variable must be absent).
    """

    name: str
    build: Callable[[str], Any]
    expect: dict[str, str]
    server: Callable[[], Any] = FakeOpenAIServer
    """The wire format the endpoint speaks (a server class)."""


@pytest.fixture()
def canaries(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for variable, value in {**CANARIES, **IDENTITY}.items():
        monkeypatch.setenv(variable, value)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    yield


def _arm_model(spec: dict[str, Any]) -> Any:
    return normalise_arms({"arm": {"prompt": "{question}", **spec}})["arm"].model()


def _judge_file_model(tmp: Path, body: str) -> Any:
    from hr_cli.judges import judge_model

    path = tmp / "judge.yaml"
    path.write_text(body, encoding="utf-8")
    return judge_model(path)


def _cases(tmp: Path) -> list[Case]:
    return [
        Case("arm openai-compatible, no api_key_env",
             lambda url: _arm_model({"model": "openai-compatible:m", "base_url": url}), {}),
        Case("arm openai-compatible, api_key_env custom",
             lambda url: _arm_model({"model": "openai-compatible:m", "base_url": url,
                                     "api_key_env": "HR_CANARY_CUSTOM_KEY"}),
             {"authorization": "HR_CANARY_CUSTOM_KEY"}),
        Case("arm openai-compatible, api_key_env OPENAI_API_KEY (declared)",
             lambda url: _arm_model({"model": "openai-compatible:m", "base_url": url,
                                     "api_key_env": "OPENAI_API_KEY"}),
             {"authorization": "OPENAI_API_KEY"}),
        Case("arm openai:, base_url given",
             lambda url: _arm_model({"model": "openai:gpt-4o-mini", "base_url": url}),
             {"authorization": "OPENAI_API_KEY", "openai-organization": "OPENAI_ORG_ID",
              "openai-project": "OPENAI_PROJECT_ID"}),
        Case("judge file openai-compatible, no api_key_env",
             lambda url: _judge_file_model(tmp, f"model: openai-compatible:j\nbase_url: {url}\n"
                                           "mode: grade\nrubric: Same?\n"), {}),
        Case("judge file openai-compatible, api_key_env custom",
             lambda url: _judge_file_model(tmp, f"model: openai-compatible:j\nbase_url: {url}\n"
                                           "api_key_env: HR_CANARY_CUSTOM_KEY\n"
                                           "mode: grade\nrubric: Same?\n"),
             {"authorization": "HR_CANARY_CUSTOM_KEY"}),
        Case("arm anthropic:, default variable",
             lambda url: _arm_model({"model": "anthropic:claude", "base_url": url}),
             {"x-api-key": "ANTHROPIC_API_KEY"}, FakeAnthropicServer),
        Case("arm anthropic:, api_key_env custom",
             lambda url: _arm_model({"model": "anthropic:claude", "base_url": url,
                                     "api_key_env": "HR_CANARY_CUSTOM_KEY"}),
             {"x-api-key": "HR_CANARY_CUSTOM_KEY"}, FakeAnthropicServer),
        Case("judge file anthropic:, default variable",
             lambda url: _judge_file_model(tmp, f"model: anthropic:j\nbase_url: {url}\n"
                                           "mode: grade\nrubric: Same?\n"),
             {"x-api-key": "ANTHROPIC_API_KEY"}, FakeAnthropicServer),
        Case("arm azure-openai:, default variable",
             lambda url: _arm_model({"model": "azure-openai:dep", "base_url": url}),
             {"api-key": "AZURE_OPENAI_API_KEY"}, FakeAzureServer),
        Case("arm azure-openai:, api_key_env custom",
             lambda url: _arm_model({"model": "azure-openai:dep", "base_url": url,
                                     "api_key_env": "HR_CANARY_CUSTOM_KEY"}),
             {"api-key": "HR_CANARY_CUSTOM_KEY"}, FakeAzureServer),
        Case("judge file azure-openai:, default variable",
             lambda url: _judge_file_model(tmp, f"model: azure-openai:j\nbase_url: {url}\n"
                                           "mode: grade\nrubric: Same?\n"),
             {"api-key": "AZURE_OPENAI_API_KEY"}, FakeAzureServer),
    ]


def _call(model: Any) -> str:
    async def once() -> str:
        reply = await model.complete(MSGS)
        close = getattr(model, "aclose", None)
        if close is not None:
            await close()
        return str(reply.text)

    return asyncio.run(once())


def test_each_key_arrives_only_where_it_was_declared(canaries: None, tmp_path: Path) -> None:
    cases = _cases(tmp_path)
    servers = [case.server().start() for case in cases]
    try:
        for case, server in zip(cases, servers, strict=True):
            assert _call(case.build(server.url)) == "Paris", case.name
        for case, server in zip(cases, servers, strict=True):
            assert server.requests, case.name
            want = {header: {variable} for header, variable in case.expect.items()}
            assert arrived(server) == want, case.name
            assert leaked(server) == set(case.expect.values()), case.name
    finally:
        for server in servers:
            server.stop()


def test_openai_base_url_from_the_environment_gets_the_openai_key(
    canaries: None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    with FakeOpenAIServer() as openai_like, FakeOpenAIServer() as compatible:
        monkeypatch.setenv("OPENAI_BASE_URL", openai_like.url)
        assert _call(_arm_model({"model": "openai:gpt-4o-mini"})) == "Paris"
        assert _call(_arm_model({"model": "openai-compatible:m",
                                 "base_url": compatible.url})) == "Paris"
        assert arrived(openai_like)["authorization"] == {"OPENAI_API_KEY"}
        assert arrived(compatible) == {} and leaked(compatible) == set()


def test_a_benchmark_sends_each_arm_and_its_judge_its_own_key_only(
    prefect_harness: None, canaries: None, tmp_path: Path,
) -> None:
    from flows import hr_benchmark
    from hr_core.run.spec import scorer_from

    items = [{"id": f"q{i}", "document": "Paris is the capital of France.",
              "question": "What is the capital of France?", "label": "Paris"}
             for i in range(2)]
    prompt = "Document: {document}\nQuestion: {question}"
    with FakeOpenAIServer() as bare, FakeOpenAIServer() as custom, \
            FakeOpenAIServer() as judge:
        arms = {"bare": {"model": "openai-compatible:a", "base_url": bare.url, "prompt": prompt},
                "custom": {"model": {"model": "openai-compatible:b", "base_url": custom.url,
                                     "api_key_env": "HR_CANARY_CUSTOM_KEY"}, "prompt": prompt}}
        scorer = scorer_from({"judge": {"model": {"model": "openai-compatible:j",
                                                  "base_url": judge.url},
                                        "rubric": "Is the response's answer the reference's?"}})
        bench = hr_benchmark(arms, items, scorer=scorer, store=str(tmp_path / "results"),
                             name="canary", require_valid_judge="ignore",
                             judge_store=str(tmp_path / "judges"))
        assert bench.runs["correct"].all()
        assert len(judge.requests) == 2 * 2 * 2  # 2 arms x 2 items x 2 orders
        assert arrived(judge) == {} and leaked(judge) == set()
        assert len(bare.requests) == len(custom.requests) == 2
        assert arrived(bare) == {} and leaked(bare) == set()
        assert arrived(custom) == {"authorization": {"HR_CANARY_CUSTOM_KEY"}}
        assert leaked(custom) == {"HR_CANARY_CUSTOM_KEY"}
