"""hr's own CPU per batched request (issue 34, target: at most 1 ms, over 10,000 requests).

Starts the fake batch server (tests/openai_batch_server.py or tests/anthropic_batch_server.py)
as its own process on 127.0.0.1 (stopped by PID), so its CPU (answering with hr's mock
model, writing the results) is not counted. In this process, through hr's adapter
(``batch_adapter``) and the provider's SDK, it measures the process's CPU time
(``time.process_time``) of each phase for ``--n`` requests (document-QA prompts, a JSON
schema):

- **bodies**: each request's body (``adapter.request_body``: the live call's builder);
- **submit**: the JSONL file written and checked, uploaded, the batch created (OpenAI), or
  the create request (Anthropic);
- **poll**: one status call (the batch ends at the first poll);
- **collect**: every outcome streamed from the results (bounded JSONL reading) and read into
  a priced reply (``adapter.reply``: the live wire reader at the batch rate).

Prints ms of CPU per request, per phase and in all, best of ``--repeat``.

Usage:
    nice -n 10 .venv/bin/python bench/bench_batch.py [--n 10000] [--repeat 3]
        [--provider openai,anthropic]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

_SERVE = """
import sys, time
sys.path.insert(0, {tests!r})
from {module} import {cls}
server = {cls}()
server.book.max_requests = 10 ** 6
server.start()
print("URL", server.url, flush=True)
sys.stdin.read()  # until the bench closes the pipe
server.stop()
"""

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}},
          "required": ["answer"], "additionalProperties": False}


class Server:
    """A fake batch server in its own process, stopped by PID."""

    def __init__(self, provider: str) -> None:
        module, cls = {"openai": ("openai_batch_server", "FakeOpenAIBatchServer"),
                       "anthropic": ("anthropic_batch_server", "FakeAnthropicBatchServer")}[
            provider]
        code = _SERVE.format(tests=str(ROOT / "tests"), module=module, cls=cls)
        self.proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=ROOT)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "URL":
            self.stop()
            raise RuntimeError("the batch server did not start")
        self.url = line[1]

    def stop(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _model(provider: str, url: str) -> Any:
    if provider == "openai":
        from hr_core.models.providers.openai import OpenAIChatModel

        return OpenAIChatModel("gpt-4o-mini", base_url=url, api_key="sk-bench", timeout=600)
    from hr_core.models.providers.anthropic import AnthropicChatModel

    return AnthropicChatModel("claude-haiku-4-5", base_url=url, api_key="sk-ant-bench",
                              timeout=600)


def _messages(i: int) -> list[dict[str, str]]:
    document = " ".join(f"Fact {j}: item {i * 7 + j} is filed under code {i + j}."
                        for j in range(12))
    return [{"role": "system", "content": "Answer from the document only."},
            {"role": "user", "content": f"Document: {document}\nQuestion: under which code "
                                        f"is item {i * 7 + 3} filed?"}]


async def _once(provider: str, url: str, n: int) -> dict[str, float]:
    from hr_core.models.batch_api import BatchRequest
    from hr_core.models.batching import batch_adapter

    adapter = batch_adapter(_model(provider, url))
    client = adapter.client
    cpu: dict[str, float] = {}
    try:
        start = time.process_time()
        requests = [BatchRequest(f"r{i}", adapter.request_body(_messages(i), SCHEMA, None))
                    for i in range(n)]
        cpu["bodies"] = time.process_time() - start
        start = time.process_time()
        batch_id = await client.submit(requests, f"bench-{time.time_ns()}")
        cpu["submit"] = time.process_time() - start
        start = time.process_time()
        status = await client.status(batch_id)
        cpu["poll"] = time.process_time() - start
        assert status.state == "ended", status
        start = time.process_time()
        replies = 0
        async for outcome in client.outcomes(batch_id):
            if outcome.kind == "succeeded" and outcome.response is not None:
                adapter.reply(outcome.response)
                replies += 1
        cpu["collect"] = time.process_time() - start
        assert replies == n, (replies, n)
    finally:
        await client.aclose()
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--provider", default="openai,anthropic")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    print(f"{args.n} requests a batch, best of {args.repeat}; ms of hr's CPU per request")
    print(f"{'provider':<10} {'bodies':>8} {'submit':>8} {'poll':>8} {'collect':>8} "
          f"{'total':>8}")
    for provider in args.provider.split(","):
        server = Server(provider)
        try:
            runs = [asyncio.run(_once(provider, server.url, args.n))
                    for _ in range(args.repeat)]
        finally:
            server.stop()
        best = {k: min(r[k] for r in runs) for k in runs[0]}
        total = min(sum(r.values()) for r in runs)
        cells = " ".join(f"{best[k] * 1000 / args.n:8.3f}" for k in
                         ("bodies", "submit", "poll", "collect"))
        print(f"{provider:<10} {cells} {total * 1000 / args.n:8.3f}")


if __name__ == "__main__":
    main()
