"""Budgets and results across processes: a Dask LocalCluster of worker processes, and Ray.

Each submitted chunk runs in another process with a pickled copy of what it needs;
a budget must still hold for the whole benchmark (calls exactly, tokens and cost
within the runs in flight), and the results must equal the default runner's.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from prefect.task_runners import TaskRunner

from flows import hr_benchmark
from flows.runners import make_task_runner
from hr_core import Benchmark, hr_reference

TESTS = str(Path(__file__).parent)
WORKERS = 2


@pytest.fixture(scope="module")
def dask_address() -> Iterator[str]:
    """One LocalCluster of worker processes (not threads) for the module; closed after."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


def _made(bench: Benchmark) -> pd.DataFrame:
    """The runs that were made (not stopped by the budget)."""
    return bench.runs[bench.runs["failure_kind"] != "budget_stop"]


def _run(runner: TaskRunner[Any], store: Path, budget: dict[str, Any], arms: tuple[str, ...],
         items: int = 30, chunk_size: int = 10, concurrency: int = 1) -> Benchmark:
    from scale_arms import metered, reference_rows

    reference = hr_reference(reference_rows(items), item="question")
    return hr_benchmark({arm: metered for arm in arms}, reference, budget=budget,
                        store=str(store), chunk_size=chunk_size, concurrency=concurrency,
                        task_runner=runner)


def test_a_benchmark_budget_holds_across_dask_worker_processes(
    prefect_harness: None, dask_address: str, tmp_path: Path,
) -> None:
    runner = make_task_runner("dask", address=dask_address)
    bench = _run(runner, tmp_path, {"max_calls": 5, "per": "benchmark"}, ("a",))
    made = _made(bench)
    assert len(made) == 5  # three chunks of ten: each chunk's own copy made 15
    assert made["correct"].all(), made[["item_id", "output", "failure_kind", "error"]]
    assert (bench.runs["failure_kind"] == "budget_stop").sum() == 25


def test_per_arm_budgets_hold_across_dask_worker_processes(
    prefect_harness: None, dask_address: str, tmp_path: Path,
) -> None:
    runner = make_task_runner("dask", address=dask_address)
    bench = _run(runner, tmp_path, {"max_calls": 3}, ("a", "b"), items=20)
    assert _made(bench).groupby("arm").size().to_dict() == {"a": 3, "b": 3}


def test_a_token_budget_across_processes_overshoots_by_the_runs_in_flight_at_most(
    prefect_harness: None, dask_address: str, tmp_path: Path,
) -> None:
    from scale_arms import TOKENS_PER_CALL

    runner = make_task_runner("dask", address=dask_address)
    bench = _run(runner, tmp_path, {"max_tokens": 50, "per": "benchmark"}, ("a",))
    tokens = int(bench.runs["tokens_in"].sum() + bench.runs["tokens_out"].sum())
    # concurrency 1 per chunk, one chunk per worker process: at most WORKERS in flight
    assert 50 <= tokens <= 50 + (WORKERS - 1) * TOKENS_PER_CALL


@pytest.fixture(scope="module")
def ray_local() -> Iterator[None]:
    """A local Ray instance for the module (workers import ``tests/`` modules); shut down after."""
    import ray

    path = os.pathsep.join([TESTS, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    ray.init(num_cpus=WORKERS, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": path}})
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def demo_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from test_dask_runner import _demo_without_budget

    return _demo_without_budget(tmp_path_factory.mktemp("spec"))


@pytest.fixture(scope="module")
def default_demo(prefect_harness: None, demo_spec: Path,
                 tmp_path_factory: pytest.TempPathFactory) -> Benchmark:
    return hr_benchmark(demo_spec, store=str(tmp_path_factory.mktemp("threads")), fresh=True)


def _assert_equal_runs(bench: Benchmark, default: Benchmark) -> None:
    from test_dask_runner import _comparable

    assert len(bench.runs) == len(default.runs) == 4 * 69 * 3
    pd.testing.assert_frame_equal(_comparable(bench.runs), _comparable(default.runs))


def test_the_demo_on_dask_worker_processes_equals_the_default_runner(
    default_demo: Benchmark, demo_spec: Path, dask_address: str, tmp_path: Path,
) -> None:
    bench = hr_benchmark(demo_spec, store=str(tmp_path),
                         task_runner=make_task_runner("dask", address=dask_address))
    _assert_equal_runs(bench, default_demo)


def test_the_demo_on_a_local_ray_equals_the_default_runner(
    default_demo: Benchmark, demo_spec: Path, ray_local: None, tmp_path: Path,
) -> None:
    bench = hr_benchmark(demo_spec, store=str(tmp_path), task_runner=make_task_runner("ray"))
    _assert_equal_runs(bench, default_demo)


def test_budgets_hold_across_ray_workers(
    prefect_harness: None, ray_local: None, tmp_path: Path,
) -> None:
    runner = make_task_runner("ray")
    shared = _run(runner, tmp_path / "shared", {"max_calls": 5, "per": "benchmark"}, ("a",))
    assert len(_made(shared)) == 5
    per_arm = _run(runner, tmp_path / "per-arm", {"max_calls": 3}, ("a", "b"), items=20)
    assert _made(per_arm).groupby("arm").size().to_dict() == {"a": 3, "b": 3}
