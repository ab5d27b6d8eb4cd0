"""What a benchmark through batches is billed, against the same benchmark live (issue 34,
target: at most 51%, the verdict identical).

A ``--n``-item benchmark (default 1,000), two LLM arms (a document reader and a question
echo) and a grade judge in both presentation orders, run twice against the same fake
OpenAI server on 127.0.0.1 (tests/openai_batch_server.py, in this process), through hr's
engine (``BenchmarkSession``) and the ``openai`` SDK:

- **live**: every arm and judge call a chat completion; ``--faults`` HTTP 500s injected
  (retried by the client; a failed request is not billed);
- **batch**: ``batch: true`` on both arms and the judge; the first run's batches expire
  after ``--expire`` of their requests (the rest unanswered, unbilled), and one request in
  ``--fail-every`` is answered with an error (HTTP 400: the run's error, unbilled); a second
  run resubmits what expired. Resubmissions are counted from the server's own counters
  (requests whose body was submitted more than once), as are requests billed twice.

The bill is the server's (``book.billed_usd``: tokens of each kind at its own rates,
batch at half), never hr's own cost column; hr's cost is printed beside it.

Usage:
    nice -n 10 .venv/bin/python bench/bench_batch_cost.py [--n 1000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from openai_batch_server import FakeOpenAIBatchServer
from openai_server import Fault

from hr_core.judge import hr_judge_config, hr_scorer_judge
from hr_core.run.session import BenchmarkSession, plan_benchmark

PROMPT = "Document: {document}\nQuestion: {question}"
RUBRIC = "Is the response's answer the reference's?"
KEY = "sk-bench-batch-cost"


def _items(n: int) -> list[dict[str, str]]:
    return [{"id": f"q{i}", "question": f"Which city is number {i}?",
             "document": f"City number {i} is Paris{i}.", "label": f"Paris{i}"}
            for i in range(n)]


def _model(server: FakeOpenAIBatchServer, name: str, batch: bool) -> dict[str, Any]:
    rates = server.book.rates
    return {"model": f"openai:{name}", "base_url": server.url, "api_key_env": "HR_BENCH_KEY",
            "prices": {"input": rates.input, "output": rates.output,
                       "cached_input": rates.cached_input}, "batch": batch,
            "params": {"max_tokens": 64}, "concurrency": 16}


def _run(server: FakeOpenAIBatchServer, n: int, store: str, batch: bool) -> Any:
    arms = {"reader": {"model": _model(server, "reader", batch), "prompt": PROMPT},
            "echo": {"model": _model(server, "echo", batch), "prompt": "{question}"}}
    config = hr_judge_config(_model(server, "judge", batch), RUBRIC, mode="grade")
    plan = plan_benchmark(arms, _items(n), hr_scorer_judge(config), store=store,
                          name="batch" if batch else "live")
    session = BenchmarkSession(plan)
    session.batch_options = {"poll_s": 0}
    return session.run_sync()


def _verdict(bench: Any) -> tuple[Any, ...]:
    verdict = bench.verdict()
    return (verdict.best, tuple((row.arm, row.paired_verdict) for row in verdict.rows))


def _describe(bench: Any) -> str:
    summary = bench.summary().set_index("arm")
    return ", ".join(f"{arm} {summary.loc[arm, 'accuracy']:.1%}" for arm in summary.index)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--faults", type=int, default=20)
    parser.add_argument("--expire", type=float, default=0.9)
    parser.add_argument("--fail-every", type=int, default=100)
    args = parser.parse_args()
    import os

    os.environ["HR_BENCH_KEY"] = KEY
    with tempfile.TemporaryDirectory() as store, FakeOpenAIBatchServer() as server:
        book = server.book
        server.inject(*[Fault("500")] * args.faults)
        started = time.perf_counter()
        live = _run(server, args.n, store, batch=False)
        live_s = time.perf_counter() - started
        live_usd = book.billed_usd("live")
        book.expire_after = int(args.expire * args.n)
        book.fail_every = args.fail_every
        started = time.perf_counter()
        first = _run(server, args.n, store, batch=True)
        book.expire_after, book.fail_every = None, 0
        batch = _run(server, args.n, store, batch=True)
        batch_s = time.perf_counter() - started
        batch_usd = book.billed_usd("batch")
        submitted = sum(book.submitted.values())
        resubmitted = sum(n - 1 for n in book.bodies.values() if n > 1)
        made_first = int(first.runs["failure_kind"].ne("budget_stop").sum())
        errors = int(batch.runs["failure_kind"].eq("error").sum())
        unjudged = int((batch.runs["judge_status"].ne("ok")
                        & batch.runs["failure_kind"].ne("error")).sum())
        hr_cost = float(batch.runs["cost_usd"].sum() + batch.runs["judge_cost_usd"].sum())
        print(f"n={args.n} items, 2 arms, grade judge x 2 orders")
        print(f"live:  billed ${live_usd:.6f} ({live_s:.1f} s); {_describe(live)}; "
              f"{args.faults} HTTP 500s injected")
        print(f"batch: billed ${batch_usd:.6f} (hr's cost ${hr_cost:.6f}; {batch_s:.1f} s); "
              f"{_describe(batch)}; {book.created} batches, {submitted} requests submitted, "
              f"{resubmitted} resubmitted after expiry (the first run made {made_first} of "
              f"{2 * args.n} runs), {errors} runs errored (the arm's request), {unjudged} "
              f"runs whose judge erred, {len(book.twice())} billed twice")
        print(f"billed ratio batch/live: {batch_usd / live_usd:.2%} (target <= 51%)")
        same = _verdict(live) == _verdict(batch)
        print(f"verdict live: {_verdict(live)}; batch: {_verdict(batch)}; identical: {same}")


if __name__ == "__main__":
    main()
