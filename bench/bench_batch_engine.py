"""hr's own CPU time per batched request: a benchmark of N items through the batch engine
(collect, write the ledger, submit, poll, read outcomes, serve, journal) against the
in-memory fake provider of tests/batch_fakes.py, the fake's own time (answering with the
mock model) taken out; beside it the same benchmark live (the mock model called in
process), whose CPU per run is the floor the engine adds to.

    .venv/bin/python bench/bench_batch_engine.py [--n 10000] [--repeat 3]

Target (issue 34): at most 1 ms of hr's CPU per batched request.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from batch_fakes import FakeBatchServer, use_fake_batches

from hr_core.run.session import BenchmarkSession, plan_benchmark

PROMPT = "Document: {document}\nQuestion: {question}"


def _items(n: int) -> list[dict[str, str]]:
    return [{"id": f"q{i}", "question": f"Which city is number {i}?",
             "document": f"City number {i} is Paris{i}.", "label": f"Paris{i}"}
            for i in range(n)]


def _run(n: int, batch: bool) -> tuple[float, float, float]:
    """(CPU s of the whole run, CPU s of the fake provider, the engine's own seconds)."""
    server = FakeBatchServer(polls=0)
    undo = use_fake_batches(server)
    spent = [0.0]
    finish = server.finish

    async def timed(batch_: object) -> None:
        started = time.process_time()
        await finish(batch_)  # type: ignore[arg-type]
        spent[0] += time.process_time() - started

    server.finish = timed  # type: ignore[method-assign]
    try:
        with tempfile.TemporaryDirectory() as store:
            arms = {"reader": {"model": "mock:reader", "prompt": PROMPT, "batch": batch}}
            plan = plan_benchmark(arms, _items(n), store=store, name="bench")
            session = BenchmarkSession(plan)
            session.batch_options = {"poll_s": 0}
            started = time.process_time()
            bench = session.run_sync()
            total = time.process_time() - started
            assert int(bench.runs["correct"].sum()) == n
            engine = 0.0 if session.batch is None else session.batch.seconds
    finally:
        undo()
    if batch:
        assert server.requests == n
    return total, spent[0], engine


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n = args.n
    live, batched, engine = [], [], []
    for _ in range(args.repeat):
        total, _, _ = _run(n, batch=False)
        live.append(total)
        total, fake, seconds = _run(n, batch=True)
        batched.append(total - fake)
        engine.append(seconds)
    best_live, best_batch = min(live), min(batched)
    print(f"n={n}: live {best_live / n * 1e3:.3f} ms CPU per run; batched "
          f"{best_batch / n * 1e3:.3f} ms CPU per request (the fake provider's time out), "
          f"of which submit + poll + outcomes {min(engine) / n * 1e3:.3f} ms; "
          f"batched - live {(best_batch - best_live) / n * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
