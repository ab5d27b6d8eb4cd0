"""kill -9 battery over HTTP (issue 34): ``hr run`` of a batched benchmark (two LLM arms and
a grade judge in two orders, ``batch: true`` on each) against a fake batch server in its
own process (tests/batch_server_process.py), killed (SIGKILL to its process group: hr
and whatever it started) at ``--kills`` random moments, each time started again, then
run to its end. The server's own counters say how many requests were submitted twice
and billed twice; the run folder's runs table says how many runs were lost.

Usage:
    nice -n 10 .venv/bin/python bench/bench_batch_kill_http.py [--kills 20] [--seed 34]
        [--provider openai|anthropic] [--items 40] [--span 20]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-kill-battery"


def _spec(folder: Path, url: str, provider: str, items: int, trial: int) -> Path:
    """Trial ``trial``'s benchmark: items of its own (no body the same as another trial's,
    so the server's per-body counters speak for every trial at once)."""
    folder.mkdir(parents=True)
    rows = [{"id": f"q{i}", "question": f"Which city is number {trial * 10_000 + i}?",
             "document": f"City number {trial * 10_000 + i} is Paris{i}.",
             "label": f"Paris{i}"} for i in range(items)]
    (folder / "ref.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    model = ("{{model: '{p}:{name}', base_url: '{url}', api_key_env: HR_KILL_KEY, "
             "params: {{max_tokens: 64}}}}")

    def m(name: str) -> str:
        return model.format(p=provider, name=name, url=url)

    spec = folder / "kill.yaml"
    spec.write_text(
        f"name: kill\nreference: ref.jsonl\nmax_error_rate: 1\nstore: {folder / 'results'}\n"
        f"arms:\n  reader: {{model: {m('reader')}, batch: true,\n"
        "           prompt: \"Document: {document}\\nQuestion: {question}\"}\n"
        f"  echo: {{model: {m('echo')}, prompt: \"{{question}}\", batch: true}}\n"
        f"scorer:\n  judge: {{model: {m('judge')}, batch: true,\n"
        "          rubric: \"Is the response's answer the reference's?\"}\n")
    return spec


def _hr(spec: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", "from hr_cli import main; main()", "run",
                             str(spec)], env=env, cwd=spec.parent, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--provider", default="openai", choices=["openai", "anthropic"])
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--span", type=float, default=20.0,
                        help="kill moments uniform in 0.5..SPAN s (an unkilled run: ~25 s)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        server = subprocess.Popen([sys.executable, str(ROOT / "tests/batch_server_process.py"),
                                   args.provider], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        assert server.stdout is not None and server.stdin is not None
        url = server.stdout.readline().strip()
        env = {**os.environ, "HR_KILL_KEY": KEY, "PREFECT_HOME": str(folder / "prefect"),
               "PYTHONPATH": str(ROOT), "COLUMNS": "160"}
        try:
            started = time.perf_counter()
            kills = runs = trials = lost = 0
            exits: list[int] = []
            while kills < args.kills:  # a fresh benchmark killed until a run reaches its end
                trials += 1
                trial = folder / f"trial{trials}"
                spec = _spec(trial, url, args.provider, args.items, trials)
                while True:
                    process = _hr(spec, env)
                    runs += 1
                    moment = rng.uniform(0.5, args.span) if kills < args.kills else 900.0
                    try:
                        out, _ = process.communicate(timeout=moment)
                    except subprocess.TimeoutExpired:
                        os.killpg(process.pid, signal.SIGKILL)
                        process.communicate()
                        kills += 1
                        continue
                    exits.append(process.returncode)
                    if process.returncode == 0:
                        break
                    if exits[-3:] == [process.returncode] * 3 and len(exits) >= 3:
                        raise SystemExit(f"hr run failed 3 times: {out[-2000:]}")
                (run_dir,) = (trial / "results" / "kill").iterdir()
                table = pd.read_parquet(run_dir / "runs.parquet")
                ok = table[table["judge_status"].eq("ok") & table["failure_kind"].ne(
                    "budget_stop")]
                lost += 2 * args.items - len(ok)
                assert int(ok["correct"].sum()) == args.items, table
            seconds = time.perf_counter() - started
            server.stdin.write("counts\n")
            server.stdin.flush()
            counts = json.loads(server.stdout.readline())
        finally:
            if server.poll() is None:
                server.stdin.write("quit\n")
                server.stdin.flush()
                server.wait(timeout=10)
        planned = 2 * args.items
        print(f"provider {args.provider}: {kills} kills -9 over {trials} benchmarks, {runs} "
              f"hr runs ({seconds:.0f} s); exit codes of the runs not killed: {exits}")
        print(f"server: {counts['created']} batches, {counts['requests']} requests submitted "
              f"(planned {trials} x ({planned} arm + {2 * planned} judge) = "
              f"{trials * 3 * planned}), {counts['bodies_submitted_twice']} submitted twice, "
              f"{counts['billed_twice']} billed twice")
        print(f"runs: {trials * planned} planned, {lost} lost (not made, or not scored)")


if __name__ == "__main__":
    main()
