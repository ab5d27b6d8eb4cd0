"""A 2-order pairwise judge through OpenAI's Batch API against the same judge live (issue
34's cost target, the judge's part): ``--n`` items, two answer sets, the judge called live
on the fake OpenAI server of tests/openai_batch_server.py (127.0.0.1, this process), then
through its batches with hr's ``BatchJudging`` (the pieces ``hr compare`` uses), the first
batch made to expire after answering ``--expire`` of its requests (the rest are submitted
again by the next invocation, as ``hr compare`` run again does). The bill is the fake's own
count of the tokens it answered (live at the live rate, batch at half), so a request paid
twice would show.

Prints the live and batch bills, their ratio, the requests billed, the batches created and
whether every verdict equals the live one.

Usage:
    nice -n 10 .venv/bin/python bench/bench_batch_compare.py [--n 1000] [--expire 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from openai_batch_server import FakeOpenAIBatchServer

from hr_core.judge import hr_judge_config
from hr_core.judge.pairwise import ComparisonRow, judge_rows
from hr_core.run.batch.judging import BatchJudging
from hr_core.run.batch.pending import BatchesWaiting

KEY_ENV = "HR_BENCH_JUDGE_KEY"
ARMS = ["right", "half"]


def _reply(body: dict[str, Any]) -> str:
    """The served judge: the candidate equal to the reference (ignoring case) wins."""
    material = json.loads(body["messages"][-1]["content"].split("\n", 1)[1])
    shown, reference = material["candidates"], material["reference"]
    verdict = ("A" if shown["A"].lower() == reference.lower() else
               "B" if shown["B"].lower() == reference.lower() else "tie")
    return json.dumps({"verdict": verdict, "reason": "matches the reference"})


def _rows(n: int) -> list[ComparisonRow]:
    return [ComparisonRow(f"q{i}", 1, f"Which city is number {i}?", f"Paris{i}",
                          (f"Paris{i}", f"paris{i}" if i % 2 else "no idea"))
            for i in range(n)]


def _judge(url: str, batch: bool) -> Any:
    return hr_judge_config({"model": "openai:gpt-judge", "base_url": url,
                            "api_key_env": KEY_ENV, "batch": batch,
                            "prices": {"input": 1.0, "output": 4.0},
                            "params": {"max_tokens": 64}},
                           "Which answer is the reference's?", mode="pairwise")


async def _batched(url: str, rows: list[ComparisonRow], folder: Path) -> Any:
    judge = _judge(url, batch=True)
    judging = BatchJudging(folder, judge, judge.chat_model(), command="the bench", poll_s=0)

    async def judge_pass(model: Any) -> list[dict[str, Any]]:
        return await judge_rows(judge, model, rows, ARMS, 64)

    return await judging.run(judge_pass)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--expire", type=int, default=300)
    args = parser.parse_args()
    os.environ[KEY_ENV] = "sk-bench"
    rows = _rows(args.n)
    with FakeOpenAIBatchServer(reply=_reply) as server, tempfile.TemporaryDirectory() as tmp:
        server.book.max_requests = 10 ** 6
        live_judge = _judge(server.url, batch=False)
        live = asyncio.run(judge_rows(live_judge, live_judge.chat_model(concurrency=64),
                                      rows, ARMS, 64))
        live_bill = server.book.billed_usd("live")
        server.book.expire_after = args.expire  # the first batch expires part answered
        invocations = 1
        try:
            batched = asyncio.run(_batched(server.url, rows, Path(tmp)))
        except BatchesWaiting as exc:
            print(f"first invocation: {exc}")
            server.book.expire_after = None
            invocations += 1
            batched = asyncio.run(_batched(server.url, rows, Path(tmp)))
        batch_bill = server.book.billed_usd("batch")
        billed = sum(server.book.answered_ids.values())
        same = [(r["status"], r["winner"], r["order_verdicts"]) for r in batched] == [
            (r["status"], r["winner"], r["order_verdicts"]) for r in live]
        print(f"{args.n} pairs x 2 orders: live ${live_bill:.6f}, batch ${batch_bill:.6f} "
              f"({batch_bill / live_bill:.2%} of live) over {invocations} invocation(s), "
              f"{server.book.created} batches, {billed} requests billed "
              f"(paid twice: {len(server.book.twice())}), verdicts identical: {same}")


if __name__ == "__main__":
    main()
