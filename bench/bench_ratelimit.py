"""Rate limits against a server that enforces them as hosted APIs do (issue 19, item 2).

Starts tests/ratelimit_server.py as its own process on 127.0.0.1 (one per run,
stopped by PID): requests per minute (600, 200 ms a call) or, apart, tokens per
minute, 429 with ``Retry-After``/``retry-after-ms`` and ``x-ratelimit-*`` headers,
optionally 5% injected 5xx or no ``x-ratelimit-*`` headers. 300 items whose
right answer the server knows for 70%, so a run that lost nothing has accuracy
0.700 exactly.

Compared, in the same run and interleaved:

- **ideal**: N/rate (RPM), or the items' tokens / rate (TPM), as the issue
  measures it;
- **floor**: a plain ``openai`` SDK loop that knows the limit in advance and sends
  on that exact schedule (a GCRA pacer at 100%), retrying 429s after
  ``retry-after-ms`` and 5xx at once: what any client can reach on this machine;
- **openai SDK, defaults**: ``AsyncOpenAI()`` (its own 2 retries), 16 at once:
  what a naive loop loses;
- **hr c16 / hr c64**: a full hr benchmark (``plan_benchmark`` + session, an
  ``openai-compatible`` LLM arm, exact scorer), default concurrency and 64.

Prints, per scenario and harness, the median and p90 (the max when fewer than
10 repetitions) of wall / ideal, of the calls alone (hr's ``engine_seconds``) / ideal,
the median seconds outside the calls (planning, the flow, results and reports
written), items lost (errors), and accuracy.

Usage:
    nice -n 10 .venv/bin/python bench/bench_ratelimit.py [--reps 3] [--n 300]
        [--scale 1] [--scenarios rpm,tpm,rpm+5xx,rpm-noheaders]
``--scale 10`` runs 10x the rates with a tenth of the latency (6000 RPM, 20 ms): the
same schedule in a tenth of the time, for more repetitions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from ratelimit_server import count_tokens  # noqa: E402

SCENARIOS: dict[str, dict[str, Any]] = {
    "rpm": {"rpm": 600},
    "tpm": {"tpm": 120_000},
    "rpm+5xx": {"rpm": 600, "error_rate": 0.05},
    "rpm-noheaders": {"rpm": 600, "no_headers": True},
}
HARNESSES = ("floor", "sdk-default", "hr-c16", "hr-c64")
ENGINE_S: list[float] = []  # hr's engine_seconds of each run (the calls, without the results)


def _items(n: int) -> list[dict[str, Any]]:
    """Questions of 50-350 words (mean ~200 tokens as the server counts them)."""
    rng = random.Random(19)
    words = ["alpha", "beta", "gamma", "delta", "river", "stone", "cloud", "lamp"]
    return [{"id": f"i{i}", "label": f"code{i}",
             "question": f"Q{i}: what is the code word? "
                         + " ".join(rng.choice(words) for _ in range(rng.randint(50, 350)))}
            for i in range(n)]


def _tokens(item: dict[str, Any]) -> int:
    """What the server counts for one request (prompt + the one-token reply)."""
    return count_tokens(item["question"]) + 3 + 1


class Server:
    """tests/ratelimit_server.py in its own process, stopped by PID."""

    def __init__(self, n: int, latency_s: float, **limits: Any) -> None:
        args = [sys.executable, str(ROOT / "tests" / "ratelimit_server.py"), "--items", str(n),
                "--latency-s", str(latency_s)]
        for key, value in limits.items():
            flag = "--" + key.replace("_", "-")
            args += [flag] if value is True else [flag, str(value)]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "PORT":
            self.stop()
            raise RuntimeError("the rate-limited server did not start")
        self.url = f"http://127.0.0.1:{line[1]}/v1"

    def stats(self) -> dict[str, int]:
        with urllib.request.urlopen(f"{self.url}/stats", timeout=10) as reply:
            return json.loads(reply.read())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


async def _sdk(url: str, items: list[dict[str, Any]], *, concurrency: int,
               rps: float | None, tps: float | None, oracle: bool) -> tuple[int, int]:
    """A plain openai SDK loop: (correct, lost). ``oracle``: paced at the known limit."""
    import openai

    client = openai.AsyncOpenAI(base_url=url, api_key="bench",
                                max_retries=0 if oracle else 2)
    semaphore = asyncio.Semaphore(concurrency)
    next_at = [time.monotonic()]

    async def pace(tokens: int) -> None:
        step = 1 / rps if rps else tokens / tps if tps else 0.0
        at = max(next_at[0], time.monotonic())
        next_at[0] = at + step
        await asyncio.sleep(max(0.0, at - time.monotonic()))

    async def one(item: dict[str, Any]) -> bool | None:
        async with semaphore:
            for _ in range(1000):
                if oracle:
                    await pace(_tokens(item))
                try:
                    reply = await client.chat.completions.create(
                        model="bench", messages=[{"role": "user", "content": item["question"]}])
                    return reply.choices[0].message.content == item["label"]
                except openai.RateLimitError as exc:
                    if not oracle:
                        return None
                    ms = exc.response.headers.get("retry-after-ms")
                    await asyncio.sleep(float(ms) / 1000 if ms else 1.0)
                except openai.APIStatusError:
                    if not oracle:
                        return None
            return None

    results = await asyncio.gather(*(one(item) for item in items), return_exceptions=True)
    await client.close()
    correct = sum(1 for r in results if r is True)
    lost = sum(1 for r in results if r is None or isinstance(r, BaseException))
    return correct, lost


def _hr(url: str, items: list[dict[str, Any]], concurrency: int) -> tuple[int, int]:
    from hr_core.models.ratelimit.endpoint import reset_limiters
    from hr_core.run.session import BenchmarkSession, plan_benchmark

    reset_limiters()  # as a new process would
    arm = {"model": "openai-compatible:bench", "base_url": url, "prompt": "{question}"}
    with tempfile.TemporaryDirectory(prefix="hr-bench-rl-") as store:
        plan = plan_benchmark({"llm": arm}, items, store=store, concurrency=concurrency,
                              fresh=True)
        bench = BenchmarkSession(plan).run_sync()
        runs = bench.runs
        correct = int((runs["failure_kind"].isna() & runs["correct"].astype(bool)).sum())
        gone = runs["failure_kind"].isin(["error", "budget_stop"])
        lost = int(gone.sum())
        for kind, error in zip(runs.loc[gone, "failure_kind"], runs.loc[gone, "error"],
                               strict=True):
            print(f"lost: {kind}: {error}", file=sys.stderr, flush=True)
        ENGINE_S.append(float(bench.manifest.get("engine_seconds") or 0.0))
    return correct, lost


def _one(harness: str, scenario: dict[str, Any], items: list[dict[str, Any]],
         latency_s: float, scale: float) -> dict[str, Any]:
    limits = dict(scenario)
    for key in ("rpm", "tpm"):
        if key in limits:
            limits[key] = limits[key] * scale
    server = Server(len(items), latency_s, **limits)
    try:
        rps = limits["rpm"] / 60 if "rpm" in limits else None
        tps = limits["tpm"] / 60 if "tpm" in limits else None
        started = time.perf_counter()
        if harness == "floor":
            correct, lost = asyncio.run(_sdk(server.url, items, concurrency=64, rps=rps,
                                             tps=tps, oracle=True))
        elif harness == "sdk-default":
            correct, lost = asyncio.run(_sdk(server.url, items, concurrency=16, rps=None,
                                             tps=None, oracle=False))
        else:
            correct, lost = _hr(server.url, items, int(harness.split("c")[-1]))
        wall = time.perf_counter() - started
        engine = ENGINE_S.pop() if harness.startswith("hr") and ENGINE_S else wall
        stats = server.stats()
    finally:
        server.stop()
    ideal = (len(items) / rps if rps else sum(map(_tokens, items)) / (tps or 1))
    return {"harness": harness, "wall": wall, "ratio": wall / ideal,
            "engine_ratio": engine / ideal, "outside_s": wall - engine, "lost": lost,
            "accuracy": correct / len(items), "429s": stats["rate_limited"],
            "5xx": stats["server_errors"], "requests": stats["requests"]}


def _spread(values: list[float]) -> str:
    values = sorted(values)
    median = statistics.median(values)
    if len(values) >= 10:
        tail = values[min(len(values) - 1, math.ceil(0.9 * len(values)) - 1)]
        return f"{median:.2f}x (p90 {tail:.2f}x)"
    return f"{median:.2f}x (max {values[-1]:.2f}x)" if len(values) > 1 else f"{median:.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--scenarios", default="rpm,tpm,rpm+5xx,rpm-noheaders")
    parser.add_argument("--harnesses", default=",".join(HARNESSES))
    parser.add_argument("--json", help="write every measurement to this file")
    args = parser.parse_args()
    items = _items(args.n)
    latency_s = 0.2 / args.scale
    warm = Server(5, 0.0)  # imports and first-use costs, untimed
    try:
        _hr(warm.url, items[:5], 4)
        asyncio.run(_sdk(warm.url, items[:5], concurrency=4, rps=None, tps=None, oracle=True))
    finally:
        warm.stop()
    chosen = args.harnesses.split(",")
    rows: list[dict[str, Any]] = []
    for rep in range(args.reps):
        for name in args.scenarios.split(","):
            order = chosen[rep % len(chosen):] + chosen[:rep % len(chosen)]  # interleaved
            for harness in order:
                row = _one(harness, SCENARIOS[name], items, latency_s, args.scale)
                row.update(scenario=name, rep=rep)
                rows.append(row)
                print(json.dumps({k: round(v, 3) if isinstance(v, float) else v
                                  for k, v in row.items()}), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    print(f"\n{args.n} items, scale {args.scale:g} (latency {latency_s * 1000:.0f} ms), "
          f"{args.reps} rep(s), load {os.getloadavg()[0]:.1f}\n")
    print("| scenario | harness | wall / ideal | calls only / ideal | outside the calls "
          "| items lost | accuracy (true 0.700) | 429s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name in args.scenarios.split(","):
        for harness in chosen:
            mine = [r for r in rows if r["scenario"] == name and r["harness"] == harness]
            if not mine:
                continue
            lost = sorted(r["lost"] for r in mine)
            accuracy = sorted(r["accuracy"] for r in mine)
            print(f"| {name} | {harness} | {_spread([r['ratio'] for r in mine])} | "
                  f"{_spread([r['engine_ratio'] for r in mine])} | "
                  f"{statistics.median(r['outside_s'] for r in mine):.1f} s | "
                  f"{lost[0]}-{lost[-1]} | "
                  f"{accuracy[0]:.3f}-{accuracy[-1]:.3f} | "
                  f"{statistics.median(r['429s'] for r in mine):.0f} |")


if __name__ == "__main__":
    main()
