"""A benchmark's flow run cancelled or deleted from the Prefect API stops the benchmark.

Each test runs a slow benchmark (an arm that sleeps per item) against a real Prefect
API (the session's ``prefect_harness`` server), waits for its first calls, then sets
the flow run (or its nightly parent) to Cancelling through Prefect's client, as the
dashboard's Cancel button does, or deletes it. Then: the exit (status, one line), the
flow run's final state, the journal kept, and a second run makes only the runs not made.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    FlowFilter,
    FlowFilterName,
    FlowRunFilter,
    FlowRunFilterTags,
)
from prefect.client.schemas.objects import FlowRun, StateType
from prefect.states import Cancelling
from server_support import hr_env

HR = str(Path(sys.executable).with_name("hr"))
N_ITEMS = 200
WAIT_S = 240.0

ARMS = """
import os, time

def slow(question):
    with open(os.environ["HR_CALLS"], "a") as log:
        log.write(question + "\\n")
    time.sleep(0.1)
    return "a" + question
"""


def _project(folder: Path, name: str) -> Path:
    """A spec ``name`` whose arm (module ``<name>_arms``, unique: tests share a process)
    logs each call's item to ``$HR_CALLS``; returns the spec's path."""
    module = name.replace("-", "_") + "_arms"
    (folder / f"{module}.py").write_text(ARMS)
    (folder / "ref.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "question": str(i), "label": f"a{i}"}) + "\n"
        for i in range(N_ITEMS)))
    spec = folder / "spec.yaml"
    spec.write_text(f"name: {name}\nreference: {{path: ref.jsonl, item: question}}\n"
                    f"store: {folder / 'store'}\nconcurrency: 2\narms:\n"
                    f"  slow: {module}:slow\n")
    return spec


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _wait_for_calls(calls: Path, count: int, alive: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while len(_lines(calls)) < count:
        assert alive() and time.monotonic() < deadline, "the benchmark never got going"
        time.sleep(0.05)


async def _running(tag: str, flow: str) -> FlowRun:
    """The one running flow run of ``flow`` tagged ``tag``."""
    async with get_client() as client:
        for _ in range(600):
            runs = await client.read_flow_runs(
                flow_filter=FlowFilter(name=FlowFilterName(any_=[flow])),
                flow_run_filter=FlowRunFilter(tags=FlowRunFilterTags(all_=[tag])))
            running = [r for r in runs if r.state is not None and r.state.is_running()]
            if running:
                assert len(running) == 1, running
                return running[0]
            await asyncio.sleep(0.1)
    raise AssertionError(f"no running {flow} flow run tagged {tag}")


def _cancel(tag: str, flow: str = "hr-benchmark") -> FlowRun:
    """Set the running flow run to Cancelling, as the dashboard's Cancel button does."""
    async def go() -> FlowRun:
        run = await _running(tag, flow)
        async with get_client() as client:
            await client.set_flow_run_state(run.id, Cancelling(), force=True)
        return run
    return asyncio.run(go())


def _delete(tag: str) -> FlowRun:
    async def go() -> FlowRun:
        run = await _running(tag, "hr-benchmark")
        async with get_client() as client:
            await client.delete_flow_run(run.id)
        return run
    return asyncio.run(go())


def _state(flow_run_id: UUID) -> StateType | None:
    async def go() -> StateType | None:
        async with get_client() as client:
            for _ in range(300):  # the flow's end is reported once its call returns
                state = (await client.read_flow_run(flow_run_id)).state
                if state is not None and state.is_final():
                    return state.type
                await asyncio.sleep(0.1)
            return None
    return asyncio.run(go())


def _kept(store: Path, name: str) -> tuple[Path, set[str]]:
    """The run folder, its manifest's status checked, and the items its journal holds."""
    folder = next((store / name).glob("*/"))
    assert json.loads((folder / "manifest.json").read_text())["status"] == "interrupted"
    kept = {json.loads(row)["item_id"] for row in _lines(folder / "journal.jsonl")}
    assert 0 < len(kept) < N_ITEMS
    return folder, kept


