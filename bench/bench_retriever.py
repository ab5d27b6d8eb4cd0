"""The BM25 retriever step of a declarative LLM arm (hr_core/run/retriever.py): planning
(reading and hashing the corpus), the first search (building the index) and later searches.

    .venv/bin/python bench/bench_retriever.py [PASSAGES] [QUERIES]   # default 100000, 1000

A JSONL corpus of PASSAGES synthetic passages (30 words each from a 5,000-word vocabulary,
seed 7) is written to a temporary folder; the arm is normalised as a spec's arm is, then
searched for QUERIES 6-word questions. Prints seconds per phase and the peak RSS.
"""

from __future__ import annotations

import asyncio
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

from hr_core.run.arms import normalise_arms


def main(passages: int, queries: int) -> None:
    rng = random.Random(7)
    words = [f"w{i}" for i in range(5000)]
    with tempfile.TemporaryDirectory(prefix="hr-bm25-") as folder:
        corpus = Path(folder) / "corpus.jsonl"
        with corpus.open("w", encoding="utf-8") as out:
            for i in range(passages):
                out.write(json.dumps({"id": f"p{i}", "text": " ".join(rng.choices(words, k=30))})
                          + "\n")
        arm_spec = {"model": "mock:reader", "prompt": "Context: {contexts}\nQuestion: {question}",
                    "retriever": {"corpus": str(corpus), "k": 10}}
        start = time.perf_counter()
        arm = normalise_arms({"r": arm_spec})["r"]
        planned = time.perf_counter() - start
        retriever = arm.retriever
        assert retriever is not None
        asked = [{"question": " ".join(rng.choices(words, k=6))} for _ in range(queries + 1)]

        async def searches() -> tuple[float, float]:
            begin = time.perf_counter()
            await retriever.search(asked[0])
            first = time.perf_counter() - begin
            begin = time.perf_counter()
            for payload in asked[1:]:
                found = await retriever.search(payload)
                assert len(found) == 10
            return first, time.perf_counter() - begin

        first, rest = asyncio.run(searches())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{passages:,} passages: planning (read, check, hash) {planned:.2f} s; first search "
          f"(builds the index) {first:.2f} s; {queries:,} searches {rest:.2f} s "
          f"({1000 * rest / max(queries, 1):.2f} ms each); peak RSS {peak:.0f} MB")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000,
         int(sys.argv[2]) if len(sys.argv) > 2 else 1000)
