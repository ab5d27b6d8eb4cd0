"""What a run past one machine costs, measured on a Dask LocalCluster of worker processes.

Prints the figures docs/operations.md plans with:

- per-chunk Prefect + Dask cost: the same 4,000 instant runs in 1 chunk and in 40
  chunks on the cluster; (wall(40) - wall(1)) / 39 is what one more chunk costs;
- rows per second per worker with a rate-limited provider: an arm that sleeps 50 ms
  a call (a provider answering in 50 ms), concurrency 16 per chunk, on 1 and on 3
  worker processes (the floor: 16 / 0.05 = 320 calls/s per chunk in flight);
- store write rates: journal appends (fsync'ed, records/s) and runs.parquet (rows/s).

Run: ``.venv/bin/python bench/bench_cluster.py`` (~2 minutes on 2 cores).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="hr-bench-prefect-"))
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "ERROR")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def instant(question: str) -> str:
    return f"a{question}"


async def provider(question: str) -> str:
    await asyncio.sleep(0.05)  # a provider that answers in 50 ms
    return f"a{question}"


def _reference(n: int):  # type: ignore[no-untyped-def]
    from hr_core import hr_reference

    return hr_reference([{"id": f"q{i}", "question": str(i), "label": f"a{i}"}
                         for i in range(n)], item="question")


def _timed(arm, n: int, chunk: int, address: str) -> float:  # type: ignore[no-untyped-def]
    from flows import hr_benchmark
    from flows.runners import make_task_runner

    with tempfile.TemporaryDirectory() as store:
        started = time.perf_counter()
        hr_benchmark({"arm": arm}, _reference(n), store=store, chunk_size=chunk,
                     concurrency=16, task_runner=make_task_runner("dask", address=address))
        return time.perf_counter() - started


def main() -> None:
    import bench_cluster
    from distributed import LocalCluster

    results = {}
    with LocalCluster(n_workers=3, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster:
        address = cluster.scheduler_address
        _timed(bench_cluster.instant, 200, 200, address)  # warm up: server, workers, imports
        one = _timed(bench_cluster.instant, 4000, 4000, address)
        forty = _timed(bench_cluster.instant, 4000, 100, address)
        results["chunk_cost_s"] = (forty - one) / 39
        print(f"4,000 instant runs: 1 chunk {one:.2f} s, 40 chunks {forty:.2f} s -> "
              f"{results['chunk_cost_s'] * 1000:.0f} ms per extra chunk")
        for workers in (1, 3):
            n = 960 * workers
            wall = _timed(bench_cluster.provider, n, 960, address)
            print(f"50 ms provider, {workers} chunk(s) of 960 on {workers} worker(s): "
                  f"{n / wall:.0f} rows/s ({n / wall / workers:.0f} per worker; floor "
                  f"320 per worker), wall {wall:.1f} s")
    from hr_core.analysis.benchmark import runs_frame
    from hr_core.store.journal import Journal
    from hr_core.store.record import RunRecord

    record = RunRecord(arm="arm", item_id="q123456", run=1, output="answer 123456",
                       correct=True, outcome="answer 123456", latency_s=0.05, tokens_in=120,
                       tokens_out=8, cost_usd=0.0001)
    with tempfile.TemporaryDirectory() as folder:
        journal = Journal(Path(folder) / "journal.jsonl")
        started = time.perf_counter()
        for _batch in range(20):
            for _ in range(5000):
                journal.append(record.copy())
            journal.flush()
        rate = 100_000 / (time.perf_counter() - started)
        print(f"journal: {rate:,.0f} records/s appended and fsync'ed (batches of 5,000)")
        frame = runs_frame([record] * 200_000)
        started = time.perf_counter()
        frame.to_parquet(Path(folder) / "runs.parquet", index=False)
        print(f"runs.parquet: {200_000 / (time.perf_counter() - started):,.0f} rows/s written")


if __name__ == "__main__":
    main()
