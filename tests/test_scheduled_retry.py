"""A scheduled flow run killed mid-way and run again resumes its own run: no call is paid twice.

The first attempt is killed by a real SIGKILL from inside an arm; the retry executes
the same flow run (same flow run id, as a Prefect retry or a re-run from the
dashboard does) in a new process, against the same Prefect server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from prefect.settings import PREFECT_API_URL

ROOT = Path(__file__).resolve().parents[1]
N_ITEMS = 120
KILL_AT = 60

ARMS = textwrap.dedent("""
    import os, signal, time

    def counted(question):
        with open(os.environ["HR_CALLS"], "a") as log:
            log.write(question + "\\n")
        kill_at = os.environ.get("HR_KILL_AT")
        if kill_at and sum(1 for _ in open(os.environ["HR_CALLS"])) >= int(kill_at):
            time.sleep(1.5)  # the journal flushes about every second: the runs before are kept
            os.kill(os.getpid(), signal.SIGKILL)
        return "a" + question
""")

SCRIPT = textwrap.dedent("""
    import asyncio, sys
    from prefect.client.orchestration import get_client
    from prefect.flow_engine import run_flow
    from flows.scheduled import hr_scheduled_benchmark

    mode, spec, store, ident = sys.argv[1:5]
    params = {"spec": spec, "store": store}

    async def flow_run():
        async with get_client() as client:
            if mode == "first":
                run = await client.create_flow_run(hr_scheduled_benchmark, parameters=params)
                open(ident, "w").write(str(run.id))
                return run
            return await client.read_flow_run(open(ident).read())

    run = asyncio.run(flow_run())
    print(asyncio.run(run_flow(hr_scheduled_benchmark, flow_run=run, parameters=params)))
""")


def test_a_killed_scheduled_run_run_again_resumes_its_own_run_id(
    prefect_harness: None, tmp_path: Path,
) -> None:
    folder = tmp_path / "spec"
    folder.mkdir()
    (folder / "retry_arms.py").write_text(ARMS)
    (folder / "reference.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "question": str(i), "label": f"a{i}"}) + "\n"
        for i in range(N_ITEMS)))
    spec = folder / "spec.yaml"
    spec.write_text("name: nightly-retry\nreference: {path: reference.jsonl, item: question}\n"
                    "concurrency: 1\narms:\n  counted: retry_arms:counted\n")
    script = tmp_path / "attempt.py"
    script.write_text(SCRIPT)
    calls, ident, store = tmp_path / "calls.log", tmp_path / "flow_run_id", tmp_path / "store"
    env = {**os.environ, "PREFECT_API_URL": str(PREFECT_API_URL.value()),
           "PYTHONPATH": str(ROOT), "HR_CALLS": str(calls)}
    args = [sys.executable, str(script), "", str(spec), str(store), str(ident)]

    args[2] = "first"
    first = subprocess.run(args, env={**env, "HR_KILL_AT": str(KILL_AT)}, timeout=180,
                           capture_output=True, text=True)
    assert first.returncode == -9, first.stderr[-2000:]
    run_dirs = list((store / "nightly-retry").iterdir())
    assert len(run_dirs) == 1
    journaled = sum(1 for _ in (run_dirs[0] / "journal.jsonl").open())
    assert journaled >= KILL_AT - 2
    before = calls.read_text().count("\n")

    args[2] = "again"
    again = subprocess.run(args, env=env, timeout=180, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-2000:]
    assert [p.name for p in (store / "nightly-retry").iterdir()] == [run_dirs[0].name]
    retried = calls.read_text().count("\n") - before
    print(f"killed after {before} calls ({journaled} journaled); the retry made {retried}")
    assert retried == N_ITEMS - journaled  # only the runs the kill lost or never started