def _only_missing(called: list[str], kept: set[str]) -> None:
    assert sorted(called, key=int) == sorted(
        (str(i) for i in range(N_ITEMS) if f"q{i}" not in kept), key=int)


@pytest.fixture()
def calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "calls.txt"
    monkeypatch.setenv("HR_CALLS", str(path))
    return path


@contextlib.contextmanager
def _meanwhile(action: Callable[[], Any]) -> Iterator[dict[str, Any]]:
    """Run ``action`` in a thread (this context: the session's API) while the block runs;
    yields a dict that gets its result (``"done"``) and when it returned (``"at"``)."""
    out: dict[str, Any] = {}
    context = contextvars.copy_context()

    def go() -> None:
        out["done"] = context.run(action)
        out["at"] = time.monotonic()

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    try:
        yield out
    finally:
        thread.join(timeout=WAIT_S)


def _after_calls(calls: Path, action: Callable[[], FlowRun]) -> Callable[[], FlowRun]:
    def go() -> FlowRun:
        _wait_for_calls(calls, 20, lambda: True)
        return action()
    return go


# -- in-process: hr_benchmark and the nightly flow called from Python -------------------


def test_cancelling_a_benchmark_s_flow_run_stops_it_and_it_ends_cancelled(
        prefect_harness: None, tmp_path: Path, calls: Path) -> None:
    from flows import hr_benchmark
    from hr_core.core.errors import BenchmarkCancelled

    spec = _project(tmp_path, "cancel-py")
    with _meanwhile(_after_calls(calls, lambda: _cancel("cancel-py"))) as cancel, \
            pytest.raises(BenchmarkCancelled) as raised:
        hr_benchmark(str(spec))
    ended = time.monotonic()
    took = ended - cancel["at"]
    print(f"hr_benchmark raised {took:.1f} s after Cancelling was set: {raised.value}")
    assert took < 30  # within a few seconds (POLL_S); generous for a loaded machine
    assert _state(cancel["done"].id) == StateType.CANCELLED
    folder, kept = _kept(tmp_path / "store", "cancel-py")
    assert "was cancelled from the Prefect API" in str(raised.value)
    assert f"finished run(s) of {N_ITEMS} are journaled in {folder}" in str(raised.value)
    assert str(raised.value).endswith("Run the same benchmark again to resume.")

    called = len(_lines(calls))
    bench = hr_benchmark(str(spec))
    assert len(bench.runs) == N_ITEMS
    assert json.loads((folder / "manifest.json").read_text())["status"] == "completed"
    _only_missing(_lines(calls)[called:], kept)


def test_calls_in_flight_are_abandoned(prefect_harness: None, tmp_path: Path,
                                       calls: Path) -> None:
    """Arm calls that would take ten minutes do not hold a cancelled benchmark."""
    from flows import hr_benchmark
    from hr_core.core.errors import BenchmarkCancelled

    spec = _project(tmp_path, "cancel-hung")
    arms = tmp_path / "cancel_hung_arms.py"
    arms.write_text(arms.read_text().replace("time.sleep(0.1)", "time.sleep(600)"))
    with _meanwhile(lambda: (_wait_for_calls(calls, 2, lambda: True), _cancel("cancel-hung"))
                    ) as cancel, pytest.raises(BenchmarkCancelled) as raised:
        hr_benchmark(str(spec))
    took = time.monotonic() - cancel["at"]
    print(f"hr_benchmark raised {took:.1f} s after Cancelling was set, 2 calls in flight")
    assert took < 30
    assert _state(cancel["done"][1].id) == StateType.CANCELLED
    assert f"0 finished run(s) of {N_ITEMS} are journaled" in str(raised.value)


