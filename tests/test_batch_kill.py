"""kill -9 at 20 moments of a batched benchmark (two arms and a judge, 11 batches), then
a run to the end: no request submitted twice, no run lost. The provider is a fake whose
state is files (tests/batch_file_fake.py), so it outlives each killed process."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
from batch_file_fake import submissions

DRIVER = Path(__file__).with_name("batch_file_fake.py")


def _start(state: Path, store: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, str(DRIVER), str(state), str(store)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _check(state: Path, store: Path, out: str) -> None:
    assert "done 40" in out
    counts = submissions(state)
    assert sum(counts.values()) == 80 + 160  # 80 arm calls, 80 runs x 2 judge orders
    assert max(counts.values()) == 1  # no request submitted twice
    (run_dir,) = (store / "kill").iterdir()
    runs = pd.read_parquet(run_dir / "runs.parquet")
    assert len(runs) == 80 and runs["failure_kind"].ne("budget_stop").all()  # none lost
    assert runs["judge_status"].eq("ok").all() and runs["correct"].sum() == 40


def test_kill_9_at_20_moments_submits_no_request_twice_and_loses_no_run(
        tmp_path: Path) -> None:
    rng = random.Random(34)
    kills = trials = 0
    while kills < 20:  # trials: a fresh benchmark killed until a run reaches its end
        trials += 1
        state, store = tmp_path / f"provider{trials}", tmp_path / f"results{trials}"
        while True:
            process = _start(state, store)
            moment = rng.uniform(0.2, 2.5) if kills < 20 else 600.0
            try:
                out, err = process.communicate(timeout=moment)
            except subprocess.TimeoutExpired:
                os.kill(process.pid, signal.SIGKILL)
                process.communicate()
                kills += 1
                continue
            assert process.returncode == 0, err[-2000:]
            _check(state, store, out)
            break
    assert kills == 20
    print(f"{kills} kills -9 over {trials} benchmarks: every request submitted once, no run lost")
