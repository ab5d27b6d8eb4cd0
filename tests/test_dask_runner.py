"""Scale-out and reproducibility: the demo gives equal runs on Dask, threads and in any process."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from deploy_support import run_task_runs
from prefect.client.orchestration import get_client
from prefect.task_runners import ThreadPoolTaskRunner

from flows import hr_benchmark
from flows.runners import TaskRunnerError, make_task_runner
from hr_core import Benchmark
from hr_core.examples import __file__ as examples_init

DEMO = Path(examples_init).with_name("demo.yaml")
# What a run produced; latency differs from run to run by nature. Every demo arm is
# deterministic (cautious_llm seeds its draws from the question and the run index).
COMPARED = ["arm", "item_id", "run", "output", "correct", "outcome", "failure_kind", "error",
            "tokens_in", "tokens_out", "cost_usd"]
# Runs the demo spec in a process of its own (another hash seed), without Prefect.
SEPARATE_PROCESS = """
import sys
from hr_core.run.session import BenchmarkSession
from flows.benchmark import plan_from_spec
plan = plan_from_spec(sys.argv[1], store=sys.argv[2], fresh=True)
print(BenchmarkSession(plan).run_sync().run_dir)
"""


def _demo_without_budget(folder: Path) -> Path:
    """The demo spec less its cost budget.

    Which runs a cost budget stops depends on the order in which runs in flight
    finish (their cost is counted as they report it), so it may differ by a run
    or two between two runs; every other result of the demo is deterministic.
    """
    text = DEMO.read_text(encoding="utf-8").split("\nbudget:")[0]
    reference = DEMO.with_name("docqa_reference.jsonl")
    text = text.replace("reference: docqa_reference.jsonl", f"reference: {reference}")
    spec = folder / "demo_no_budget.yaml"
    spec.write_text(text + "\n", encoding="utf-8")
    return spec


def _comparable(runs: pd.DataFrame) -> pd.DataFrame:
    return runs[COMPARED].sort_values(["arm", "item_id", "run"]).reset_index(drop=True)


@pytest.fixture(scope="module")
def demo_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _demo_without_budget(tmp_path_factory.mktemp("spec"))


@pytest.fixture(scope="module")
def default_run(prefect_harness: None, demo_spec: Path,
                tmp_path_factory: pytest.TempPathFactory) -> Benchmark:
    """The demo spec on the default (threads) task runner, with a fresh run id."""
    return hr_benchmark(demo_spec, store=str(tmp_path_factory.mktemp("threads")), fresh=True)


async def _task_run_names(flow_run_id: str, at_least: int) -> list[str]:
    """The flow run's task run names (they arrive as events: poll)."""
    names: list[str] = []
    async with get_client() as client:
        for _ in range(100):
            names = sorted(t.name for t in await run_task_runs(client, flow_run_id))
            if len(names) >= at_least:
                break
            await asyncio.sleep(0.1)
    return names


def test_the_demo_on_a_local_dask_cluster_equals_the_default_runner(
    default_run: Benchmark, demo_spec: Path, tmp_path: Path,
) -> None:
    runner = make_task_runner("dask", n_workers=2, processes=False)
    on_dask = hr_benchmark(demo_spec, store=str(tmp_path / "dask"), task_runner=runner)
    assert len(on_dask.runs) == len(default_run.runs) == 4 * 69 * 3
    pd.testing.assert_frame_equal(_comparable(on_dask.runs), _comparable(default_run.runs))
    keep = ["arm", "accuracy", "ci_low", "ci_high", "scored", "refusal", "error", "cost_usd"]
    pd.testing.assert_frame_equal(on_dask.summary()[keep], default_run.summary()[keep])
    assert (tmp_path / "dask" / "docqa-demo" / str(on_dask.run_id) / "runs.parquet").exists()
    names = asyncio.run(_task_run_names(on_dask.manifest["flow_run_id"], 4))
    assert [n for n in names if "-submitted-chunk-" in n] == [
        "always_abstain-submitted-chunk-2", "cautious_llm-submitted-chunk-3",
        "keyword_overlap-submitted-chunk-0", "number_extractor-submitted-chunk-1"]


def test_two_runs_of_the_demo_in_separate_processes_are_equal_but_for_latency(
    default_run: Benchmark, demo_spec: Path, tmp_path: Path,
) -> None:
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run([sys.executable, "-c", SEPARATE_PROCESS, str(demo_spec), str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=240, check=True)
    run_dir = Path(done.stdout.strip().splitlines()[-1])
    assert run_dir.name != default_run.run_id
    other = Benchmark.load(run_dir).runs
    assert list(other.columns) == list(default_run.runs.columns)
    pd.testing.assert_frame_equal(other.drop(columns="latency_s"),
                                  default_run.runs.drop(columns="latency_s"))


def test_the_threads_runner_is_the_default_thread_pool() -> None:
    runner = make_task_runner("threads", n_workers=3)
    assert isinstance(runner, ThreadPoolTaskRunner)


def test_a_dask_address_points_the_runner_at_an_existing_cluster() -> None:
    runner = make_task_runner("dask", address="tcp://10.0.0.5:8786")
    assert getattr(runner, "address", None) == "tcp://10.0.0.5:8786"


@pytest.mark.parametrize(
    ("kind", "address", "message"),
    [("spark", None, "unknown task runner 'spark'"),
     ("threads", "tcp://x:1", "takes no address")],
)
def test_a_task_runner_that_cannot_be_built_is_refused(
    kind: str, address: str | None, message: str,
) -> None:
    with pytest.raises(TaskRunnerError, match=message):
        make_task_runner(kind, address=address)


def test_ray_without_its_extra_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "prefect_ray" else real(name, *a))
    with pytest.raises(TaskRunnerError, match=r"pip install 'hr\[ray\]'"):
        make_task_runner("ray")
