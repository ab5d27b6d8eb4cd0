"""Anthropic's Message Batches through hr's adapter (``batch_adapter``) and the ``anthropic``
SDK, against a real batch server on 127.0.0.1 (tests/anthropic_batch_server.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from anthropic_batch_server import FakeAnthropicBatchServer
from batch_book import Rates

from hr_core.models.base import ModelCallError
from hr_core.models.batch_api import BatchClient, BatchLimits, BatchOutcome, BatchRequest
from hr_core.models.batching import ProviderBatch, batch_adapter, split_batches
from hr_core.models.providers.anthropic import AnthropicChatModel
from hr_core.models.providers.anthropic_batch import ANTHROPIC_LIMITS, AnthropicBatchClient
from hr_core.models.providers.batch_files import BatchCallError, nonce_tag

KEY = "sk-ant-test-SECRET-4c21"
PRICES = {"input": 3.0, "output": 15.0, "cached_input": 0.3, "cache_write": 3.75}


def _messages(i: int) -> list[dict[str, str]]:
    return [{"role": "system", "content": "Answer from the document."},
            {"role": "user", "content": f"Document: item {i} is blue.\nQuestion: What colour "
                                        f"is item {i}?"}]


@pytest.fixture()
def server() -> Iterator[FakeAnthropicBatchServer]:
    with FakeAnthropicBatchServer(api_key=KEY) as running:
        running.book.rates = Rates(input=3.0, output=15.0, cached_input=0.3, cache_write=3.75)
        yield running


def _model(server: FakeAnthropicBatchServer, **kwargs: Any) -> AnthropicChatModel:
    return AnthropicChatModel("claude-test", base_url=server.url, api_key=KEY, prices=PRICES,
                              timeout=5.0, max_retries=1, **kwargs)


def _requests(adapter: ProviderBatch, n: int, start: int = 0) -> list[BatchRequest]:
    return [BatchRequest(f"r{i}", adapter.request_body(_messages(i), None, None))
            for i in range(start, start + n)]


def run(coro_fn: Any, adapter: ProviderBatch) -> Any:
    async def go() -> Any:
        try:
            return await coro_fn(adapter.client)
        finally:
            await adapter.client.aclose()

    return asyncio.run(go())


async def _all(client: BatchClient, batch_id: str) -> dict[str, BatchOutcome]:
    return {o.custom_id: o async for o in client.outcomes(batch_id)}


async def _until_ended(client: BatchClient, batch_id: str) -> None:
    for _ in range(20):
        if (await client.status(batch_id)).state == "ended":
            return
    raise AssertionError("never ended")


def test_a_batch_is_answered_as_live_calls_are_at_half_the_price(
        server: FakeAnthropicBatchServer) -> None:
    model = _model(server)
    live = asyncio.run(model.complete(_messages(0)))
    live_body = server.requests[-1].body
    adapter = batch_adapter(model)
    requests = _requests(adapter, 3)
    assert requests[0].body == live_body  # exactly the live call's body

    async def go(client: BatchClient) -> tuple[str, dict[str, BatchOutcome]]:
        batch_id = await client.submit(requests, "nonce-1")
        await _until_ended(client, batch_id)
        return batch_id, await _all(client, batch_id)

    batch_id, outcomes = run(go, adapter)
    assert set(outcomes) == {"r0", "r1", "r2"}  # the engine's ids, the tag taken off
    assert {o.kind for o in outcomes.values()} == {"succeeded"}
    reply = adapter.reply(outcomes["r0"].response or {})
    assert reply.text == live.text and reply.finish_reason == "stop"
    assert reply.usage.cost_usd == pytest.approx((live.usage.cost_usd or 0) / 2)
    sent = [c for c, _ in server.book.jobs[batch_id].requests]
    assert sent == [f"{nonce_tag('nonce-1')}_r{i}" for i in range(3)]
    created = next(r for r in server.requests if r.path == "/v1/messages/batches")
    assert created.headers["x-api-key"] == KEY and "authorization" not in created.headers
    cost = sum(adapter.reply(o.response or {}).usage.cost_usd or 0 for o in outcomes.values())
    assert cost == pytest.approx(server.book.billed_usd("batch"))
    assert server.book.twice() == []


def test_errored_canceled_and_expired_results_keep_the_providers_words(
        server: FakeAnthropicBatchServer) -> None:
    server.book.fail_ids = {"r1"}
    adapter = batch_adapter(_model(server))
    bad = BatchRequest("r9", {**adapter.request_body(_messages(9), None, None), "seed": 1})

    async def go(client: BatchClient) -> tuple[Any, dict[str, BatchOutcome]]:
        batch_id = await client.submit([*_requests(adapter, 3), bad], "n")
        await _until_ended(client, batch_id)
        return await client.status(batch_id), await _all(client, batch_id)

    status, outcomes = run(go, adapter)
    assert status.counts == {"processing": 0, "succeeded": 2, "errored": 2, "canceled": 0,
                             "expired": 0}
    assert outcomes["r1"].kind == "errored" and "injected error" in outcomes["r1"].message
    assert outcomes["r9"].message == ("invalid_request_error: seed: Extra inputs are not "
                                      "permitted")
    failure = adapter.failure(outcomes["r9"])
    assert isinstance(failure, ModelCallError)
    assert str(failure).startswith("anthropic:claude-test: batch request r9 errored: ")
    assert KEY not in str(failure)


def test_an_expired_batch_and_a_cancelled_one(server: FakeAnthropicBatchServer) -> None:
    server.book.expire_after = 1
    adapter = batch_adapter(_model(server))

    async def go(client: BatchClient) -> tuple[dict[str, BatchOutcome], ...]:
        expired = await client.submit(_requests(adapter, 3), "n1")
        await _until_ended(client, expired)
        server.book.expire_after, server.book.polls = None, 3
        cancelled = await client.submit(_requests(adapter, 6), "n2")
        await client.status(cancelled)  # two answered
        await client.cancel(cancelled)
        assert (await client.status(cancelled)).state == "ended"
        await client.cancel(cancelled)  # ended: nothing to do
        return await _all(client, expired), await _all(client, cancelled)

    expired, cancelled = run(go, adapter)
    assert [expired[f"r{i}"].kind for i in range(3)] == ["succeeded", "expired", "expired"]
    assert sorted(o.kind for o in cancelled.values()) == ["canceled"] * 4 + ["succeeded"] * 2
    assert sum(server.book.answered_ids.values()) == 3  # only the answered are billed


def test_find_tells_its_batch_by_the_tag_of_its_ids(server: FakeAnthropicBatchServer) -> None:
    adapter = batch_adapter(_model(server))

    async def go(client: BatchClient) -> tuple[str, ...]:
        mine = await client.submit(_requests(adapter, 2), "mine")
        await _until_ended(client, mine)
        other = await client.submit(_requests(adapter, 2), "another run")  # same ids, size
        await _until_ended(client, other)
        for i in range(120):  # newer batches of other sizes: a second page
            server.book.create("msgbatch_", [(f"x{i}", {"model": "m"})])
        found = await client.find("mine", ["r0", "r1"])
        assert await client.find("never", ["r0", "r1"]) is None
        return mine, other, str(found)

    mine, other, found = run(go, adapter)
    assert found == mine != other
    assert any("after_id=" in r.path for r in server.requests)


def test_find_lists_at_most_max_pages(server: FakeAnthropicBatchServer) -> None:
    for i in range(500):
        server.book.create("msgbatch_", [(f"x{i}", {"model": "m"})])
    model = _model(server)
    client = AnthropicBatchClient(model._new_client, base_url=server.url, max_line_bytes=1000,
                                  max_pages=2)

    async def go() -> str | None:
        try:
            return await client.find("absent", ["r0", "r1"])
        finally:
            await client.aclose()

    assert asyncio.run(go()) is None
    assert sum(1 for r in server.requests if r.path.startswith("/v1/messages/batches?")) == 2


def test_find_refuses_to_guess_while_a_batch_of_that_size_processes(
        server: FakeAnthropicBatchServer) -> None:
    server.book.polls = 5
    adapter = batch_adapter(_model(server))

    async def go(client: BatchClient) -> None:
        await client.submit(_requests(adapter, 2), "mine")
        await client.find("mine", ["r0", "r1"])

    with pytest.raises(BatchCallError, match="run again when it has"):
        run(go, adapter)
    assert server.book.created == 1


def test_a_lost_create_reply_is_not_retried_and_find_recovers_the_batch(
        server: FakeAnthropicBatchServer) -> None:
    server.book.lose_replies = 1
    adapter = batch_adapter(_model(server))
    requests = _requests(adapter, 3)
    ids = [r.custom_id for r in requests]

    async def go(client: BatchClient) -> str | None:
        with pytest.raises(BatchCallError, match="creating the batch failed: connection"):
            await client.submit(requests, "nonce-lost")
        with pytest.raises(BatchCallError, match="still processing"):
            await client.find("nonce-lost", ids)  # not yet ended: no guess
        job = next(iter(server.book.jobs.values()))
        await asyncio.to_thread(server.book.retrieve, job)  # the provider finishes it
        return await client.find("nonce-lost", ids)

    found = run(go, adapter)
    assert server.book.created == 1
    assert sum(1 for r in server.requests if r.path == "/v1/messages/batches") == 1
    assert found == next(iter(server.book.jobs))


def test_a_batch_over_the_limit_is_refused_by_the_server_and_by_hr(
        server: FakeAnthropicBatchServer) -> None:
    server.book.max_requests = 3
    adapter = batch_adapter(_model(server))
    with pytest.raises(BatchCallError, match="at most 3 requests"):
        run(lambda c: c.submit(_requests(adapter, 4), "n"), adapter)
    assert server.book.created == 0 and server.book.refused == 1
    assert batch_adapter(_model(server)).client.limits == ANTHROPIC_LIMITS
    body = {"model": "claude-test", "max_tokens": 5, "messages": [{"role": "user",
                                                                   "content": "hi"}]}
    many = [BatchRequest(f"r{i}", body) for i in range(ANTHROPIC_LIMITS.max_requests + 1)]
    before = len(server.requests)
    with pytest.raises(BatchCallError, match="at most 100000"):
        run(lambda c: c.submit(many, "n"), batch_adapter(_model(server)))
    long_id = [BatchRequest("r" * 52, body)]  # with the 13-character tag: over 64
    with pytest.raises(BatchCallError, match="custom_id"):
        run(lambda c: c.submit(long_id, "n"), batch_adapter(_model(server)))
    assert len(server.requests) == before


def test_split_batches_are_each_within_the_limits_the_server_enforces(
        server: FakeAnthropicBatchServer) -> None:
    limits = BatchLimits(max_requests=4, max_bytes=2_500)
    server.book.max_requests, server.book.max_bytes = limits.max_requests, limits.max_bytes
    model = _model(server)
    client = AnthropicBatchClient(model._new_client, base_url=server.url, max_line_bytes=1000,
                                  limits=limits)
    requests = [BatchRequest(f"r{i}", model.request(_messages(i) if i % 3 else [
        {"role": "user", "content": "é" * 200}], None, None)) for i in range(20)]
    batches = split_batches(requests, limits)
    assert len(batches) > 20 / 4

    async def go() -> list[str]:
        try:
            return [await client.submit(batch, f"n{i}") for i, batch in enumerate(batches)]
        finally:
            await client.aclose()

    assert len(asyncio.run(go())) == len(batches)
    assert server.book.refused == 0 and server.book.created == len(batches)


def test_cache_reads_and_writes_are_priced_at_the_batch_rate(
        server: FakeAnthropicBatchServer) -> None:
    server.book.usage = {"cache_write": 100, "cache_read": 400}
    adapter = batch_adapter(_model(server))

    async def go(client: BatchClient) -> dict[str, BatchOutcome]:
        batch_id = await client.submit(_requests(adapter, 2), "n")
        await _until_ended(client, batch_id)
        return await _all(client, batch_id)

    outcomes = run(go, adapter)
    usage = adapter.reply(outcomes["r0"].response or {}).usage
    assert (usage.tokens_cache_write, usage.tokens_cache_read) == (100, 400)
    assert usage.tokens_in is not None and usage.tokens_out is not None
    fresh = usage.tokens_in - 500
    # by hand: half of 3.0 (input), 0.3 (read), 3.75 (write), 15.0 (output) USD per million
    expected = (fresh * 1.5 + 400 * 0.15 + 100 * 1.875 + usage.tokens_out * 7.5) / 1e6
    assert usage.cost_usd == pytest.approx(expected)
    total = sum(adapter.reply(o.response or {}).usage.cost_usd or 0 for o in outcomes.values())
    assert total == pytest.approx(server.book.billed_usd("batch"))


def test_results_on_another_host_are_not_read_with_the_key(
        server: FakeAnthropicBatchServer) -> None:
    with FakeAnthropicBatchServer() as elsewhere:
        server.results_host = elsewhere.url
        adapter = batch_adapter(_model(server))

        async def go(client: BatchClient) -> None:
            batch_id = await client.submit(_requests(adapter, 1), "n")
            await _until_ended(client, batch_id)
            await _all(client, batch_id)

        with pytest.raises(BatchCallError, match="another host"):
            run(go, adapter)
        assert elsewhere.requests == []
