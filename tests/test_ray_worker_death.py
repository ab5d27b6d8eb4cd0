"""A Ray worker process killed (SIGKILL, by PID) mid-chunk costs its runs in flight only.

Ray retries a task whose worker died (``max_retries``, 3 by default for tasks):
the retried chunk reads the dead attempt's worker journal beside the journal
(tasks/remote.py) and calls the arm only for the runs it had not finished. The
arm appends ``<pid> <question>`` per call to a file, so calls are counted across
processes.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_dask_worker_death import _calls, _kill_worker_after

from flows import hr_benchmark
from flows.runners import make_task_runner
from hr_core import hr_reference

ITEMS = 200
CONCURRENCY = 2
KILL_AFTER = 50
TESTS = str(Path(__file__).resolve().parent)


@pytest.fixture()
def ray_one_worker(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A local Ray with one worker. The raylet's "worker died" lines make Ray's driver
    replace ``builtins.print`` (ray.experimental.tqdm_ray) for the rest of the process,
    which broke a later doctest showing ``print``: turned off, and put back anyway."""
    import builtins

    import ray

    monkeypatch.setenv("RAY_TQDM_PATCH_PRINT", "0")
    original = builtins.print
    path = os.pathsep.join([TESTS, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": path}})
    try:
        yield
    finally:
        ray.shutdown()
        builtins.print = original


def test_a_killed_ray_worker_costs_its_runs_in_flight_only(
    prefect_harness: None, ray_one_worker: None, tmp_path: Path,
) -> None:
    from scale_arms import Counted, reference_rows

    calls = tmp_path / "calls.txt"
    reference = hr_reference(reference_rows(ITEMS), item="question")
    import builtins

    print_before = builtins.print
    killed: list[int] = []
    killer = threading.Thread(target=_kill_worker_after, args=(calls, KILL_AFTER, killed))
    killer.start()
    try:
        bench = hr_benchmark({"counted": Counted(str(calls))}, reference,
                             store=str(tmp_path / "store"), chunk_size=ITEMS,
                             concurrency=CONCURRENCY, task_runner=make_task_runner("ray"))
    finally:
        killer.join()
    assert killed, "the worker was never killed"
    lines = _calls(calls)
    pids = {line.split()[0] for line in lines}
    assert len(pids) == 2, pids  # the killed worker and the one Ray retried the chunk on
    print(f"{len(lines)} calls for {ITEMS} runs, a worker killed after {KILL_AFTER}")
    # a lost worker costs its runs in flight (and those waiting for the fsync under way)
    assert ITEMS <= len(lines) <= ITEMS + CONCURRENCY + 1, len(lines)
    assert len(bench.runs) == ITEMS and bench.runs["correct"].all()
    assert not list((tmp_path / "store").rglob("journal.w-*.jsonl"))
    import builtins

    assert builtins.print is print_before  # Ray left print alone
