"""Every model call bounded in time and size, whatever the server does (issue 31 item 3).

Real servers on 127.0.0.1 (tests/openai_server.py and its Anthropic and Azure kin) that
trickle their headers or body, or send a 60 MB reply; each provider's client goes through
its own SDK. Before: a trickle held a call as long as the server kept it up (httpx's
per-read timeout never fires), and a 60 MB reply was read whole (three took a run to
1.54 GB of RSS).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anthropic_server import FakeAnthropicServer
from azure_server import FakeAzureServer
from openai_server import FakeOpenAIServer, Fault

from hr_core.models.base import ModelCallError
from hr_core.models.providers.anthropic import AnthropicChatModel
from hr_core.models.providers.azure import AzureOpenAIChatModel
from hr_core.models.providers.openai import OpenAIChatModel
from hr_core.models.registry import resolve_model
from hr_core.models.spec import ModelSpec
from hr_core.run.arms import normalise_arms

KEY = "sk-bound-SECRET-51c2"
MSGS = [{"role": "user", "content": "Document: Paris is the capital of France.\n"
         "Question: What is the capital of France?"}]
BIG = 60 * 1024 * 1024
ROOT = Path(__file__).resolve().parents[1]


async def _no_sleep(seconds: float) -> None:
    return None


@pytest.fixture(params=["openai", "anthropic", "azure"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[Any, Any]]:
    """A server of each provider and a factory of its model (no backoff sleeps)."""
    kind = request.param
    if kind == "openai":
        with FakeOpenAIServer() as server:
            yield server, lambda **kw: OpenAIChatModel(
                "m", provider="openai-compatible", base_url=server.url, api_key=KEY,
                sleep=_no_sleep, **kw)
    elif kind == "anthropic":
        with FakeAnthropicServer() as server:
            yield server, lambda **kw: AnthropicChatModel(
                "claude-test", base_url=server.url, api_key=KEY, sleep=_no_sleep, **kw)
    else:
        with FakeAzureServer(deployments={"dep"}) as server:
            yield server, lambda **kw: AzureOpenAIChatModel(
                "dep", base_url=server.url, api_key=KEY, sleep=_no_sleep, **kw)


def _complete(model: Any) -> Any:
    async def call() -> Any:
        try:
            return await model.complete(MSGS)
        finally:
            await model.aclose()

    return asyncio.run(call())


@pytest.mark.parametrize("kind", ["trickle-headers", "trickle-body"])
def test_a_trickling_server_is_cut_off_at_each_attempts_deadline(
        served: tuple[Any, Any], kind: str) -> None:
    # the server sends a header line (or a body byte) every 0.3 s for 30 s; before, each
    # attempt lasted the 30 s (and the default timeout_s of 60 s was never reached)
    server, make = served
    server.every = Fault(kind, delay_s=0.3, duration_s=30)
    model = make(timeout=1.0, max_retries=1)
    with pytest.raises(ModelCallError, match=r"timeout_s=1 s") as info:
        _complete(model)
    took = time.monotonic() - server.requests[0].at  # from the first request (not imports)
    assert took < 10, took  # two attempts of 1 s each, with generous slack
    assert "gave up after 2 attempt(s)" in str(info.value)  # a deadline is retried
    assert len(server.requests) == 2 and KEY not in str(info.value)
    server.every = None  # the same model answers once the server does
    assert _complete(model).text


@pytest.mark.parametrize("kind", ["huge", "huge-unsized"])
def test_a_reply_over_the_size_limit_is_an_error_naming_it_and_not_retried(
        served: tuple[Any, Any], kind: str) -> None:
    server, make = served
    server.every = Fault(kind, size=BIG)
    model = make(timeout=30.0, max_retries=3)
    with pytest.raises(ModelCallError, match=r"larger than max_reply_bytes=4194304 \(4 MiB"):
        _complete(model)
    assert time.monotonic() - server.requests[0].at < 15
    assert len(server.requests) == 1  # not retried as if transient


def test_a_compressed_reply_is_read_and_bounded_once_unpacked(
        openai_server: FakeOpenAIServer) -> None:
    # a server that compresses though asked for identity: read as usual, and a small body
    # that unpacks past the limit (a "zip bomb") is refused, not unpacked into memory
    openai_server.every = Fault("gzip")
    assert _complete(OpenAIChatModel("m", provider="openai-compatible",
                                     base_url=openai_server.url)).text == "Paris"
    assert openai_server.requests[0].headers["accept-encoding"] == "identity"
    openai_server.every = Fault("gzip", size=BIG)
    with pytest.raises(ModelCallError, match=r"max_reply_bytes=4194304 \(4 MiB; decompressed"):
        _complete(OpenAIChatModel("m", provider="openai-compatible",
                                  base_url=openai_server.url, max_retries=2))
    assert len(openai_server.requests) == 2


def test_the_spec_sets_the_limit_and_a_reply_within_it_is_read(
        openai_server: FakeOpenAIServer) -> None:
    spec = ModelSpec.of({"model": "openai-compatible:m", "base_url": openai_server.url,
                         "max_reply_bytes": 2048, "timeout_s": 5})
    model = resolve_model(spec)
    assert _complete(model).text == "Paris"  # a normal reply is some 300 bytes
    openai_server.every = Fault("huge", size=4096)
    with pytest.raises(ModelCallError, match=r"max_reply_bytes=2048 \(2 KiB"):
        _complete(resolve_model(spec))
    assert ModelSpec.of("openai:gpt-4o-mini").max_reply_bytes == 4 * 1024 * 1024
    with pytest.raises(Exception, match="max_reply_bytes"):
        ModelSpec.of({"model": "openai:gpt-4o-mini", "max_reply_bytes": 10})


def test_the_limits_are_not_part_of_the_arms_identity() -> None:
    # an arm's run id is what decides its answers: pacing, deadlines of a call and the
    # size limit do not (before: max_reply_bytes was no field of a model spec)
    def arm_spec(**extra: Any) -> dict[str, Any]:
        model = {"provider": "openai-compatible", "model": "m",
                 "base_url": "http://127.0.0.1:9/v1", **extra}
        return normalise_arms({"a": {"model": model, "prompt": "{q}"}})["a"].spec

    assert arm_spec(max_reply_bytes=1 << 20) == arm_spec()
    assert "max_reply_bytes" not in json.dumps(arm_spec())
    spec = ModelSpec.of({"model": "openai:gpt-4o-mini", "max_reply_bytes": 1 << 20})
    assert spec.fingerprint == ModelSpec.of("openai:gpt-4o-mini").fingerprint


_PEAK = textwrap.dedent("""
    import json, sys
    from hr_core.run.session import BenchmarkSession, plan_benchmark

    def peak_kb():
        # this process's own peak (VmHWM): ru_maxrss survives execve on Linux, so it
        # would also count the RSS of the pytest process that forked this one
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status
                        if line.startswith("VmHWM:"))

    url, store = sys.argv[1], sys.argv[2]
    items = [{"id": f"i{i}", "question": f"Q{i}?", "label": "Paris"} for i in range(3)]
    arm = {"model": {"provider": "openai-compatible", "model": "m", "base_url": url,
                     "retry": {"max_retries": 0}}, "prompt": "{question}"}
    bench = BenchmarkSession(plan_benchmark({"llm": arm}, items, store=store,
                                            concurrency=3)).run_sync()
    runs = bench.runs
    print(json.dumps({"kinds": runs["failure_kind"].tolist(),
                      "errors": runs["error"].tolist(),
                      "peak_kb": peak_kb()}))
""")


def test_three_60_mb_replies_keep_the_run_small(tmp_path: Path) -> None:
    # before: the replies were read whole (and kept: the journal, the outputs), a run of
    # three took 1.54 GB of RSS; now each is refused at the limit
    with FakeOpenAIServer() as server:
        server.every = Fault("huge-unsized", size=BIG)
        script = tmp_path / "peak.py"
        script.write_text(_PEAK)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run([sys.executable, str(script), server.url, str(tmp_path / "s")],
                              capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
        assert done.returncode == 0, done.stderr[-3000:]
        assert len(server.requests) == 3
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["kinds"] == ["error"] * 3
    assert all("max_reply_bytes=4194304" in e for e in found["errors"])
    assert found["peak_kb"] < 400 * 1024, found["peak_kb"]  # KB on Linux
