"""The real model server of ``make test-real-model``: start time, tokens/s, hr's overhead.

Starts ``llama-server`` with SmolLM2-135M-Instruct (scripts/real_model.sh builds
and caches both) ``--reps`` times; in each rep, interleaved (the order alternates):

- **start**: seconds from spawn to the first 200 of ``/health``;
- **generate**: one chat completion of exactly 64 tokens (``ignore_eos``), tokens/s
  as the server times it (``timings.predicted_per_second``) and over the wall;
- **generate, 2 threads**: the same on a second server started with ``-t 2`` (the
  tests' server runs ``-t 1``: on a loaded 2-core machine two compute threads wait
  for each other at every step);
- **floor**: the five easy questions of the tests through the plain ``openai`` SDK,
  one after another (temperature 0, ``max_tokens`` 48);
- **hr**: the same five through an hr LLM arm (``BenchmarkSession``, a fresh run,
  concurrency 1), whose wall over the floor's is hr's overhead per model call.

The server's prompt cache is off for the floor and hr (``cache_prompt: false``),
so neither replays the other's prompt. Each server is stopped by PID and checked gone.

Usage:
    .venv/bin/python bench/bench_real_model.py [--reps 10]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests_real_model"))

import openai
from llama_server import MODEL_NAME, LlamaServer, artefacts, pid_alive
from real_support import QUESTIONS, llm_arm

from hr_core.run.session import BenchmarkSession, plan_benchmark

NO_CACHE = {"cache_prompt": False}


def _floor(client: openai.OpenAI) -> float:
    started = time.perf_counter()
    for row in QUESTIONS:
        client.chat.completions.create(
            model=MODEL_NAME, temperature=0, seed=42, max_tokens=48, extra_body=NO_CACHE,
            messages=[{"role": "user", "content": f"Answer in a few words. {row['question']}"}])
    return time.perf_counter() - started


def _hr(base_url: str, store: Path) -> float:
    arm = llm_arm(base_url, max_tokens=48, extra_body=NO_CACHE)
    plan = plan_benchmark({"plain": arm}, QUESTIONS, store=str(store), fresh=True,
                          concurrency=1)
    started = time.perf_counter()
    BenchmarkSession(plan).run_sync()
    return time.perf_counter() - started


def _generate(client: openai.OpenAI) -> tuple[float, float]:
    started = time.perf_counter()
    reply = client.chat.completions.create(
        model=MODEL_NAME, temperature=0, seed=42, max_tokens=64,
        extra_body={**NO_CACHE, "ignore_eos": True},
        messages=[{"role": "user", "content": "Tell me about the history of Paris."}])
    wall = time.perf_counter() - started
    assert reply.usage is not None and reply.usage.completion_tokens == 64
    timings = (reply.model_extra or {}).get("timings") or {}
    return float(timings.get("predicted_per_second", float("nan"))), 64 / wall


def _p90(values: list[float]) -> float:
    return sorted(values)[max(0, round(0.9 * len(values)) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    binary, model = artefacts()
    figures: dict[str, list[float]] = {k: [] for k in
                                       ("start_s", "server_tok_s", "wall_tok_s", "t2_server_tok_s",
                                        "t2_wall_tok_s", "floor_s", "hr_s")}
    with tempfile.TemporaryDirectory(prefix="hr-bench-real-") as tmp:
        for rep in range(args.reps):
            two = LlamaServer(binary, model, Path(tmp) / "llama-server-t2.log", threads=2)
            with two:
                assert two.proc is not None
                two_pid = two.proc.pid
                with openai.OpenAI(base_url=two.base_url, api_key="unused",
                                   max_retries=0, timeout=600) as client:
                    server_tps, wall_tps = _generate(client)
                    figures["t2_server_tok_s"].append(server_tps)
                    figures["t2_wall_tok_s"].append(wall_tps)
            assert not pid_alive(two_pid), f"llama-server pid {two_pid} still running"
            server = LlamaServer(binary, model, Path(tmp) / "llama-server.log")
            with server:
                assert server.ready_s is not None and server.proc is not None
                pid = server.proc.pid
                figures["start_s"].append(server.ready_s)
                with openai.OpenAI(base_url=server.base_url, api_key="unused",
                                   max_retries=0, timeout=120) as client:
                    server_tps, wall_tps = _generate(client)
                    figures["server_tok_s"].append(server_tps)
                    figures["wall_tok_s"].append(wall_tps)
                    store = Path(tmp) / f"store-{rep}"
                    if rep % 2 == 0:
                        figures["floor_s"].append(_floor(client))
                        figures["hr_s"].append(_hr(server.base_url, store))
                    else:
                        figures["hr_s"].append(_hr(server.base_url, store))
                        figures["floor_s"].append(_floor(client))
            assert not pid_alive(pid), f"llama-server pid {pid} still running"
    ratios = [h / f for h, f in zip(figures["hr_s"], figures["floor_s"], strict=True)]
    size = binary.stat().st_size / 1e6
    print(f"llama-server {binary} ({size:.1f} MB), model {model.name} "
          f"({model.stat().st_size / 1e6:.0f} MB), {args.reps} reps")
    print(f"{'figure':<34}{'median':>10}{'p90':>10}")
    rows = [("server ready after spawn (s)", figures["start_s"]),
            ("generation, server timing (tok/s)", figures["server_tok_s"]),
            ("generation, over the wall (tok/s)", figures["wall_tok_s"]),
            ("generation, -t 2, server (tok/s)", figures["t2_server_tok_s"]),
            ("generation, -t 2, wall (tok/s)", figures["t2_wall_tok_s"]),
            ("5 questions, openai SDK floor (s)", figures["floor_s"]),
            ("5 questions, hr LLM arm (s)", figures["hr_s"]),
            ("hr / floor", ratios)]
    for name, values in rows:
        print(f"{name:<34}{statistics.median(values):>10.3f}{_p90(values):>10.3f}")


if __name__ == "__main__":
    main()
