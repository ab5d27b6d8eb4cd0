"""The journal record's cost on the engine: W2/W3 of bench_engine.py without Prefect.

``BenchmarkSession(plan).run_sync()`` (hr_core only: open, chunks, journal, runs.parquet,
summary, report) against the plain asyncio floor of ``bench_engine.py``, interleaved, 11
reps; medians and p90 of the wall time and of the engine phase (``engine_seconds``), and
the ratios to the floor's median. Also the journal's bytes per run. Issue 21's typed
record must not make these worse (figures in bench/README.md).

Run: ``nice .venv/bin/python bench/bench_record.py [REPS]``.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _workloads import floor, make_arm, make_reference, p90

from hr_core import hr_scorer_exact
from hr_core.run.session import BenchmarkSession, plan_benchmark


def workload(label: str, n: int, delay: float, runs: int, concurrency: int, reps: int) -> None:
    reference = make_reference(n)
    _ = reference.hash
    arm = make_arm(delay)
    store = tempfile.mkdtemp(prefix="hr-bench-record-")
    floors, walls, engines, size = [], [], [], 0
    for _ in range(reps):
        start = time.perf_counter()
        correct = asyncio.run(floor(reference, arm, runs, concurrency))
        floors.append(time.perf_counter() - start)
        plan = plan_benchmark({"arm": arm}, reference, hr_scorer_exact(), runs,
                              concurrency=concurrency, store=store, name=label.lower(),
                              fresh=True)
        start = time.perf_counter()
        bench = BenchmarkSession(plan).run_sync()
        walls.append(time.perf_counter() - start)
        engines.append(float(bench.manifest["engine_seconds"]))
        assert int(bench.runs["correct"].sum()) == correct, "engine and floor disagree"
        size = (Path(bench.run_dir) / "journal.jsonl").stat().st_size
    f = statistics.median(floors)
    print(f"| {label} | {n * runs} | {f:.3f} | {statistics.median(walls):.3f} / {p90(walls):.3f}"
          f" | {statistics.median(walls) / f:.2f}x | {statistics.median(engines):.3f} / "
          f"{p90(engines):.3f} | {statistics.median(engines) / f:.2f}x | "
          f"{size / (n * runs):.0f} |")


if __name__ == "__main__":
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 11
    print(f"medians (/ p90) of {reps} interleaved reps")
    print("| workload | runs | floor (s) | session (s) | ratio | engine phase (s) | "
          "engine ratio | journal bytes/run |")
    print("|---|---|---|---|---|---|---|---|")
    workload("W2", 20000, 0.0, 1, 16, reps)
    workload("W3", 1000, 0.010, 5, 50, reps)
