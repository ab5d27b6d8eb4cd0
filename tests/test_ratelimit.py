"""Rate limits never become failures: hr's LLM arms against a real rate-limited server.

The server (tests/ratelimit_server.py) enforces requests and tokens per minute as
hosted APIs do (429, ``Retry-After``, ``retry-after-ms``, ``x-ratelimit-*``), a
hard quota (``insufficient_quota``) and injected 5xx; it knows the right answer of
70% of the items, so the accuracy of a run that lost nothing is exactly 0.7.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ratelimit_server import RateLimitedServer

from hr_core.models.base import ModelCallError
from hr_core.models.providers.openai import OpenAIChatModel
from hr_core.models.ratelimit.endpoint import (
    EndpointLimiter,
    limiter_for,
    read_rate_headers,
    reset_limiters,
)
from hr_core.run.session import BenchmarkSession, plan_benchmark


def _items(n: int) -> list[dict[str, Any]]:
    return [{"id": f"i{i}", "question": f"Q{i}: what is the code word?" + " pad" * (i % 7),
             "label": f"code{i}"} for i in range(n)]


def _answers(n: int) -> dict[str, str]:
    """The server knows 7 answers in 10."""
    return {str(i): f"code{i}" for i in range(n) if i % 10 < 7}


@pytest.fixture(autouse=True)
def _fresh_limiters() -> Iterator[None]:
    reset_limiters()
    yield
    reset_limiters()


def _run(server: RateLimitedServer, n: int, tmp_path: Path, **kwargs: Any) -> Any:
    arm = {"model": "openai-compatible:rl", "base_url": server.url,
           "prompt": "{question}", **kwargs.pop("arm", {})}
    plan = plan_benchmark({"llm": arm}, _items(n), store=str(tmp_path), **kwargs)
    return BenchmarkSession(plan).run_sync()


def _kinds(bench: Any) -> dict[str, int]:
    return bench.runs["failure_kind"].fillna("correct").value_counts().to_dict()


@pytest.mark.parametrize("headers", [False, True], ids=["retry-after only", "x-ratelimit"])
def test_a_429_storm_loses_no_item_and_the_accuracy_is_the_true_one(
        tmp_path: Path, headers: bool) -> None:
    n = 40
    with RateLimitedServer(rpm=1200, burst_s=0.25, latency_s=0.05, answers=_answers(n),
                           rate_headers=headers) as server:
        bench = _run(server, n, tmp_path, concurrency=32)
        counts, url = server.counts, server.url
    kinds = _kinds(bench)
    assert kinds == {"correct": 28, "wrong": 12}, kinds  # nothing lost, accuracy 0.7
    assert counts.answered == n
    if not headers:  # 32 at once against a bucket of 5: a storm, waited out
        assert counts.rate_limited > 0
    limits = bench.manifest["rate_limits"]
    assert [e["endpoint"] for e in limits] == [f"openai-compatible:{url}"]
    assert limits[0]["rate_limited"] == counts.rate_limited and limits[0]["ok"] == n
    if not headers:  # the limit's changes: (seconds, concurrency, req/min paced, why)
        seconds, concurrency, _, why = limits[0]["history"][0]
        assert why == "rate_limit" and concurrency < 32 and seconds >= 0


def test_retry_after_pauses_the_whole_endpoint(tmp_path: Path) -> None:
    # 90 RPM, a bucket of one: every 429 says how long until the next request fits
    with RateLimitedServer(rpm=90, burst_s=0.5, latency_s=0.0, answers=_answers(6),
                           rate_headers=False) as server:
        model = OpenAIChatModel("rl", provider="openai-compatible", base_url=server.url,
                                concurrency=6)

        async def many() -> list[Any]:
            return await asyncio.gather(*(model.complete(
                [{"role": "user", "content": f"Q{i}"}]) for i in range(6)))

        replies = asyncio.run(many())
        refusals = list(server.counts.refusals)
        log = list(server.counts.log)
    assert [r.text for r in replies] == [f"code{i}" for i in range(6)]
    assert refusals, "the server never said 429"
    for at, wait in refusals:
        # requests sent before the client read the 429 may still arrive; after that
        # (0.25 s here, a loaded machine) none of any call arrives until the wait is over
        inside = [t for t, _, _ in log if at + 0.25 < t < at + wait - 0.005]
        assert inside == [], (at, wait, inside)
    for i in range(6):  # and each call's own retry waited at least what it was told
        mine = [(t, d) for t, text, d in log if text == f"Q{i}"]
        for (t, decision), (later, _) in itertools.pairwise(mine):
            if decision == "429":
                wait = dict(refusals)[t]
                assert later >= t + wait - 0.005, (i, t, wait, later)


def test_a_hard_quota_stops_calling_and_the_runs_not_made_are_budget_stops(
        tmp_path: Path) -> None:
    n = 40
    with RateLimitedServer(latency_s=0.02, quota_after=5, answers=_answers(n)) as server:
        bench = _run(server, n, tmp_path, concurrency=4)
        sent = server.counts.requests
        kinds = _kinds(bench)
        runs = bench.runs
        # the answered ones, one quota error, the rest never sent: at most the 4 in flight
        assert sent <= 5 + 4, sent
        assert kinds["error"] == 1 and kinds["budget_stop"] >= n - 9, kinds
        stops = runs[runs["failure_kind"] == "budget_stop"]
        assert stops["error"].str.contains("quota exhausted").all()
        error = runs.loc[runs["failure_kind"] == "error", "error"].iloc[0]
        assert "insufficient_quota" in error or "quota" in error
        assert "quota exhausted" in bench.manifest["halts"]["llm"]
        # the quota is topped up: a resume makes the runs not made, and only those
        server.quota_after = None
        reset_limiters()  # a new process: the halt was this process's
        again = _run(server, n, tmp_path, concurrency=4)
        assert server.counts.requests - sent == kinds["budget_stop"]
    assert "budget_stop" not in _kinds(again)


def test_server_errors_are_retried_and_lose_nothing(tmp_path: Path) -> None:
    n = 40
    with RateLimitedServer(rpm=6000, latency_s=0.02, error_rate=0.2, answers=_answers(n),
                           seed=3) as server:
        bench = _run(server, n, tmp_path, concurrency=8,
                     arm={"params": {"temperature": 0}})
        assert server.counts.server_errors > 0
    assert _kinds(bench) == {"correct": 28, "wrong": 12}


def test_an_unlucky_call_is_not_lost_to_transient_errors_while_its_endpoint_answers(
        tmp_path: Path) -> None:
    # one item's first 4 attempts are 503s while the server answers every other item;
    # no deadline is near. Before: the item was lost ("gave up after 3 attempt(s)",
    # max_retries 2) though the endpoint was up all along
    n = 40
    with RateLimitedServer(rpm=1200, latency_s=0.02, answers=_answers(n),
                           fail_first={"3": 4}) as server:
        spec = {"provider": "openai-compatible", "model": "rl", "base_url": server.url,
                "retry": {"max_retries": 2, "backoff_base_s": 0.05, "backoff_max_s": 0.1}}
        plan = plan_benchmark({"llm": {"model": spec, "prompt": "{question}"}}, _items(n),
                              store=str(tmp_path), concurrency=4)
        bench = BenchmarkSession(plan).run_sync()
        errors = server.counts.server_errors
    assert _kinds(bench) == {"correct": 28, "wrong": 12}
    assert errors == 4  # all four met, then answered
    # an endpoint that answers nothing still fails a call after max_retries + 1 attempts
    with RateLimitedServer(latency_s=0.0, error_rate=1.0) as down:
        model = OpenAIChatModel("rl", provider="openai-compatible", base_url=down.url,
                                max_retries=2, backoff_base_s=0.01, backoff_max_s=0.02)
        with pytest.raises(ModelCallError, match=r"gave up after 3 attempt\(s\)"):
            asyncio.run(model.complete([{"role": "user", "content": "Q1"}]))
        assert down.counts.requests == 3


def test_rate_limited_calls_wait_until_the_run_deadline_and_no_longer(tmp_path: Path) -> None:
    # one request per 30 s: after the first, every call is rate limited for long
    with RateLimitedServer(rpm=2, burst_s=30, latency_s=0.0, answers=_answers(3)) as server:
        started = time.monotonic()
        bench = _run(server, 3, tmp_path, concurrency=3, timeout_s=1.0)
        assert time.monotonic() - started < 10
        runs = bench.runs
        assert (runs["failure_kind"] == "error").sum() == 2
        assert runs["error"].dropna().str.contains("timed out after 1 s").all()
        # the budget's time is a deadline too: runs in flight then are budget stops
        started = time.monotonic()
        bench = _run(server, 3, tmp_path / "budget", concurrency=3,
                     budget={"max_seconds": 1.0}, fresh=True)
        assert time.monotonic() - started < 10
        assert set(_kinds(bench)) <= {"budget_stop", "correct"}
        # without a deadline a call waits rate_limit_wait_s, then fails saying why
        model = OpenAIChatModel("rl", provider="openai-compatible", base_url=server.url,
                                rate_limit_wait_s=0.5)
        with pytest.raises(ModelCallError, match="rate limited"):
            asyncio.run(model.complete([{"role": "user", "content": "Q1"}]))


def test_a_tokens_per_minute_limit_is_paced_from_the_headers(tmp_path: Path) -> None:
    n = 30
    with RateLimitedServer(tpm=12_000, burst_s=0.5, latency_s=0.02,
                           answers=_answers(n)) as server:
        bench = _run(server, n, tmp_path, concurrency=16)
        counts = server.counts
    assert _kinds(bench) == {"correct": 21, "wrong": 9}
    limits = bench.manifest["rate_limits"][0]
    assert limits["tpm"] == 12_000  # learned from x-ratelimit-limit-tokens
    assert counts.rate_limited <= 3, counts.rate_limited


@pytest.mark.parametrize("limit, value", [("rpm", 1200), ("tpm", 12_000)])
def test_the_model_specs_rpm_and_tpm_pace_the_calls_from_the_first_one(
        tmp_path: Path, limit: str, value: int) -> None:
    # a server that announces nothing (no x-ratelimit-* headers): without the spec's
    # rate hr only learns it from 429s (test_a_429_storm...: a storm at 32 at once)
    n = 30
    with RateLimitedServer(**{limit: value}, burst_s=0.5, latency_s=0.02,
                           rate_headers=False, answers=_answers(n)) as server:
        spec = {"provider": "openai-compatible", "model": "rl", "base_url": server.url,
                limit: value}
        plan = plan_benchmark({"llm": {"model": spec, "prompt": "{question}"}}, _items(n),
                              store=str(tmp_path), concurrency=32)
        bench = BenchmarkSession(plan).run_sync()
        counts = server.counts
    assert _kinds(bench) == {"correct": 21, "wrong": 9}
    limits = bench.manifest["rate_limits"][0]
    assert limits[limit] == value  # from the spec, before any reply said anything
    # paced at 99% of it, at most 3 calls at once after a stall: a loaded machine may
    # bunch a few arrivals at the server, never a storm
    assert counts.rate_limited <= 3, counts.rate_limited
    assert plan.run_id == plan_benchmark(  # pacing decides no answer: the same run
        {"llm": {"model": {**spec, limit: value * 2}, "prompt": "{question}"}}, _items(n),
        store=str(tmp_path)).run_id


def test_one_limiter_per_endpoint_and_key_name_shared_and_never_holding_the_key() -> None:
    a = OpenAIChatModel("m1", provider="openai-compatible", base_url="http://127.0.0.1:9/v1",
                        api_key="sk-SECRET-123456", concurrency=4)
    b = OpenAIChatModel("m2", provider="openai-compatible", base_url="http://127.0.0.1:9/v1/",
                        api_key="sk-SECRET-123456", concurrency=6)
    c = OpenAIChatModel("m1", provider="openai-compatible", base_url="http://127.0.0.1:9/v1",
                        api_key="sk-OTHER-654321")
    shared = a._limiter()
    assert b._limiter() is shared and c._limiter() is not shared
    assert shared.ceiling == 10  # the models' concurrency added up
    assert "SECRET" not in repr(shared.snapshot()) and "SECRET" not in shared.label
    env = limiter_for("openai", None, "OPENAI_API_KEY")
    assert env.label == "openai:default"


def test_headers_are_read_in_every_form() -> None:
    h = read_rate_headers({"x-ratelimit-limit-requests": "600",
                           "x-ratelimit-remaining-requests": "0",
                           "x-ratelimit-reset-requests": "6m0s",
                           "x-ratelimit-reset-tokens": "120ms", "retry-after": "3"})
    assert (h.limit_requests, h.remaining_requests, h.reset_requests_s) == (600, 0, 360)
    assert h.reset_tokens_s == pytest.approx(0.12) and h.retry_after_s == 3
    assert read_rate_headers({"retry-after-ms": "250", "retry-after": "1"}).retry_after_s == 0.25
    assert read_rate_headers({"retry-after": "soon"}).retry_after_s is None
    anthropic = read_rate_headers({"anthropic-ratelimit-requests-limit": "50",
                                   "anthropic-ratelimit-requests-remaining": "49"})
    assert (anthropic.limit_requests, anthropic.remaining_requests) == (50, 49)


def test_a_halted_limiter_refuses_waiters_and_newcomers() -> None:
    limiter = EndpointLimiter("x", ceiling=1)

    async def scenario() -> list[str]:
        first = await limiter.acquire()
        waiting = asyncio.ensure_future(limiter.acquire())
        await asyncio.sleep(0.01)
        assert limiter.halt("quota exhausted")
        assert not limiter.halt("again")
        outcomes = []
        for call in (waiting, asyncio.ensure_future(limiter.acquire())):
            try:
                await call
            except Exception as exc:  # EndpointHalted
                outcomes.append(str(exc))
        limiter.release(first, "error")
        return outcomes

    assert asyncio.run(scenario()) == ["quota exhausted", "quota exhausted"]
