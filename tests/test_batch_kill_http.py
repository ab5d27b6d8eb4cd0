"""kill -9 of ``hr run`` over HTTP: a batched benchmark (two LLM arms and a grade judge,
``batch: true``) against the fake OpenAI batch server in its own process
(tests/batch_server_process.py, whose counters outlive each kill), killed at 3 random
moments, then run to its end: no request submitted or billed twice, no run lost.
bench/bench_batch_kill_http.py is the 20-kill battery."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def _spec(folder: Path, url: str, trial: int) -> Path:
    """Trial ``trial``'s benchmark in ``folder``: items of its own (no request body the
    same as another trial's, so the server's per-body counters speak for all)."""
    folder.mkdir()
    items = [{"id": f"q{i}", "question": f"Which city is number {trial * 100 + i}?",
              "document": f"City number {trial * 100 + i} is Paris{i}.",
              "label": f"Paris{i}"} for i in range(10)]
    (folder / "ref.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    model = f"{{{{model: 'openai:{{}}', base_url: '{url}', api_key_env: HR_KILL_KEY}}}}"
    spec = folder / "kill.yaml"
    spec.write_text(
        f"name: kill\nreference: ref.jsonl\nmax_error_rate: 1\nstore: {folder / 'results'}\n"
        f"arms:\n  reader: {{model: {model.format('reader')}, batch: true,\n"
        "           prompt: \"Document: {document}\\nQuestion: {question}\"}\n"
        f"  echo: {{model: {model.format('echo')}, prompt: \"{{question}}\", batch: true}}\n"
        f"scorer:\n  judge: {{model: {model.format('judge')}, batch: true,\n"
        "          rubric: \"Is the response's answer the reference's?\"}\n")
    return spec


def test_kill_9_of_hr_run_over_http_submits_nothing_twice_and_loses_no_run(
        tmp_path: Path) -> None:
    server = subprocess.Popen([sys.executable, str(ROOT / "tests/batch_server_process.py"),
                               "openai"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    assert server.stdin is not None and server.stdout is not None
    try:
        url = server.stdout.readline().strip()
        trial = 0
        spec = _spec(tmp_path / "trial0", url, trial)
        env = {**os.environ, "HR_KILL_KEY": "sk-kill", "PYTHONPATH": str(ROOT),
               "PREFECT_HOME": str(tmp_path / "prefect")}
        rng = random.Random(34)
        kills = 0
        while True:
            process = subprocess.Popen(
                [sys.executable, "-c", "from hr_cli import main; main()", "run", str(spec)],
                env=env, cwd=spec.parent, text=True, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, start_new_session=True)
            try:
                out, _ = process.communicate(timeout=rng.uniform(0.5, 12.0) if kills < 3
                                             else 600.0)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)  # hr and what it started
                process.communicate()
                kills += 1
                continue
            assert process.returncode == 0, out[-2000:]
            if kills >= 3:
                break
            trial += 1  # finished before 3 kills: a fresh benchmark
            spec = _spec(tmp_path / f"trial{trial}", url, trial)
        server.stdin.write("counts\n")
        server.stdin.flush()
        counts = json.loads(server.stdout.readline())
    finally:
        server.stdin.write("quit\n")
        server.stdin.flush()
        server.wait(timeout=10)
    assert counts["bodies_submitted_twice"] == 0 and counts["billed_twice"] == 0
    assert counts["requests"] == (trial + 1) * (20 + 40)  # 20 arm calls, 20 runs x 2 orders
    (run_dir,) = (spec.parent / "results" / "kill").iterdir()
    runs = pd.read_parquet(run_dir / "runs.parquet")
    assert len(runs) == 20 and runs["failure_kind"].ne("budget_stop").all()  # none lost
    assert runs["judge_status"].eq("ok").all() and runs["correct"].sum() == 10