@pytest.mark.parametrize("which", ["hr-scheduled-benchmark", "hr-benchmark"])
def test_cancelling_the_nightly_or_its_benchmark_ends_both_cancelled(
        prefect_harness: None, tmp_path: Path, calls: Path, which: str) -> None:
    from flows.scheduled import hr_scheduled_benchmark
    from hr_core.core.errors import BenchmarkCancelled

    name = f"nightly-{which.split('-')[1]}"
    spec = _project(tmp_path, name)
    with _meanwhile(_after_calls(calls, lambda: _cancel(name, which))) as cancel, \
            pytest.raises(BenchmarkCancelled) as raised:
        asyncio.run(hr_scheduled_benchmark(str(spec)))
    took = time.monotonic() - cancel["at"]
    print(f"the nightly raised {took:.1f} s after Cancelling was set on {which}: "
          f"{raised.value}")
    assert took < 30

    async def both() -> list[FlowRun]:
        async with get_client() as client:
            return list(await client.read_flow_runs(
                flow_run_filter=FlowRunFilter(tags=FlowRunFilterTags(all_=[name]))))
    runs = asyncio.run(both())
    assert len(runs) == 2  # the nightly and its hr-benchmark subflow
    assert [_state(r.id) for r in runs] == [StateType.CANCELLED] * 2
    _kept(tmp_path / "store", name)


# -- hr run: the exit status and the one line ------------------------------------------


@pytest.fixture(scope="module")
def api_url(prefect_harness: None) -> str:
    from prefect.settings import PREFECT_API_URL

    return str(PREFECT_API_URL.value())


def _hr_run(spec: Path, env: dict[str, str], act: Callable[[], FlowRun]
            ) -> tuple[subprocess.CompletedProcess[str], FlowRun, float]:
    """``hr run spec``; ``act`` once 20 calls are made; the run, what ``act`` returned and
    the seconds from ``act``'s return to hr's exit."""
    run = subprocess.Popen([HR, "run", str(spec)], env=env, cwd=spec.parent, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           start_new_session=True)
    try:
        _wait_for_calls(Path(env["HR_CALLS"]), 20, lambda: run.poll() is None)
        acted = act()
        at = time.monotonic()
        out, err = run.communicate(timeout=WAIT_S)
        took = time.monotonic() - at
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(timeout=30)
    print(f"hr run exited {run.returncode} {took:.1f} s later; stderr: {err!r}")
    return subprocess.CompletedProcess(run.args, run.returncode, out, err), acted, took


@pytest.mark.parametrize("how", ["cancel", "delete"])
def test_hr_run_stops_with_one_line_when_its_flow_run_is_cancelled_or_deleted(
        api_url: str, tmp_path: Path, how: str) -> None:
    from hr_core.core.errors import BenchmarkCancelled, FlowRunDeleted

    name = f"cli-{how}"
    spec = _project(tmp_path, name)
    (tmp_path / "home").mkdir()
    calls = tmp_path / "calls.txt"
    env = hr_env(tmp_path / "home", COLUMNS="120", HR_CALLS=str(calls), PREFECT_API_URL=api_url)
    act = (lambda: _cancel(name)) if how == "cancel" else (lambda: _delete(name))
    done, acted, took = _hr_run(spec, env, act)
    err = done.stderr
    assert took < 30
    assert "Traceback" not in done.stdout + err and len(err.splitlines()) == 1, err
    folder, kept = _kept(tmp_path / "store", name)
    assert f"finished run(s) of {N_ITEMS} are journaled in {folder}" in err
    assert err.rstrip().endswith(f"Run `hr run {spec}` to resume.")
    if how == "cancel":
        assert done.returncode == BenchmarkCancelled.exit_status == 7
        assert err.startswith(f"hr: cancelled: the flow run '{acted.name}' ({acted.id}) was "
                              "cancelled from the Prefect API")
        assert _state(acted.id) == StateType.CANCELLED
    else:
        assert done.returncode == FlowRunDeleted.exit_status == 8
        assert err.startswith(f"hr: stopped: the flow run {acted.id} was deleted from the "
                              "Prefect API")

    called = len(_lines(calls))
    again = subprocess.run([HR, "run", str(spec)], env=env, cwd=tmp_path, text=True,
                           capture_output=True, timeout=WAIT_S, check=False)
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads((folder / "manifest.json").read_text())["status"] == "completed"
    _only_missing(_lines(calls)[called:], kept)



