"""An unreachable model endpoint is halted, as an exhausted quota is (issue 30 item 7).

Before: an OpenAI-compatible endpoint that was down (connection refused) made a 20-item
``hr run`` retry every call 5 times and exit 3 with 20 ``error`` runs, "gave up after 5
attempt(s) ... connection error (ConnectError)", without the URL.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic  # noqa: F401  (imported here: the timings below are the calls', not imports)
import openai  # noqa: F401
import pytest
from openai_server import FakeOpenAIServer

from hr_core.models.providers.anthropic import AnthropicChatModel
from hr_core.models.providers.openai import OpenAIChatModel
from hr_core.models.ratelimit.endpoint import EndpointStoppedError, reset_limiters
from hr_core.models.ratelimit.limiter import EndpointLimiter
from hr_core.models.ratelimit.reach import (
    EXIT_HALTED,
    UNREACHABLE_AFTER,
    UNREACHABLE_MIN_S,
    EndpointsHalted,
    Reach,
)

HR = str(Path(sys.executable).with_name("hr"))
ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-unreach-SECRET-0d4e"
MSGS = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture(autouse=True)
def _fresh_limiters() -> Iterator[None]:
    reset_limiters()
    yield
    reset_limiters()


def _closed_port() -> int:
    """A port nothing listens on: bound, then closed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _calls(model: object, n: int) -> list[BaseException | object]:
    async def many() -> list[BaseException | object]:
        try:
            return await asyncio.gather(*(model.complete(MSGS) for _ in range(n)),  # type: ignore[attr-defined]
                                        return_exceptions=True)
        finally:
            await model.aclose()  # type: ignore[attr-defined]

    return asyncio.run(many())


@pytest.mark.parametrize("provider", ["openai-compatible", "anthropic"])
def test_a_refused_endpoint_is_halted_within_seconds_naming_its_url(provider: str) -> None:
    port = _closed_port()
    if provider == "anthropic":
        model: object = AnthropicChatModel("claude-test", base_url=f"http://127.0.0.1:{port}",
                                           api_key=KEY)
    else:  # a user, password and query secret in the URL are never shown
        model = OpenAIChatModel("m", provider=provider, api_key=KEY,
                                base_url=f"http://user:pw-SECRET@127.0.0.1:{port}/v1?t=SECRET")
    started = time.monotonic()
    outcomes = _calls(model, 5)
    took = time.monotonic() - started
    assert took < 15, took
    assert all(isinstance(o, EndpointStoppedError) for o in outcomes), outcomes
    reason = str(outcomes[0])
    assert f"127.0.0.1:{port}" in reason and "unreachable" in reason, reason
    assert "SECRET" not in reason and "pw" not in reason and KEY not in reason


def test_a_name_that_does_not_resolve_is_halted() -> None:
    model = OpenAIChatModel("m", provider="openai-compatible",
                            base_url="http://hr-no-such-host.invalid/v1")
    started = time.monotonic()
    outcomes = _calls(model, 2)
    assert time.monotonic() - started < 15
    assert all(isinstance(o, EndpointStoppedError) for o in outcomes), outcomes
    assert "http://hr-no-such-host.invalid/v1" in str(outcomes[0])


def test_answers_between_refused_connections_start_the_row_again() -> None:
    now = [0.0]
    reach = Reach(lambda: now[0])
    for _ in range(10):  # a refusal now and then while the server answers: never halted
        assert not reach.failed()
        now[0] += 1.0
        reach.answered()
    # four at once (concurrent calls, a server restarting): not yet; a while later: down
    assert [reach.failed() for _ in range(UNREACHABLE_AFTER)] == [False] * UNREACHABLE_AFTER
    now[0] += UNREACHABLE_MIN_S
    assert reach.failed() and reach.down
    # any HTTP answer handed back to the endpoint's limiter starts the row again
    limiter = EndpointLimiter("openai:http://127.0.0.1:9/v1")

    async def one() -> None:
        permit = await limiter.acquire(10)
        limiter.reach.failed()
        limiter.release(permit, "server_error", headers={"x-request-id": "1"})

    asyncio.run(one())
    assert not limiter.reach.down


SPEC = """\
name: deadend
reference: ref.jsonl
arms:
  llm:
    model: openai-compatible:m
    base_url: http://127.0.0.1:{port}/v1
    api_key_env: HR_TEST_DEAD_KEY
    prompt: "Document: Paris is the capital of France.\\nQuestion: {{question}}"
store: store
concurrency: 4
"""


@pytest.fixture(scope="module")
def api_url(prefect_harness: None) -> str:
    from prefect.settings import PREFECT_API_URL

    return str(PREFECT_API_URL.value())


def _journal(project: Path) -> list[dict[str, object]]:
    found = list((project / "store" / "deadend").glob("*/journal.jsonl"))
    if not found:
        return []
    return [json.loads(x) for x in found[0].read_text().split("\n") if x.strip()]


