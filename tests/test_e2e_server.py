"""End to end on a real Prefect server: deploy prefect.yaml, trigger, run on process workers.

``prefect server start`` on a free port with its own PREFECT_HOME, the
``hr-process`` work pool, ``prefect deploy --all`` from the project root, then
two runs of the nightly deployment (the second with a drifting arm) and one of
judge validation, each picked up by ``prefect worker start --run-once``; then
``python -m deployments.serve`` serving the nightly deployment (as ``nightly-served``)
without a worker.
Everything is checked through the API and the store; every process started is
stopped by its process group, also on failure.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from drift_arms import reference_rows
from e2e_support import PrefectServer

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
POOL = "hr-process"
SPEC = """\
name: e2e-drift
reference: {path: reference.jsonl, item: question}
arms:
  steady: drift_arms:steady
  drifting: drift_arms:drifting
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrefectServer]:
    root = tmp_path_factory.mktemp("e2e")
    with PrefectServer(root / "prefect-home", ROOT) as srv:
        pythonpath = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH"))
                                     if p)
        srv.env["PYTHONPATH"] = pythonpath
        yield srv


def _spec(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = "".join(json.dumps(r) + "\n" for r in reference_rows(30))
    (folder / "reference.jsonl").write_text(rows)
    (folder / "spec.yaml").write_text(SPEC)
    return folder / "spec.yaml"


def _trigger(server: PrefectServer, deployment: str, parameters: dict[str, Any]) -> str:
    dep = server.api("GET", f"/deployments/name/{deployment}")
    run = server.api("POST", f"/deployments/{dep['id']}/create_flow_run",
                     json={"parameters": parameters})
    return str(run["id"])


def _run_worker(server: PrefectServer, log: str, **env: str) -> None:
    worker = server.spawn(
        ["worker", "start", "--pool", POOL, "--run-once", "--limit", "2",
         "--install-policy", "never"],
        log=log, env={**server.env, **env})
    assert worker.wait(timeout=90) == 0, server.log_tail(log)


def _state(server: PrefectServer, flow_run_id: str) -> str:
    return str(server.api("GET", f"/flow_runs/{flow_run_id}")["state"]["type"])


def _artifacts(server: PrefectServer, flow_run_ids: list[str]) -> dict[str, dict[str, Any]]:
    rows = server.api("POST", "/artifacts/filter",
                      json={"artifacts": {"flow_run_id": {"any_": flow_run_ids}}})
    return {str(a["key"]): a for a in rows if a.get("key")}


def _children(server: PrefectServer, parent_id: str) -> list[str]:
    """Flow runs started inside a flow run (the hr-benchmark subflow)."""
    tasks = server.api("POST", "/task_runs/filter",
                       json={"task_runs": {"flow_run_id": {"any_": [parent_id]}}})
    task_ids = [t["id"] for t in tasks]
    runs = server.api("POST", "/flow_runs/filter",
                      json={"flow_runs": {"parent_task_run_id": {"any_": task_ids}}})
    return [str(r["id"]) for r in runs]


def _events(server: PrefectServer, name: str) -> list[dict[str, Any]]:
    for _ in range(100):
        page = server.api("POST", "/events/filter", json={
            "filter": {"event": {"name": [name]}, "occurred": {"since": "2000-01-01T00:00:00Z"}},
            "limit": 50})
        if page["events"]:
            return list(page["events"])
        time.sleep(0.1)
    return []


def test_deployments_run_on_a_process_worker_and_a_drop_raises_an_alert(
    server: PrefectServer, tmp_path: Path,
) -> None:
    started = time.monotonic()
    spec, store = _spec(tmp_path / "spec"), tmp_path / "results"
    server.cli("work-pool", "create", POOL, "--type", "process")
    server.cli("deploy", "--all", "--prefect-file", "deployments/prefect.yaml")
    nightly = server.api("GET", "/deployments/name/hr-scheduled-benchmark/nightly")
    assert [s["schedule"]["cron"] for s in nightly["schedules"]] == ["0 2 * * *"]

    params = {"spec": str(spec), "store": str(store), "threshold": 0.1}
    first = _trigger(server, "hr-scheduled-benchmark/nightly", params)
    judge = _trigger(server, "hr-judge-validate/judge-validation",
                     {"store": str(tmp_path / "judges")})
    _run_worker(server, "worker-1")
    assert (_state(server, first), _state(server, judge)) == ("COMPLETED", "COMPLETED"), \
        server.log_tail("worker-1")

    second = _trigger(server, "hr-scheduled-benchmark/nightly", params)
    _run_worker(server, "worker-2", HR_TEST_DRIFT="1")
    assert _state(server, second) == "COMPLETED", server.log_tail("worker-2")

    manifests = [json.loads(p.read_text()) for p in store.glob("e2e-drift/*/manifest.json")]
    assert sorted(m["status"] for m in manifests) == ["completed", "completed"]
    for manifest in manifests:
        run_dir = store / "e2e-drift" / manifest["run_id"]
        assert (run_dir / "runs.parquet").is_file()
    assert list((tmp_path / "judges").glob("*.json"))

    arts = _artifacts(server, [second, *_children(server, second)])
    assert {"e2e-drift-progress", "e2e-drift-summary", "e2e-drift-report",
            "hr-regression-e2e-drift"} <= set(arts)
    assert arts["e2e-drift-progress"]["data"] == 100.0
    summary = json.loads(arts["e2e-drift-summary"]["data"])
    assert {r["arm"]: r["accuracy"] for r in summary} == {
        "steady": 1.0, "drifting": 0.333}  # rounded as the report rounds it
    alert = str(arts["hr-regression-e2e-drift"]["data"])
    assert "# Regression check: regression in drifting" in alert

    events = _events(server, "hr.regression.detected")
    assert [(e["resource"]["prefect.resource.id"], e["payload"]["arm"]) for e in events] == [
        ("hr.spec.e2e-drift", "drifting")]
    payload = events[0]["payload"]
    print(f"\ne2e: {time.monotonic() - started:.1f} s after the server was up; alert: "
          f"{payload['arm']} {payload['previous_accuracy']:.3f} -> {payload['accuracy']:.3f}, "
          f"diff {payload['diff']:.3f} CI [{payload['ci_low']:.3f}, {payload['ci_high']:.3f}]")
    print(alert)


def test_serve_runs_the_same_deployment_without_a_worker(
    server: PrefectServer, tmp_path: Path,
) -> None:
    spec, store = _spec(tmp_path / "spec"), tmp_path / "results"
    served = server.spawn(["-m", "deployments.serve", "nightly"], log="serve",
                          program=str(Path(sys.executable)),
                          env={**server.env, "PREFECT_RUNNER_POLL_FREQUENCY": "1"})
    server.wait_for_log("serve", "being served")
    run = _trigger(server, "hr-scheduled-benchmark/nightly-served",  # serve's own name
                   {"spec": str(spec), "store": str(store)})
    state = server.wait_for_state(run, {"COMPLETED", "FAILED", "CRASHED"})
    assert state == "COMPLETED", server.log_tail("serve")
    assert [m.parent.name for m in store.glob("e2e-drift/*/manifest.json")] == [
        json.loads(next(store.glob("e2e-drift/*/manifest.json")).read_text())["run_id"]]
    assert served.poll() is None  # still serving until the harness stops it
