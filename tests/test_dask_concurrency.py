"""An arm's concurrency holds across Dask worker processes (issue 20, section 3).

Every chunk is submitted at once and used to apply ``concurrency`` on its own, so
two worker processes with two threads each ran up to 4x ``concurrency`` calls of
one arm at a time. The arm here counts its calls in flight across processes.
"""

from __future__ import annotations

from pathlib import Path

from flows import hr_benchmark
from flows.runners import make_task_runner
from hr_core import hr_reference

ITEMS = 120
CONCURRENCY = 3


def test_an_arms_concurrency_holds_across_worker_processes(
    prefect_harness: None, tmp_path: Path,
) -> None:
    from distributed import LocalCluster
    from scale_arms import InFlight, reference_rows

    counter = tmp_path / "in-flight"
    reference = hr_reference(reference_rows(ITEMS), item="question")
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True,
                      dashboard_address=":0") as cluster:
        runner = make_task_runner("dask", address=cluster.scheduler_address)
        bench = hr_benchmark({"slow": InFlight(str(counter))}, reference,
                             store=str(tmp_path / "store"), chunk_size=ITEMS // 8,
                             concurrency=CONCURRENCY, task_runner=runner)
    seen = [int(line) for line in Path(f"{counter}.seen").read_text().split()]
    assert len(seen) == ITEMS and bench.runs["correct"].all()
    # before: up to 12 at a time (8 chunks, 4 worker threads, 3 each)
    assert max(seen) <= CONCURRENCY, max(seen)
    assert not list((tmp_path / "store").rglob("*.slot*"))  # the slot files are gone
