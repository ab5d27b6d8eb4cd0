"""The HTML report's size does not grow with items: 10,000 items x 4 arms in <= 5 MB.

Builds runs of 4 arms (with wrong answers, refusals, parse failures, errors with long
messages, budget stops) on N items whose payloads hold a 2 kB document, renders the
report, and prints its size for N = 1,000 and 10,000 (the item tables are capped per
(arm, failure kind) and the figures summarise, so the two should be close), the ratio
to the 5 MB limit, and the render time against a floor measured in the same run
(rendering the report of 10 items).

    .venv/bin/python bench/bench_report_size.py
"""

from __future__ import annotations

import random
import time

from hr_core.analysis.benchmark import Benchmark, runs_frame
from hr_core.analysis.items import item_texts
from hr_core.report import ReportInputs, render_report

LIMIT_BYTES = 5 * 1024 * 1024
ARMS = {"keyword": 0.7, "reader": 0.6, "numbers": 0.4, "typo": 0.0}
KINDS = ("wrong", "refusal", "parse_failure", "not_in_document", "error")


def make_inputs(n_items: int, seed: int = 1) -> ReportInputs:
    rng = random.Random(seed)
    document = "A fairly long document sentence about nothing in particular. " * 32
    reference = [{"id": f"item-{i:06d}", "label": f"answer {i}",
                  "payload": {"document": document, "question": f"What is the answer to {i}?"}}
                 for i in range(n_items)]
    records = []
    for arm, skill in ARMS.items():
        for i in range(n_items):
            if arm == "numbers" and i >= n_items * 0.9:
                records.append({"arm": arm, "item_id": f"item-{i:06d}", "run": 1,
                                "correct": False, "failure_kind": "budget_stop"})
                continue
            right = rng.random() < skill
            kind = None if right else ("error" if arm == "typo" else rng.choice(KINDS))
            records.append({
                "arm": arm, "item_id": f"item-{i:06d}", "run": 1,
                "output": None if kind in ("error", "parse_failure") else
                (f"answer {i}" if right else f"a long wrong answer {i} " * 6),
                "correct": right, "failure_kind": kind,
                "error": ("SpecError: LLM arm prompt needs field 'questoin' " + "x" * 200
                          if kind == "error" else None),
                "latency_s": rng.uniform(0.01, 2.0), "tokens_in": 500, "tokens_out": 12,
                "cost_usd": 0.0002})
    bench = Benchmark(runs_frame(records), {"name": "size", "run_id": "r", "runs": 1})
    return ReportInputs(bench.manifest, bench.runs, bench.summary(),
                        items=item_texts(reference))


def measure(n_items: int) -> tuple[int, float]:
    inputs = make_inputs(n_items)
    started = time.perf_counter()
    page = render_report(inputs)
    return len(page.encode("utf-8")), time.perf_counter() - started


def main() -> None:
    _, floor = measure(10)
    small, small_s = measure(1_000)
    large, large_s = measure(10_000)
    print(f"report of    10 items x 4 arms: floor {floor * 1000:.0f} ms")
    print(f"report of 1,000 items x 4 arms: {small / 1e6:.2f} MB in {small_s:.2f} s "
          f"({small_s / floor:.1f}x floor)")
    print(f"report of 10,000 items x 4 arms: {large / 1e6:.2f} MB in {large_s:.2f} s "
          f"({large_s / floor:.1f}x floor); {large / LIMIT_BYTES:.2f} of the 5 MB limit; "
          f"size 10k/1k = {large / small:.2f}")
    assert large <= LIMIT_BYTES, "the report grew past 5 MB"


if __name__ == "__main__":
    main()
