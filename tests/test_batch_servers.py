"""The fake batch servers speak each wire format as the providers' SDKs expect (raw SDK calls,
no hr code): what the adapters' and the batch engine's tests rely on."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import openai
import pytest
from anthropic_batch_server import FakeAnthropicBatchServer
from openai_batch_server import FakeAzureBatchServer, FakeOpenAIBatchServer


def _jsonl(n: int, url: str = "/v1/chat/completions", model: str = "gpt-x") -> bytes:
    return "".join(json.dumps({"custom_id": f"r{i}", "method": "POST", "url": url, "body": {
        "model": model, "messages": [{"role": "user", "content": f"What is {i}?"}]}}) + "\n"
        for i in range(n)).encode()


async def _openai_batch(client: Any, data: bytes, endpoint: str = "/v1/chat/completions",
                        **metadata: str) -> Any:
    uploaded = await client.files.create(file=("b.jsonl", data), purpose="batch")
    return await client.batches.create(input_file_id=uploaded.id, endpoint=endpoint,
                                       completion_window="24h", metadata=metadata or None)


def test_openai_states_files_pagination_and_counters() -> None:
    with FakeOpenAIBatchServer() as server:
        server.book.polls = 3

        async def go() -> dict[str, Any]:
            client = openai.AsyncOpenAI(api_key="k", base_url=server.url)
            try:
                one = await _openai_batch(client, _jsonl(1), nonce="a")
                states = [one.status] + [(await client.batches.retrieve(one.id)).status
                                         for _ in range(3)]
                server.book.polls = 1
                for i in range(4):
                    await _openai_batch(client, _jsonl(2), nonce=f"b{i}")
                listed = [b.id async for b in client.batches.list(limit=2)]  # auto-paging
                done = await client.batches.retrieve(one.id)
                output = (await client.files.content(done.output_file_id)).text
                return {"states": states, "listed": listed, "one": one.id,
                        "output": output}
            finally:
                await client.close()

        seen = asyncio.run(go())
        assert seen["states"] == ["validating", "finalizing", "finalizing", "completed"]
        assert len(seen["listed"]) == 5 and seen["listed"][-1] == seen["one"]  # newest first
        line = json.loads(seen["output"])
        assert line["custom_id"] == "r0" and line["error"] is None
        assert line["response"]["status_code"] == 200
        assert line["response"]["body"]["object"] == "chat.completion"
        book = server.book
        assert book.created == 5 and book.submitted["r0"] == 5 and book.submitted["r1"] == 4
        assert book.tokens["live"]["input"] == 0 and book.tokens["batch"]["output"] > 0


def test_openai_a_bad_input_file_fails_the_batch_with_line_numbers() -> None:
    with FakeOpenAIBatchServer() as server:
        bad = _jsonl(2) + b'{"custom_id": "r0", "method": "GET", "url": "/v1/x", "body": {}}\n'

        async def go() -> Any:
            client = openai.AsyncOpenAI(api_key="k", base_url=server.url)
            try:
                return await _openai_batch(client, bad)
            finally:
                await client.close()

        batch = asyncio.run(go())
        assert batch.status == "failed"
        assert batch.errors.data[0].line == 3
        assert "method must be POST" in batch.errors.data[0].message


def test_live_calls_are_billed_at_the_live_rate() -> None:
    with FakeOpenAIBatchServer() as server:
        async def go() -> Any:
            client = openai.AsyncOpenAI(api_key="k", base_url=server.url)
            try:
                return await client.chat.completions.create(
                    model="gpt-x", messages=[{"role": "user", "content": "one two three"}])
            finally:
                await client.close()

        completion = asyncio.run(go())
        rates = server.book.rates
        assert completion.usage is not None
        expected = (completion.usage.prompt_tokens * rates.input
                    + completion.usage.completion_tokens * rates.output) / 1e6
        assert server.book.billed_usd("live") == pytest.approx(expected)
        assert server.book.billed_usd("batch") == 0


def test_azure_checks_api_version_and_key_on_batch_routes() -> None:
    with FakeAzureBatchServer(api_key="az-key") as server:
        async def go(key: str, version: str | None) -> Any:
            client = openai.AsyncOpenAI(api_key="x", base_url=f"{server.url}/openai",
                                        default_headers={"api-key": key},
                                        default_query={"api-version": version} if version
                                        else None)
            try:
                return await client.batches.list()
            finally:
                await client.close()

        with pytest.raises(openai.BadRequestError, match="api-version"):
            asyncio.run(go("az-key", None))
        with pytest.raises(openai.AuthenticationError):
            asyncio.run(go("wrong", "2024-10-21"))
        assert asyncio.run(go("az-key", "2024-10-21")).data == []


def test_anthropic_ids_results_and_pagination() -> None:
    with FakeAnthropicBatchServer() as server:
        def requests(n: int, ids: list[str] | None = None) -> list[Any]:
            return [{"custom_id": (ids or [f"r{i}" for i in range(n)])[i], "params": {
                "model": "claude-x", "max_tokens": 20,
                "messages": [{"role": "user", "content": "hi"}]}} for i in range(n)]

        async def go() -> dict[str, Any]:
            client = anthropic.AsyncAnthropic(api_key="k", base_url=server.url)
            try:
                seen: dict[str, Any] = {}
                for ids in (["bad id"], ["r0", "r0"]):
                    try:
                        await client.messages.batches.create(requests=requests(len(ids), ids))
                    except anthropic.BadRequestError as exc:
                        seen.setdefault("refused", []).append(str(exc))
                server.book.polls = 3  # results() retrieves the batch first: a poll
                batch = await client.messages.batches.create(requests=requests(3))
                try:
                    await client.messages.batches.results(batch.id)
                except anthropic.AnthropicError as exc:  # no results_url yet
                    seen["early"] = str(exc)
                first = await client.messages.batches.retrieve(batch.id)
                done = await client.messages.batches.retrieve(batch.id)
                seen["counts"] = (first.request_counts, done.request_counts)
                seen["results"] = [r async for r in await client.messages.batches.results(
                    batch.id)]
                for _ in range(3):
                    await client.messages.batches.create(requests=requests(1))
                seen["listed"] = [b.id async for b in client.messages.batches.list(limit=2)]
                seen["first"] = batch.id
                return seen
            finally:
                await client.close()

        seen = asyncio.run(go())
        assert len(seen["refused"]) == 2 and "pattern" in seen["refused"][0]
        assert "duplicate" in seen["refused"][1]
        assert "No `results_url`" in seen["early"]
        first, done = seen["counts"]
        assert (first.processing, first.succeeded) == (1, 2)
        assert (done.processing, done.succeeded) == (0, 3)
        assert [r.custom_id for r in seen["results"]] == ["r0", "r1", "r2"]
        assert {r.result.type for r in seen["results"]} == {"succeeded"}
        assert len(seen["listed"]) == 4 and seen["listed"][-1] == seen["first"]
        assert server.book.created == 4  # the refused ones were never created