# -- a worker's SIGTERM: Prefect's handler in the flow run's process -----------------------


RUN = """
import sys
from flows import hr_benchmark

hr_benchmark(sys.argv[1])
"""


def test_a_sigterm_to_a_flow_run_s_process_keeps_the_journal_and_marks_it_interrupted(
        api_url: str, tmp_path: Path, calls: Path) -> None:
    """A worker or runner cancels a flow run by SIGTERM to its process, where Prefect's
    handler (not hr's) raises ``TerminationSignal``: the run is resumable all the same."""
    from flows import hr_benchmark

    name = "sigterm"
    spec = _project(tmp_path, name)
    (tmp_path / "home").mkdir()
    (tmp_path / "run.py").write_text(RUN)
    root = Path(__file__).parent.parent
    env = hr_env(tmp_path / "home", HR_CALLS=str(calls), PREFECT_API_URL=api_url,
                 PYTHONPATH=str(root))
    run = subprocess.Popen([sys.executable, str(tmp_path / "run.py"), str(spec)], env=env,
                           cwd=tmp_path, text=True, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_for_calls(calls, 20, lambda: run.poll() is None)
        run.send_signal(signal.SIGTERM)
        out = run.communicate(timeout=WAIT_S)[0]
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(timeout=30)
    assert run.returncode != 0, out
    _, kept = _kept(tmp_path / "store", name)
    called = len(_lines(calls))
    bench = hr_benchmark(str(spec))
    assert len(bench.runs) == N_ITEMS
    _only_missing(_lines(calls)[called:], kept)


# -- a served deployment: Prefect's runner cancels (SIGTERM to the flow run's process) ---


SERVE = """
from flows.benchmark import benchmark_flow

if __name__ == "__main__":  # the runner's child process imports this file again
    benchmark_flow.serve(name="cancel-served")
"""


def _deployment_run(spec: Path) -> UUID:
    async def go() -> UUID:
        async with get_client() as client:
            for _ in range(1200):
                with contextlib.suppress(Exception):
                    deployment = await client.read_deployment_by_name(
                        "hr-benchmark/cancel-served")
                    break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("the served deployment never appeared")
            run = await client.create_flow_run_from_deployment(
                deployment.id, parameters={"spec": str(spec)})
            return run.id
    return asyncio.run(go())


def test_a_served_benchmark_cancelled_from_the_api_ends_cancelled_and_resumes(
        api_url: str, tmp_path: Path, calls: Path) -> None:
    """``serve`` (a runner, as a worker) signals the flow run's process on Cancelling."""
    from flows import hr_benchmark

    name = "served"
    spec = _project(tmp_path, name)
    (tmp_path / "home").mkdir()
    (tmp_path / "serve.py").write_text(SERVE)
    root = Path(__file__).parent.parent
    env = hr_env(tmp_path / "home", HR_CALLS=str(calls), PREFECT_API_URL=api_url,
                 PYTHONPATH=str(root))
    served = subprocess.Popen([sys.executable, str(tmp_path / "serve.py")], env=env,
                              cwd=root, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, start_new_session=True)
    try:
        flow_run_id = _deployment_run(spec)
        _wait_for_calls(calls, 20, lambda: served.poll() is None)
        run = _cancel(name)
        assert run.id == flow_run_id
        at = time.monotonic()
        state = _state(flow_run_id)
        took = time.monotonic() - at
        assert served.poll() is None, "the served process ended"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(served.pid, signal.SIGKILL)
        out = served.communicate(timeout=60)[0]
    print(f"the served flow run ended {state} {took:.1f} s after Cancelling was set")
    assert state == StateType.CANCELLED, out
    assert took < 60
    _, kept = _kept(tmp_path / "store", name)
    called = len(_lines(calls))
    bench = hr_benchmark(str(spec))
    assert len(bench.runs) == N_ITEMS
    _only_missing(_lines(calls)[called:], kept)
