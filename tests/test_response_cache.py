"""The SQLite response cache: keys, replay, concurrent threads and processes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from openai_server import FakeOpenAIServer

from hr_core.models.base import ModelReply
from hr_core.models.cache import CachedModel, ResponseCache, cache_key
from hr_core.models.registry import resolve_model
from hr_core.models.scripted import ScriptedModel
from hr_core.results import Usage

ROOT = Path(__file__).resolve().parents[1]
MSGS = [{"role": "user", "content": "hi"}]
BASE = {"provider": "openai", "model": "m", "messages": MSGS, "params": {"temperature": 0},
        "schema": {"type": "object"}, "run": 1}


@pytest.mark.parametrize(
    "change",
    [{"provider": "openai-compatible"}, {"model": "m2"},
     {"messages": [{"role": "user", "content": "hi!"}]}, {"params": {"temperature": 1}},
     {"schema": None}, {"run": 2}],
    ids=lambda c: next(iter(c)),
)
def test_every_part_of_the_key_changes_it(change: dict) -> None:
    assert cache_key(**{**BASE, **change}) != cache_key(**BASE)


def test_key_ignores_dict_order_and_is_stable() -> None:
    a = cache_key(**{**BASE, "params": {"a": 1, "b": 2}})
    b = cache_key(**{**BASE, "params": {"b": 2, "a": 1}})
    assert a == b and len(a) == 64


def test_put_get_round_trip_with_usage(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    cache.put("k", ModelReply("x", Usage(tokens_in=3, tokens_out=1, cost_usd=0.25), False, 1.5))
    hit = cache.get("k")
    assert hit == ModelReply("x", Usage(tokens_in=3, tokens_out=1, cost_usd=0.25), True, 0.0)
    assert cache.get("other") is None and len(cache) == 1


def test_cached_model_replays_and_separates_runs(tmp_path: Path) -> None:
    inner = ScriptedModel(lambda m: "answer")
    model = CachedModel(inner, ResponseCache(tmp_path / "c.sqlite"))

    async def calls() -> list[ModelReply]:
        return [await model.complete(MSGS, run=r) for r in (1, 1, 2, 2)]

    replies = asyncio.run(calls())
    assert [r.cached for r in replies] == [False, True, False, True]
    assert len(inner.calls) == 2 and (model.hits, model.misses) == (2, 2)


def test_failures_are_not_cached(tmp_path: Path) -> None:
    outcomes = iter([RuntimeError("down"), "ok"])

    def reply(messages):
        value = next(outcomes)
        if isinstance(value, Exception):
            raise value
        return value

    model = CachedModel(ScriptedModel(reply), ResponseCache(tmp_path / "c.sqlite"))
    with pytest.raises(RuntimeError):
        asyncio.run(model.complete(MSGS))
    assert asyncio.run(model.complete(MSGS)).text == "ok"


def test_a_rerun_through_the_cache_sends_no_request(tmp_path: Path,
                                                   openai_server: FakeOpenAIServer) -> None:
    def resolve():
        return resolve_model("openai-compatible:m", base_url=openai_server.url, api_key="k",
                             cache=tmp_path / "cache.sqlite")

    first = asyncio.run(resolve().complete(MSGS))
    second = asyncio.run(resolve().complete(MSGS))
    assert len(openai_server.requests) == 1
    assert second.cached and second.text == first.text and second.usage == first.usage


def _write_many(cache: ResponseCache, prefix: str, n: int) -> None:
    for i in range(n):
        cache.put(f"{prefix}-{i}", ModelReply(f"{prefix}{i}"))
        assert cache.get(f"{prefix}-{i}") is not None


_WORKER = """
import sys, threading
from hr_core.models.cache import ResponseCache
from hr_core.models.base import ModelReply
cache = ResponseCache(sys.argv[1])
def run(t):
    for i in range(60):
        cache.put(f"{sys.argv[2]}-{t}-{i}", ModelReply("x"))
threads = [threading.Thread(target=run, args=(t,)) for t in range(3)]
[t.start() for t in threads]; [t.join() for t in threads]
"""


def test_concurrent_threads_and_processes_all_land(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    cache = ResponseCache(path)
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, str(path), f"p{p}"], cwd=ROOT)
             for p in range(2)]
    threads = [threading.Thread(target=_write_many, args=(cache, f"t{t}", 60)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    assert len(cache) == 4 * 60 + 2 * 3 * 60
    mode = cache._connect().execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_the_api_key_is_not_in_the_cache_files(tmp_path: Path,
                                               openai_server: FakeOpenAIServer) -> None:
    key = "sk-cache-SECRET-9d2e"
    model = resolve_model("openai-compatible:m", base_url=openai_server.url, api_key=key,
                          cache=tmp_path / "cache.sqlite")
    asyncio.run(model.complete(MSGS, schema={"type": "object"}, params={"seed": 1}))
    assert openai_server.requests[0].headers["authorization"] == f"Bearer {key}"
    files = list(tmp_path.iterdir())
    assert files and all(key.encode() not in f.read_bytes() for f in files)
    assert key not in repr(model)
