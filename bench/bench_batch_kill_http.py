"""kill -9 battery over HTTP (issue 34): ``hr run`` of a batched benchmark (two LLM arms and
a grade judge in two orders, ``batch: true`` on each) against a fake batch server in its
own process (tests/batch_server_process.py), killed (SIGKILL to its process group: hr
and whatever it started) at ``--kills`` random moments, each time started again, then
run to its end. The server's own counters say how many requests were submitted twice
and billed twice; the run folder's runs table says how many runs were lost.

Usage:
    nice -n 10 .venv/bin/python bench/bench_batch_kill_http.py [--kills 20] [--seed 34]
        [--provider openai|anthropic] [--items 40] [--span 25]
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


def _spec(folder: Path, url: str, provider: str, items: int) -> Path:
    rows = [{"id": f"q{i}", "question": f"Which city is number {i}?",
             "document": f"City number {i} is Paris{i}.", "label": f"Paris{i}"}
            for i in range(items)]
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
    parser.add_argument("--span", type=float, default=25.0,
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
        spec = _spec(folder, url, args.provider, args.items)
        try:
            started = time.perf_counter()
            kills, runs, outputs = 0, 0, []
            last = ""
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
                outputs.append((process.returncode, out[-400:]))
                last = out
                if process.returncode == 0 and kills >= args.kills:
                    break
                if runs > args.kills * 4:
                    raise SystemExit(f"no run reached its end: {outputs[-3:]}")
            seconds = time.perf_counter() - started
            server.stdin.write("counts\n")
            server.stdin.flush()
            counts = json.loads(server.stdout.readline())
        finally:
            if server.poll() is None:
                server.stdin.write("quit\n")
                server.stdin.flush()
                server.wait(timeout=10)
        (run_dir,) = (folder / "results" / "kill").iterdir()
        table = pd.read_parquet(run_dir / "runs.parquet")
        planned = 2 * args.items
        lost = planned - int(table["outcome"].notna().sum() if "outcome" in table
                             else len(table))
        print(f"provider {args.provider}: {kills} kills -9 over {runs} hr runs "
              f"({seconds:.0f} s); exits before the end: "
              f"{[code for code, _ in outputs[:-1]]}")
        print(f"server: {counts['created']} batches, {counts['requests']} requests submitted "
              f"(planned {planned} arm + {2 * planned} judge), "
              f"{counts['bodies_submitted_twice']} submitted twice, "
              f"{counts['billed_twice']} billed twice")
        print(f"runs table: {len(table)} rows of {planned}, lost {lost}, correct "
              f"{int(table['correct'].sum())}, judge ok "
              f"{int(table['judge_status'].eq('ok').sum())}, budget_stop "
              f"{int(table['failure_kind'].eq('budget_stop').sum())}")
        if "Results:" not in last:
            print(last[-1000:])


if __name__ == "__main__":
    main()
