"""Schedules that fire, on hr's own server (issue 30, items 2 and 5).

``hr server start`` with Prefect's scheduler loop shortened (its own settings), the
``hr-process`` work pool and ``prefect deploy`` of the nightly deployment from the
project root as docs/operations.md says, with an interval schedule of a few seconds:
the scheduler makes the runs, a process worker runs one to Completed and its
regression artifact is there. Then ``python -m deployments.serve`` is stopped with
SIGINT and with SIGTERM, and the worker-pool deployment keeps its pool and schedule.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from drift_arms import reference_rows
from e2e_support import stop_group
from hr_server_support import FAST_SCHEDULER, HrServer, scheduled_runs, wait_until

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
POOL = "hr-process"
NIGHTLY = "hr-scheduled-benchmark/nightly"
SPEC = """\
name: schedule-check
reference: {path: reference.jsonl, item: question}
arms:
  steady: drift_arms:steady
  drifting: drift_arms:drifting
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HrServer]:
    root = tmp_path_factory.mktemp("schedule")
    with HrServer(root / "prefect-home", ROOT, server_env=FAST_SCHEDULER) as srv:
        srv.env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p)
        yield srv


@pytest.fixture(scope="module")
def nightly(server: HrServer, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The nightly deployment on the ``hr-process`` pool, every 5 s, a small spec."""
    folder = tmp_path_factory.mktemp("spec")
    (folder / "reference.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in reference_rows(12)))
    (folder / "spec.yaml").write_text(SPEC)
    server.cli("work-pool", "create", POOL, "--type", "process")
    server.cli("deploy", "--name", "nightly", "--prefect-file", "deployments/prefect.yaml",
               "--interval", "5", "--param", f"spec={folder / 'spec.yaml'}",
               "--param", f"store={folder / 'results'}", timeout=240)
    deployment = server.deployment(NIGHTLY)
    deployment["store"] = folder / "results"
    return deployment


def test_the_scheduler_makes_runs_and_a_worker_completes_one_with_its_regression_artifact(
    server: HrServer, nightly: dict[str, Any],
) -> None:
    """Before (Prefect 3.9.0 with SQLAlchemy 2.1.9): its scheduler failed every loop with
    "Can't evaluate bulk DML statement" and made 0 runs. After (2.0.58, the lock):
    runs are scheduled within seconds and the first one completes."""
    started = time.monotonic()
    assert nightly["work_pool_name"] == POOL
    assert [s["active"] for s in nightly["schedules"]] == [True, True]  # cron and interval
    worker = server.spawn(["worker", "start", "--pool", POOL, "--install-policy", "never"],
                          log="worker", env={**server.env, "PREFECT_WORKER_QUERY_SECONDS": "1",
                                             "PREFECT_WORKER_PREFETCH_SECONDS": "5"})
    try:
        made = wait_until(lambda: scheduled_runs(server, nightly["id"]), timeout=90)
        assert made, ("the scheduler made no run of the nightly deployment in 90 s; "
                      f"hr-server.log ends:\n{server.server_log()}")
        made_after = time.monotonic() - started

        def finished() -> list[dict[str, Any]]:  # runs wait for the deployment's one slot
            runs = scheduled_runs(server, nightly["id"])
            return [r for r in runs if r["state_type"] in ("COMPLETED", "FAILED", "CRASHED")]

        done = wait_until(finished, timeout=240)
        assert done, f"no scheduled run finished in 240 s:\n{server.log_tail('worker')}"
        first = done[0]
        assert first["state_type"] == "COMPLETED", server.log_tail("worker")
        assert worker.poll() is None
        arts = server.api("POST", "/artifacts/filter",
                          json={"artifacts": {"flow_run_id": {"any_": [first["id"]]}}})
        regression = [a for a in arts if a.get("key") == "hr-regression-schedule-check"]
        assert regression, [a.get("key") for a in arts]
        assert "# Regression check: schedule-check" in str(regression[0]["data"])
        manifests = list(Path(nightly["store"]).glob("schedule-check/*/manifest.json"))
        assert manifests and json.loads(manifests[0].read_text())["status"] == "completed"
    finally:
        # the worker would go on running a scheduled run every 5 s (each a process)
        # through the module's other tests: stopped once its run is checked
        stop_group(worker)
    status = server.hr("server", "status")  # a server whose scheduler works: all is well
    assert status.returncode == 0, status.stdout + status.stderr
    print(f"\nschedule: {len(made)} runs made {made_after:.1f} s after deploy, the first "
          f"completed {time.monotonic() - started:.1f} s after deploy")


def _serve(server: HrServer, log: str) -> subprocess.Popen[Any]:
    served = server.spawn(["-W", "default", "-m", "deployments.serve",
                           "nightly"], log=log, program=sys.executable,
                          env={**server.env, "PREFECT_RUNNER_POLL_FREQUENCY": "1"})
    server.wait_for_log(log, "being served", timeout=120)
    return served


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_stopping_serve_neither_takes_over_nor_pauses_the_worker_pool_deployment(
    server: HrServer, nightly: dict[str, Any], signum: int,
) -> None:
    """Before: serve upserted ``nightly`` itself (its work pool dropped), SIGTERM paused
    it, SIGINT took ~18 s and "coroutine 'Runner.astop' was never awaited" was printed.
    After: serve has ``nightly-served``; the worker-pool deployment keeps pool and
    schedule; both signals end it within seconds, without that warning."""
    log = f"serve-{signal.Signals(signum).name}"
    served = _serve(server, log)
    try:
        asked = time.monotonic()
        served.send_signal(signum)
        code = served.wait(timeout=30)
        took = time.monotonic() - asked
    finally:
        if served.poll() is None:
            os.killpg(served.pid, signal.SIGKILL)
    shown = server.log_tail(log, chars=100_000)
    print(f"\nserve stopped by {signal.Signals(signum).name} in {took:.1f} s, exit {code}")
    assert took < 20, shown  # generous: the machine may be loaded
    assert code == 0, shown
    assert "never awaited" not in shown and "Traceback" not in shown, shown
    after = server.deployment(NIGHTLY)
    assert after["id"] == nightly["id"] and after["work_pool_name"] == POOL
    assert not after["paused"], "stopping serve paused the worker-pool deployment"
    assert _schedules(after) == _schedules(nightly), "serve replaced its schedules"
    assert after["parameters"] == nightly["parameters"]
    own = server.deployment(f"{NIGHTLY}-served")  # serve's own, paused as Prefect does
    assert own["id"] != nightly["id"] and own["work_pool_name"] is None
    assert own["paused"], shown


def _schedules(deployment: dict[str, Any]) -> list[tuple[bool, str]]:
    return sorted((s["active"], json.dumps(s["schedule"], sort_keys=True))
                  for s in deployment["schedules"])
