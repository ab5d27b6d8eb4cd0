"""End to end on a real Prefect server: deploy, trigger, run on a process worker."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from e2e_support import PrefectServer

PROOF_FLOW = '''
import json, pathlib
from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_table_artifact

@flow(name="proof-flow")
def proof(store: str, n: int = 3) -> int:
    p = pathlib.Path(store)
    p.mkdir(parents=True, exist_ok=True)
    (p / "manifest.json").write_text(json.dumps({"n": n}))
    create_table_artifact(key="hr-progress", table=[{"done": n}])
    create_markdown_artifact(key="hr-summary", markdown="# ok")
    return n
'''

PROOF_YAML = '''
name: proof
prefect-version: 3.9.1
deployments:
- name: proof-nightly
  entrypoint: proofflow:proof
  parameters: {store: STORE}
  schedules:
  - cron: "0 2 * * *"
    timezone: UTC
  work_pool: {name: hr-process}
'''


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrefectServer]:
    root = tmp_path_factory.mktemp("e2e")
    with PrefectServer(root / "prefect-home", root) as srv:
        yield srv


def test_a_deployed_flow_runs_on_a_process_worker(server: PrefectServer) -> None:
    t0 = time.monotonic()
    store = server.cwd / "store"
    (server.cwd / "proofflow.py").write_text(PROOF_FLOW)
    (server.cwd / "prefect.yaml").write_text(PROOF_YAML.replace("STORE", str(store)))
    server.env["PYTHONPATH"] = str(server.cwd)
    server.cli("work-pool", "create", "hr-process", "--type", "process")
    server.cli("deploy", "--all")
    dep = server.api("GET", "/deployments/name/proof-flow/proof-nightly")
    run = server.api("POST", f"/deployments/{dep['id']}/create_flow_run", json={})
    worker = server.spawn(["worker", "start", "--pool", "hr-process", "--run-once",
                           "--limit", "1"], log="worker")
    assert worker.wait(timeout=60) == 0, server.log_tail("worker")
    state = server.api("GET", f"/flow_runs/{run['id']}")["state"]
    assert state["type"] == "COMPLETED", server.log_tail("worker")
    assert json.loads((store / "manifest.json").read_text()) == {"n": 3}
    arts = server.api("POST", "/artifacts/filter",
                      json={"artifacts": {"flow_run_id": {"any_": [run["id"]]}}})
    assert {a["key"] for a in arts} == {"hr-progress", "hr-summary"}
    print(f"e2e: {time.monotonic() - t0:.1f} s after server start")
