"""OpenAI's and Azure OpenAI's Batch API through hr's adapter (``batch_adapter``) and the
``openai`` SDK, against real batch servers on 127.0.0.1 (tests/openai_batch_server.py)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from openai_batch_server import FakeAzureBatchServer, FakeOpenAIBatchServer

from hr_core.models.base import ModelCallError, ModelConfigError
from hr_core.models.batch_api import BatchClient, BatchLimits, BatchOutcome, BatchRequest
from hr_core.models.batching import ProviderBatch, batch_adapter, split_batches
from hr_core.models.mock import MockModel
from hr_core.models.providers.azure import AzureOpenAIChatModel
from hr_core.models.providers.batch_files import BatchCallError, jsonl_lines
from hr_core.models.providers.openai import OpenAIChatModel, Price
from hr_core.models.providers.openai_batch import OPENAI_LIMITS, OpenAIBatchClient

KEY = "sk-test-SECRET-0b7e"
PRICES = {"input": 2.0, "output": 8.0, "cached_input": 0.5}
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}},
          "required": ["answer"], "additionalProperties": False}


def _messages(i: int) -> list[dict[str, str]]:
    return [{"role": "system", "content": "Answer from the document."},
            {"role": "user", "content": f"Document: item {i} is blue.\nQuestion: What colour "
                                        f"is item {i}?"}]


@pytest.fixture()
def server() -> Iterator[FakeOpenAIBatchServer]:
    with FakeOpenAIBatchServer() as running:
        running.book.rates = type(running.book.rates)(input=2.0, output=8.0, cached_input=0.5)
        yield running


def _model(server: FakeOpenAIBatchServer, **kwargs: Any) -> OpenAIChatModel:
    return OpenAIChatModel("gpt-test", base_url=server.url, api_key=KEY, prices=PRICES,
                           timeout=5.0, max_retries=1, **kwargs)


def _requests(adapter: ProviderBatch, n: int, schema: Any = None) -> list[BatchRequest]:
    return [BatchRequest(f"r{i}", adapter.request_body(_messages(i), schema, None))
            for i in range(n)]


def run(coro_fn: Any, adapter: ProviderBatch) -> Any:
    async def go() -> Any:
        try:
            return await coro_fn(adapter.client)
        finally:
            await adapter.client.aclose()

    return asyncio.run(go())


async def _all(client: BatchClient, batch_id: str) -> dict[str, BatchOutcome]:
    return {o.custom_id: o async for o in client.outcomes(batch_id)}


async def _until_ended(client: BatchClient, batch_id: str) -> list[str]:
    states = []
    for _ in range(20):
        status = await client.status(batch_id)
        states.append(status.state)
        if status.state == "ended":
            return states
    raise AssertionError(f"never ended: {states}")


def test_a_batch_is_answered_as_live_calls_are_at_half_the_price(
        server: FakeOpenAIBatchServer) -> None:
    model = _model(server)
    live = asyncio.run(model.complete(_messages(0), schema=SCHEMA))
    live_body = server.requests[-1].body
    adapter = batch_adapter(model)
    assert isinstance(adapter.client, BatchClient)
    requests = _requests(adapter, 3, SCHEMA)
    assert requests[0].body == live_body  # exactly the live call's body

    async def go(client: BatchClient) -> tuple[str, dict[str, BatchOutcome]]:
        batch_id = await client.submit(requests, "nonce-1")
        await _until_ended(client, batch_id)
        return batch_id, await _all(client, batch_id)

    batch_id, outcomes = run(go, adapter)
    assert set(outcomes) == {"r0", "r1", "r2"}
    assert {o.kind for o in outcomes.values()} == {"succeeded"}
    reply = adapter.reply(outcomes["r0"].response or {})
    assert reply.text == live.text and json.loads(reply.text)["answer"]
    assert reply.usage.tokens_in == live.usage.tokens_in
    assert reply.usage.cost_usd == pytest.approx(live.usage.cost_usd / 2)
    # the wire: one JSONL upload (purpose=batch), then the batch with the nonce
    upload = next(r for r in server.requests if r.path == "/v1/files")
    assert upload.headers["authorization"] == f"Bearer {KEY}"
    created = next(r for r in server.requests if r.path == "/v1/batches")
    assert created.body is not None
    assert created.body["metadata"] == {"hr_nonce": "nonce-1"}
    assert created.body["endpoint"] == "/v1/chat/completions"
    assert created.body["completion_window"] == "24h"
    job = server.book.jobs[batch_id]
    assert [c for c, _ in job.requests] == ["r0", "r1", "r2"]
    assert server.book.created == 1 and server.book.twice() == []
    # hr's cost of the three replies is what the server billed at the batch rate
    cost = sum(adapter.reply(o.response or {}).usage.cost_usd or 0 for o in outcomes.values())
    assert cost == pytest.approx(server.book.billed_usd("batch"))


def test_status_moves_through_the_batch_states_with_request_counts(
        server: FakeOpenAIBatchServer) -> None:
    server.book.polls = 3
    adapter = batch_adapter(_model(server))

    async def go(client: BatchClient) -> list[Any]:
        batch_id = await client.submit(_requests(adapter, 6), "n")
        return [await client.status(batch_id) for _ in range(3)]

    first, second, third = run(go, adapter)
    assert (first.state, first.counts["succeeded"], first.counts["processing"]) == (
        "in_progress", 2, 4)
    assert (second.state, second.counts["succeeded"]) == ("in_progress", 4)
    assert (third.state, third.counts["succeeded"], third.counts["processing"]) == (
        "ended", 6, 0)


def test_an_errored_request_is_the_runs_failure_with_the_providers_message(
        server: FakeOpenAIBatchServer) -> None:
    server.book.fail_ids = {"r1"}
    adapter = batch_adapter(_model(server))

    async def go(client: BatchClient) -> tuple[Any, dict[str, BatchOutcome]]:
        batch_id = await client.submit(_requests(adapter, 3), "n")
        await _until_ended(client, batch_id)
        return await client.status(batch_id), await _all(client, batch_id)

    status, outcomes = run(go, adapter)
    assert status.counts["errored"] == 1 and status.counts["succeeded"] == 2
    assert outcomes["r1"].kind == "errored"
    assert "injected error" in outcomes["r1"].message
    failure = adapter.failure(outcomes["r1"])
    assert isinstance(failure, ModelCallError)
    assert "openai:gpt-test" in str(failure) and "injected error" in str(failure)
    assert KEY not in str(failure)
    assert outcomes["r0"].kind == outcomes["r2"].kind == "succeeded"


def test_an_expired_batch_yields_its_unanswered_requests_as_expired_and_bills_none(
        server: FakeOpenAIBatchServer) -> None:
    server.book.expire_after = 2
    adapter = batch_adapter(_model(server))

    async def go(client: BatchClient) -> tuple[Any, dict[str, BatchOutcome]]:
        batch_id = await client.submit(_requests(adapter, 5), "n")
        await _until_ended(client, batch_id)
        return await client.status(batch_id), await _all(client, batch_id)

    status, outcomes = run(go, adapter)
    assert status.counts["expired"] == 3 and status.counts["succeeded"] == 2
    assert status.message == ""  # said only of a batch that failed as a whole
    assert [outcomes[f"r{i}"].kind for i in range(5)] == [
        "succeeded", "succeeded", "expired", "expired", "expired"]
    assert "completion window expired" in outcomes["r4"].message
    assert sum(server.book.answered_ids.values()) == 2  # only the answered are billed


def test_a_cancelled_batch_yields_what_it_answered_and_the_rest_as_canceled(
        server: FakeOpenAIBatchServer) -> None:
    server.book.polls = 3
    adapter = batch_adapter(_model(server))

    async def go(client: BatchClient) -> tuple[list[str], dict[str, BatchOutcome]]:
        batch_id = await client.submit(_requests(adapter, 6), "n")
        await client.status(batch_id)  # two answered
        await client.cancel(batch_id)
        states = await _until_ended(client, batch_id)
        await client.cancel(batch_id)  # an ended batch: nothing to do
        return states, await _all(client, batch_id)

    states, outcomes = run(go, adapter)
    assert states == ["ended"]
    assert sorted(o.kind for o in outcomes.values()) == ["canceled"] * 4 + ["succeeded"] * 2
    assert sum(1 for r in server.requests if r.path.endswith("/cancel")) == 2  # 400, ended
    assert sum(server.book.answered_ids.values()) == 2


def test_find_pages_through_the_batches_for_the_nonce(server: FakeOpenAIBatchServer) -> None:
    adapter = batch_adapter(_model(server))

    async def go(client: BatchClient) -> tuple[str, str | None, str | None]:
        batch_id = await client.submit(_requests(adapter, 2), "mine")
        for i in range(150):  # newer batches of others: the list is newest first
            server.book.create("batch_", [("x", {"model": "m", "messages": []})],
                               {"hr_nonce": f"other-{i}"}, input_file_id="f",
                               endpoint="/v1/chat/completions")
        return (batch_id, await client.find("mine", ["r0", "r1"]),
                await client.find("never-submitted", ["r0", "r1"]))

    batch_id, found, missing = run(go, adapter)
    assert found == batch_id and missing is None
    lists = [r.path for r in server.requests if r.path.startswith("/v1/batches?")]
    assert any("after=" in path for path in lists)  # the second page was asked for


def test_find_tells_a_batch_by_its_files_name_where_metadata_is_dropped() -> None:
    with FakeAzureBatchServer(api_key="az-key") as server:
        server.book.keep_metadata = False
        model = AzureOpenAIChatModel("live-dep", base_url=server.url, api_key="az-key")
        adapter = batch_adapter(model, azure_deployment="gb-dep")

        async def go(client: BatchClient) -> tuple[str, ...]:
            mine = await client.submit(_requests(adapter, 2), "mine")
            other = await client.submit(_requests(adapter, 2), "other")  # same size, newer
            found = await client.find("mine", ["r0", "r1"])
            assert await client.find("mine", ["r0", "r1", "r2"]) is None  # not that size
            return mine, other, str(found)

        mine, other, found = run(go, adapter)
        assert found == mine != other
        assert all(job.metadata == {} for job in server.book.jobs.values())


def test_a_lost_create_reply_is_not_retried_and_find_recovers_the_batch(
        server: FakeOpenAIBatchServer) -> None:
    server.book.lose_replies = 1
    adapter = batch_adapter(_model(server))
    requests = _requests(adapter, 3)

    async def go(client: BatchClient) -> str | None:
        with pytest.raises(BatchCallError, match="creating the batch failed: connection"):
            await client.submit(requests, "nonce-lost")
        return await client.find("nonce-lost", [r.custom_id for r in requests])

    found = run(go, adapter)
    assert server.book.created == 1  # the create call was sent once, never retried
    assert sum(1 for r in server.requests if r.path == "/v1/batches") == 1
    assert found == next(iter(server.book.jobs))


def test_find_lists_at_most_max_pages(server: FakeOpenAIBatchServer) -> None:
    model = _model(server)
    client = OpenAIBatchClient(model._new_client, provider="openai",
                               endpoint="/v1/chat/completions", max_line_bytes=1000,
                               max_pages=2)
    for i in range(500):
        server.book.create("batch_", [("x", {"model": "m", "messages": []})],
                           {"hr_nonce": f"other-{i}"}, input_file_id="f",
                           endpoint="/v1/chat/completions")

    async def go() -> str | None:
        try:
            return await client.find("absent", ["r0"])
        finally:
            await client.aclose()

    assert asyncio.run(go()) is None
    assert sum(1 for r in server.requests if r.path.startswith("/v1/batches?")) == 2


def test_a_batch_over_the_servers_limit_is_refused_and_nothing_is_created(
        server: FakeOpenAIBatchServer) -> None:
    server.book.max_requests = 3
    adapter = batch_adapter(_model(server))

    async def go(client: BatchClient) -> None:
        await client.submit(_requests(adapter, 4), "n")

    with pytest.raises(BatchCallError, match="at most 3 requests"):
        run(go, adapter)
    assert server.book.created == 0 and server.book.refused == 1


def test_split_batches_are_each_within_the_limits_the_server_enforces(
        server: FakeOpenAIBatchServer) -> None:
    limits = BatchLimits(max_requests=4, max_bytes=2_500)
    server.book.max_requests, server.book.max_bytes = limits.max_requests, limits.max_bytes
    model = _model(server)
    client = OpenAIBatchClient(model._new_client, provider="openai",
                               endpoint="/v1/chat/completions", max_line_bytes=1000,
                               limits=limits)
    requests = [BatchRequest(f"r{i}", model.request(_messages(i) if i % 3 else [
        {"role": "user", "content": "é" * 200}], None, None)) for i in range(20)]
    batches = split_batches(requests, limits)
    assert [r for batch in batches for r in batch] == requests
    assert len(batches) > 20 / 4  # some cut at the bytes, not the count

    async def go() -> list[str]:
        try:
            return [await client.submit(batch, f"n{i}") for i, batch in enumerate(batches)]
        finally:
            await client.aclose()

    assert len(asyncio.run(go())) == len(batches)
    assert server.book.refused == 0 and server.book.created == len(batches)
    sizes = [len(server.book.files[job.extra["input_file_id"]])
             for job in server.book.jobs.values()]
    assert max(sizes) > limits.max_bytes * 0.6  # batches are filled, not cut at random
    with pytest.raises(BatchCallError, match="request r0 is"):
        split_batches([BatchRequest("r0", {"pad": "x" * 3000})], limits)


def test_a_batch_over_openais_limits_is_refused_before_any_request(
        server: FakeOpenAIBatchServer) -> None:
    adapter = batch_adapter(_model(server))
    assert adapter.client.limits == OPENAI_LIMITS
    body = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}
    many = [BatchRequest(f"r{i}", body) for i in range(OPENAI_LIMITS.max_requests + 1)]
    bad_id = [BatchRequest("r 0", body)]
    for requests, said in ((many, "at most 50000"), (bad_id, "custom_id")):
        with pytest.raises(BatchCallError, match=said):
            run(lambda c, r=requests: c.submit(r, "n"), batch_adapter(_model(server)))
    model = _model(server)  # the bytes, at a small limit (not 200 MB of memory in a test)
    small = OpenAIBatchClient(model._new_client, provider="openai",
                              endpoint="/v1/chat/completions", max_line_bytes=1000,
                              limits=BatchLimits(10, 1_000_000))
    big = [BatchRequest("r0", {**body, "pad": "x" * 1_000_000})]

    async def submit_big() -> None:
        try:
            await small.submit(big, "n")
        finally:
            await small.aclose()

    with pytest.raises(BatchCallError, match=re.escape(
            "the batch is 1.0 MB; the provider takes at most 1 MB")):
        asyncio.run(submit_big())
    assert server.requests == []


def test_cached_and_reasoning_tokens_are_priced_at_the_batch_rate(
        server: FakeOpenAIBatchServer) -> None:
    server.book.usage = {"cached_tokens": 8, "reasoning_tokens": 3}
    server.reply = lambda body: "the item is blue, as the document says"
    adapter = batch_adapter(_model(server))

    async def go(client: BatchClient) -> dict[str, BatchOutcome]:
        batch_id = await client.submit(_requests(adapter, 2), "n")
        await _until_ended(client, batch_id)
        return await _all(client, batch_id)

    outcomes = run(go, adapter)
    usage = adapter.reply(outcomes["r0"].response or {}).usage
    assert (usage.tokens_cache_read, usage.tokens_reasoning) == (8, 3)
    assert usage.tokens_in is not None and usage.tokens_out is not None
    # by hand: batch rates are half of 2.0 / 0.5 / 8.0 USD per million
    fresh = usage.tokens_in - 8
    expected = (fresh * 1.0 + 8 * 0.25 + usage.tokens_out * 4.0) / 1e6
    assert usage.cost_usd == pytest.approx(expected)
    assert usage.cost_cache_read_usd == pytest.approx(8 * 0.25 / 1e6)
    total = sum(adapter.reply(o.response or {}).usage.cost_usd or 0 for o in outcomes.values())
    assert total == pytest.approx(server.book.billed_usd("batch"))


def test_a_results_line_longer_than_the_bound_is_refused(
        server: FakeOpenAIBatchServer) -> None:
    server.reply = lambda body: "word " * 20_000  # a 100 KB answer
    adapter = batch_adapter(_model(server, max_reply_bytes=1000))  # lines: 1000 B + 64 KiB

    async def go(client: BatchClient) -> dict[str, BatchOutcome]:
        batch_id = await client.submit(_requests(adapter, 1), "n")
        await _until_ended(client, batch_id)
        return await _all(client, batch_id)

    with pytest.raises(BatchCallError, match="longer than"):
        run(go, adapter)


def test_one_adapter_serves_several_event_loops(server: FakeOpenAIBatchServer) -> None:
    adapter = batch_adapter(_model(server))
    requests = _requests(adapter, 2)

    async def submit() -> str:
        try:
            return await adapter.client.submit(requests, "n")
        finally:
            await adapter.client.aclose()

    batch_id = asyncio.run(submit())  # the engine may submit in one loop, collect in another
    outcomes = run(lambda c: _until_ended(c, batch_id), adapter)
    assert outcomes == ["ended"]
    assert {o.kind for o in run(lambda c: _all(c, batch_id), adapter).values()} == {
        "succeeded"}


def test_an_expired_batch_of_long_prompts_is_read_back_from_its_input_file(
        server: FakeOpenAIBatchServer) -> None:
    server.book.expire_after, server.book.list_expired = 0, False  # only in the input file
    adapter = batch_adapter(_model(server, max_reply_bytes=1000))  # results lines: 65 KiB
    long = [{"role": "user", "content": "word " * 40_000}]  # a 200 KB prompt
    requests = [BatchRequest(f"r{i}", adapter.request_body(long, None, None)) for i in range(2)]

    async def go(client: BatchClient) -> dict[str, BatchOutcome]:
        batch_id = await client.submit(requests, "n")
        await _until_ended(client, batch_id)
        return await _all(client, batch_id)

    outcomes = run(go, adapter)
    assert {k: o.kind for k, o in outcomes.items()} == {"r0": "expired", "r1": "expired"}


def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    async def gen() -> AsyncIterator[bytes]:
        for part in parts:
            yield part

    return gen()


def _read(chunks: AsyncIterator[bytes], **bounds: int) -> list[dict[str, Any]]:
    async def go() -> list[dict[str, Any]]:
        return [line async for line in jsonl_lines(chunks, what="file f", **bounds)]

    return asyncio.run(go())


def test_jsonl_lines_reads_lines_split_across_chunks_within_bounds() -> None:
    assert _read(_chunks(b'{"a": 1}\n{"b"', b': 2}\n\n{"c": 3}'), max_line_bytes=100,
                 max_lines=3) == [{"a": 1}, {"b": 2}, {"c": 3}]
    with pytest.raises(BatchCallError, match="more than 2 lines"):
        _read(_chunks(b'{"a": 1}\n{"b": 2}\n{"c": 3}\n'), max_line_bytes=100, max_lines=2)
    with pytest.raises(BatchCallError, match="line 2 is longer than 10 bytes"):
        _read(_chunks(b'{"a": 1}\n', b"x" * 6, b"y" * 6), max_line_bytes=10, max_lines=9)
    with pytest.raises(BatchCallError, match="file f: line 1 is not a JSON object"):
        _read(_chunks(b"[1, 2]\n"), max_line_bytes=100, max_lines=9)


def test_azure_batches_go_to_the_resource_with_the_global_batch_deployment() -> None:
    with FakeAzureBatchServer(api_key="az-key", batch_deployments={"gb-dep"}) as server:
        model = AzureOpenAIChatModel("live-dep", base_url=server.url, api_key="az-key",
                                     timeout=5.0)
        adapter = batch_adapter(model, azure_deployment="gb-dep")
        requests = _requests(adapter, 2)
        assert requests[0].body["model"] == "gb-dep"
        assert requests[0].body["messages"] == model.request(_messages(0), None, None)[
            "messages"]

        async def go(client: BatchClient) -> dict[str, BatchOutcome]:
            batch_id = await client.submit(requests, "n-az")
            assert await client.find("n-az", ["r0", "r1"]) == batch_id
            await _until_ended(client, batch_id)
            return await _all(client, batch_id)

        outcomes = run(go, adapter)
        assert {o.kind for o in outcomes.values()} == {"succeeded"}
        paths = [r.path for r in server.requests]
        assert paths[0].startswith("/openai/files?api-version=")
        assert all("api-version=" in p for p in paths)
        assert {r.headers.get("api-key") for r in server.requests} == {"az-key"}
        job = next(iter(server.book.jobs.values()))
        assert job.extra["endpoint"] == "/chat/completions"


def test_azure_a_deployment_that_is_not_global_batch_fails_the_batch_with_azures_words(
) -> None:
    with FakeAzureBatchServer(api_key="az-key", batch_deployments={"gb-dep"}) as server:
        model = AzureOpenAIChatModel("live-dep", base_url=server.url, api_key="az-key")
        adapter = batch_adapter(model, azure_deployment="standard-dep")

        async def go(client: BatchClient) -> tuple[Any, dict[str, BatchOutcome]]:
            batch_id = await client.submit(_requests(adapter, 2), "n")
            return await client.status(batch_id), await _all(client, batch_id)

        status, outcomes = run(go, adapter)
        assert status.state == "ended" and "not a global batch deployment" in status.message
        assert {o.kind for o in outcomes.values()} == {"errored"}
        assert "not a global batch deployment" in outcomes["r0"].message
        assert server.book.tokens["batch"]["input"] == 0


def test_azure_a_filtered_prompt_is_a_refusal_as_live() -> None:
    with FakeAzureBatchServer(api_key="az-key") as server:
        model = AzureOpenAIChatModel("live-dep", base_url=server.url, api_key="az-key")
        server.inject("content_filter_prompt")
        live = asyncio.run(model.complete(_messages(1)))
        server.book.filter_ids = {"r1"}
        adapter = batch_adapter(model, azure_deployment="gb-dep")

        async def go(client: BatchClient) -> dict[str, BatchOutcome]:
            batch_id = await client.submit(_requests(adapter, 2), "n")
            await _until_ended(client, batch_id)
            return await _all(client, batch_id)

        outcomes = run(go, adapter)
        assert outcomes["r1"].kind == "succeeded"
        refused = adapter.reply(outcomes["r1"].response or {})
        assert (refused.text, refused.finish_reason, refused.refusal) == (
            live.text, live.finish_reason, live.refusal)
        assert refused.refusal == "Azure's content filter refused the prompt (violence)"
        assert adapter.reply(outcomes["r0"].response or {}).refusal is None


def test_only_models_with_a_batch_api_have_an_adapter() -> None:
    with pytest.raises(ModelConfigError, match="batch_deployment"):
        batch_adapter(AzureOpenAIChatModel("d", base_url="http://127.0.0.1:9", api_key="k"))
    compatible = OpenAIChatModel("llama", provider="openai-compatible",
                                 base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ModelConfigError, match="not openai-compatible"):
        batch_adapter(compatible)
    with pytest.raises(ModelConfigError, match="openai, azure-openai, anthropic"):
        batch_adapter(MockModel())


def test_a_malformed_answer_is_a_model_call_error(server: FakeOpenAIBatchServer) -> None:
    adapter = batch_adapter(_model(server))
    with pytest.raises(ModelCallError, match="not a reply"):
        adapter.reply({"id": "x", "object": "chat.completion"})
    priced = adapter.reply({"choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": "ok"}}], "usage": {"prompt_tokens": 1_000_000,
                                                           "completion_tokens": 0}})
    assert priced.text == "ok"
    assert priced.usage.cost_usd == pytest.approx(Price(2.0, 8.0, 0.5).batch().input_per_million)
    asyncio.run(adapter.client.aclose())
