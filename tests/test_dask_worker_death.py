"""A Dask worker process killed (SIGKILL, by PID) mid-chunk loses its runs in flight only.

Each submitted chunk writes its finished runs to a worker journal beside the
journal as they finish (tasks/remote.py); the next run of the benchmark reads it
and calls the arm only for the runs not journaled. The arm appends one line per
call to a file, so calls are counted across processes.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from flows import hr_benchmark
from flows.runners import make_task_runner
from hr_core import hr_reference

ITEMS = 300
CONCURRENCY = 2
KILL_AFTER = 60  # calls made before the worker is killed


def _calls(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def _kill_worker_after(path: Path, calls: int, killed: list[int]) -> None:
    """Wait for ``calls`` calls, then SIGKILL the worker process that made the first."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        lines = _calls(path)
        if len(lines) >= calls:
            pid = int(lines[0].split()[0])
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
            return
        time.sleep(0.005)


def test_a_killed_dask_worker_costs_its_runs_in_flight_only(
    prefect_harness: None, tmp_path: Path,
) -> None:
    import dask
    from distributed import LocalCluster
    from scale_arms import Counted, reference_rows

    calls = tmp_path / "calls.txt"
    reference = hr_reference(reference_rows(ITEMS), item="question")
    arms = {"counted": Counted(str(calls))}
    store = str(tmp_path / "store")
    killed: list[int] = []
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        runner = make_task_runner("dask", address=cluster.scheduler_address)
        killer = threading.Thread(target=_kill_worker_after, args=(calls, KILL_AFTER, killed))
        killer.start()
        with pytest.raises(Exception, match=r"(?i)killed|worker"):  # KilledWorker: no retry
            hr_benchmark(arms, reference, store=store, chunk_size=ITEMS,
                         concurrency=CONCURRENCY, task_runner=runner)
        killer.join()
    assert killed, "the worker was never killed"
    first = len(_calls(calls))
    assert KILL_AFTER <= first < ITEMS
    journals = list(Path(store).rglob("journal.w-0-*.jsonl"))
    assert len(journals) == 1, journals  # the dead worker's own journal, kept

    bench = hr_benchmark(arms, reference, store=store, chunk_size=ITEMS,
                         concurrency=CONCURRENCY)  # resumes the same run id
    rerun = len(_calls(calls)) - first
    print(f"first invocation: {first} calls; rerun: {rerun} calls")
    # before: the rerun made all 300 calls (nothing of the chunk reached the journal)
    assert ITEMS - first <= rerun <= ITEMS - first + CONCURRENCY + 1, (first, rerun)
    assert len(bench.runs) == ITEMS and bench.runs["correct"].all()
    assert not list(Path(store).rglob("journal.w-*.jsonl"))  # taken into the journal


def test_a_retried_chunk_skips_the_runs_its_dead_attempt_journaled(tmp_path: Path) -> None:
    """What Dask's retry of a chunk does (its default): the runs in the dead attempt's
    worker journal are returned, not made again (the task's own function, no cluster)."""
    import asyncio

    from scale_arms import Counted, reference_rows

    from hr_core.run.budget import BudgetLedger
    from hr_core.run.session import plan_benchmark
    from hr_core.store.journal import Journal
    from hr_core.store.record import RunRecord
    from tasks.remote import run_chunk_remote

    calls = tmp_path / "calls.txt"
    plan = plan_benchmark({"counted": Counted(str(calls), delay=0)},
                          hr_reference(reference_rows(10), item="question"), store=str(tmp_path))
    journal = Journal(tmp_path / "journal.jsonl")
    dead = Journal(journal.worker_path(3))  # an earlier attempt of chunk 3 made q0..q3
    for i in range(4):
        dead.append(RunRecord(arm="counted", item_id=f"q{i}", run=1, output=f"a{i}"))
    dead.flush()
    work = [(item, 1) for item in plan.reference]
    ledger = BudgetLedger(plan.budget, plan.arms)
    records, errors = asyncio.run(run_chunk_remote.fn(
        plan.arms["counted"], work, plan.scorer, ledger, 2, 3, "counted", str(journal.path)))
    assert sorted(_calls(calls)) == sorted(f"{os.getpid()} {i}" for i in range(4, 10))
    assert sorted(r.item_id for r in records) == [f"q{i}" for i in range(10)]
    assert errors == []
    assert len(journal.worker_files(3)) == 2  # the dead attempt's and this one's
    assert len(journal.read()) == 10  # the reader merges them
