"""Fault injection: judging through the OpenAI SDK against a faulty server.

Starts the tests' OpenAI-compatible server on 127.0.0.1 (answering with hr's
offline mock judge), queues a random mix of faults (429 with Retry-After, 500,
503, truncated bodies, malformed JSON, bodies without choices, slow replies
beyond the client timeout) interleaved with good replies, and judges N
pairwise items through ``openai-compatible:mock`` with retries. Prints how many
faults were injected and served, how many calls and attempts were made, how
many calls finally succeeded, and whether every verdict equals the offline
mock's (the ratio of equal verdicts; target 1.0).

Usage:
    .venv/bin/python bench/bench_judge_faults.py [--n 200] [--rate 0.3] [--seed 7]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from openai_server import FakeOpenAIServer, Fault

from hr_core import hr_judge_config
from hr_core.judge import judge_item
from hr_core.models import MockModel
from hr_core.models.providers.openai import OpenAIChatModel

KINDS = ["429", "500", "503", "truncated", "malformed", "empty", "slow"]


def _items(n: int, rng: random.Random) -> list[tuple[str, list[str], str]]:
    cities = ["Paris", "Rome", "Madrid", "Berlin", "Lisbon", "Vienna"]
    out = []
    for i in range(n):
        truth = rng.choice(cities)
        other = rng.choice([c for c in cities if c != truth])
        pair = [truth, other] if rng.random() < 0.5 else [other, truth]
        if rng.random() < 0.2:
            pair = [other, other]
        out.append((f"Question {i}?", pair, truth))
    return out


async def _judge_all(cfg, model, items, concurrency: int):
    semaphore = asyncio.Semaphore(concurrency)

    async def one(item):
        async with semaphore:
            return await judge_item(cfg, model, item=item[0], candidates=item[1],
                                    reference=item[2])

    return await asyncio.gather(*(one(i) for i in items))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--rate", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    cfg = hr_judge_config("openai-compatible:mock", "Which answer is right?", mode="pairwise")
    items = _items(args.n, rng)
    calls = args.n * 2
    plan = []
    for _ in range(int(calls * 1.6)):
        if rng.random() < args.rate:
            kind = rng.choice(KINDS)
            plan.append(Fault(kind, retry_after="0", delay_s=0.6 if kind == "slow" else 0.0))
        else:
            plan.append(Fault("ok"))
    injected = Counter(f.kind for f in plan if f.kind != "ok")
    with FakeOpenAIServer() as server:
        server.inject(*plan)
        model = OpenAIChatModel("mock", provider="openai-compatible", base_url=server.url,
                                api_key="sk-bench", timeout=0.3, max_retries=8,
                                backoff_base_s=0.01, backoff_max_s=0.05, concurrency=8)
        started = time.perf_counter()
        results = asyncio.run(_judge_all(cfg, model, items, 8))
        seconds = time.perf_counter() - started
        served = Counter(r.fault for r in server.requests if r.fault not in (None, "ok"))
    offline = asyncio.run(_judge_all(cfg, MockModel(), items, 64))
    equal = sum(a.verdict == b.verdict and a.status == b.status
                for a, b in zip(results, offline, strict=True))
    ok_calls = calls - model.stats["failed"]
    print(f"faults injected (queued): {sum(injected.values())} {dict(sorted(injected.items()))}")
    print(f"faults served:            {sum(served.values())} {dict(sorted(served.items()))}")
    print(f"calls: {calls}, attempts: {model.stats['attempts']}, "
          f"retries: {model.stats['retries']}, failed calls: {model.stats['failed']}")
    print(f"calls that finally succeeded: {ok_calls}/{calls} ({ok_calls / calls:.3f})")
    print(f"verdicts equal to the offline mock's: {equal}/{args.n} "
          f"(ratio {equal / args.n:.3f}, target 1.000); {seconds:.1f} s")


if __name__ == "__main__":
    main()