def test_hr_run_against_a_dead_endpoint_stops_in_seconds_and_a_later_run_makes_the_runs(
        tmp_path: Path, api_url: str) -> None:
    port = _closed_port()
    with (tmp_path / "ref.jsonl").open("w") as handle:
        for i in range(20):
            handle.write(json.dumps({"id": f"i{i}", "question": f"What is the capital of "
                                     f"France? (#{i})", "label": "Paris"}) + "\n")
    (tmp_path / "dead.yaml").write_text(SPEC.format(port=port))
    env = {**os.environ, "PREFECT_API_URL": api_url, "COLUMNS": "200",
           "HR_TEST_DEAD_KEY": KEY, "PYTHONPATH": str(ROOT)}

    def hr_run() -> tuple[subprocess.CompletedProcess[str], float]:
        started = time.monotonic()
        done = subprocess.run([HR, "run", "dead.yaml"], cwd=tmp_path, env=env, text=True,
                              capture_output=True, timeout=300)
        return done, time.monotonic() - started

    done, took = hr_run()
    assert done.returncode == EXIT_HALTED, (done.returncode, done.stderr[-2000:])
    url = f"http://127.0.0.1:{port}/v1"
    lines = [x for x in done.stderr.splitlines() if x.startswith("hr: error:")]
    assert len(lines) == 1 and url in lines[0] and "unreachable" in lines[0], done.stderr
    assert "20 run(s) of llm not made" in lines[0] and "run the same benchmark again" in lines[0]
    assert KEY not in done.stdout + done.stderr
    # the halt came after a few refused connections, not after minutes of retries
    span = float(re.search(r"failed over ([0-9.]+) s", lines[0]).group(1))  # type: ignore[union-attr]
    assert span < 15 and took < 120, (span, took)
    assert _journal(tmp_path) == []  # nothing scored wrong (nor made): 20 budget stops
    # the endpoint is up again: the same command makes the 20 runs
    with FakeOpenAIServer(port=port) as server:
        again, _ = hr_run()
        sent = len(server.requests)
    assert again.returncode == 0, again.stderr[-2000:]
    assert sent == 20
    records = _journal(tmp_path)
    assert len(records) == 20 and all(r.get("failure_kind") is None for r in records)


def test_a_scheduled_run_whose_endpoint_is_halted_fails_without_a_regression_check(
        tmp_path: Path, prefect_harness: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from flows.scheduled import hr_scheduled_benchmark

    monkeypatch.setenv("HR_TEST_DEAD_KEY", KEY)
    (tmp_path / "ref.jsonl").write_text("".join(
        json.dumps({"id": f"i{i}", "question": f"Q{i}", "label": "Paris"}) + "\n"
        for i in range(6)))
    spec = tmp_path / "dead.yaml"
    spec.write_text(SPEC.format(port=_closed_port()))
    with pytest.raises(EndpointsHalted, match=r"^deadend: .*127\.0\.0\.1.*unreachable.*"
                                              r"llm not made.*run the same benchmark again"):
        asyncio.run(hr_scheduled_benchmark(str(spec), store=str(tmp_path / "store")))
    # no regression check of the partial run: no diff page, no regression artifact
    assert not list((tmp_path / "store").glob("*/*/diff-*.html"))
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactCollectionFilter,
        ArtifactCollectionFilterKey,
    )

    from tasks.regression import regression_artifact_key

    async def artifacts() -> list[object]:
        flt = ArtifactCollectionFilter(
            key=ArtifactCollectionFilterKey(any_=[regression_artifact_key("deadend")]))
        async with get_client() as client:
            return list(await client.read_latest_artifacts(artifact_filter=flt))

    assert asyncio.run(artifacts()) == []


def test_a_benchmark_flow_run_whose_endpoint_is_halted_ends_failed_with_its_results(
        tmp_path: Path, prefect_harness: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dashboard-monitored hr-benchmark run (a deployment's, or ``hr_benchmark`` from
    Python) whose endpoint was halted is not a finished run: its flow run ends Failed
    with the one-line reason (it ended Completed), and the call raises EndpointsHalted
    carrying the results written so far (it returned them as if all were made)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    from flows import hr_benchmark

    monkeypatch.setenv("HR_TEST_DEAD_KEY", KEY)
    (tmp_path / "ref.jsonl").write_text("".join(
        json.dumps({"id": f"i{i}", "question": f"Q{i}", "label": "Paris"}) + "\n"
        for i in range(6)))
    spec = tmp_path / "dead.yaml"
    spec.write_text(SPEC.format(port=_closed_port()).replace("name: deadend",
                                                             "name: deadend-flow"))
    with pytest.raises(EndpointsHalted, match=r"^deadend-flow: .*127\.0\.0\.1.*unreachable"
                                              r".*6 run\(s\) of llm not made") as caught:
        hr_benchmark(str(spec), store=str(tmp_path / "store"))
    bench = caught.value.benchmark
    assert bench is not None and (Path(bench.run_dir) / "runs.parquet").exists()
    assert bench.runs["failure_kind"].eq("budget_stop").all()

    async def states() -> list[tuple[str, str]]:
        flt = FlowRunFilter(name=FlowRunFilterName(like_="deadend-flow-"))
        async with get_client() as client:
            runs = await client.read_flow_runs(flow_run_filter=flt)
        return [(str(r.state.type.value), str(r.state.message)) for r in runs if r.state]

    (state, message), = asyncio.run(states())
    assert state == "FAILED", (state, message)
    assert "EndpointsHalted" in message and "llm not made" in message and KEY not in message
