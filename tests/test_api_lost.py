"""The Prefect server dies mid-run (kill -9 by PID): hr stops in seconds, one line, resumable."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from hr_cli.api_watch import EXIT_API_LOST
from hr_cli.server import state_path

HR = str(Path(sys.executable).with_name("hr"))
N_ITEMS = 400

ARMS = """
import time

def slow(question):
    time.sleep(0.05)
    return "a" + question
"""


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PREFECT_") and k != "DO_NOT_TRACK"}
    env.update(PREFECT_HOME=str(home), COLUMNS="120")
    return env


def test_a_dead_prefect_server_stops_the_run_in_seconds_and_a_rerun_resumes(
        tmp_path: Path) -> None:
    home = tmp_path / "prefect-home"
    home.mkdir()
    (tmp_path / "slow_arms.py").write_text(ARMS)
    (tmp_path / "ref.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "question": str(i), "label": f"a{i}"}) + "\n"
        for i in range(N_ITEMS)))
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"name: api-lost\nreference: {{path: ref.jsonl, item: question}}\n"
                    f"store: {tmp_path / 'store'}\nconcurrency: 2\n"
                    "arms:\n  slow: slow_arms:slow\n")
    env = _env(home)
    started = subprocess.run([HR, "server", "start"], env=env, capture_output=True, text=True,
                             timeout=180)
    assert started.returncode == 0, started.stderr
    server_pid = int(json.loads(state_path(home).read_text())["pid"])
    run = subprocess.Popen([HR, "run", str(spec)], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        journal = None
        deadline = time.monotonic() + 120
        while journal is None or journal.stat().st_size < 2000:
            assert run.poll() is None and time.monotonic() < deadline, run.stderr
            journal = next((tmp_path / "store").glob("api-lost/*/journal.jsonl"), None)
            time.sleep(0.1)
        os.killpg(server_pid, signal.SIGKILL)
        killed = time.monotonic()
        _, err = run.communicate(timeout=60)
        took = time.monotonic() - killed
    finally:
        if run.poll() is None:
            run.kill()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server_pid, signal.SIGKILL)
    print(f"hr exited {took:.1f} s after the server was killed; stderr: {err!r}")
    assert run.returncode == EXIT_API_LOST
    assert took < 10
    assert "stopped answering" in err and "hr server start" in err and "to resume" in err
    assert "Traceback" not in err and len(err.splitlines()) <= 3
    manifest = json.loads(next((tmp_path / "store").glob("api-lost/*/manifest.json"))
                          .read_text())
    assert manifest["status"] == "interrupted"
    kept = sum(1 for _ in journal.open())
    assert 0 < kept < N_ITEMS

    again = subprocess.run([HR, "server", "start"], env=env, capture_output=True, text=True,
                           timeout=180)
    assert again.returncode == 0, again.stderr
    try:
        done = subprocess.run([HR, "run", str(spec)], env=env, capture_output=True, text=True,
                              timeout=240)
        assert done.returncode == 0, done.stderr
        final = json.loads(next((tmp_path / "store").glob("api-lost/*/manifest.json"))
                           .read_text())
        assert final["status"] == "completed"
    finally:
        subprocess.run([HR, "server", "stop"], env=env, capture_output=True, timeout=60)
