"""The golden run: a 10,000-item, 4-arm, 2-run benchmark rebuilt from one fixed journal.

Refactors that must not change results (issue 14's check, issue 21's) compare what
``hr run`` (the flow), ``hr summary``, ``hr report`` and the Python API give for the
same journal before and after a change:

    .venv/bin/python bench/golden.py seed /tmp/golden-seed       # once, on the old code
    .venv/bin/python bench/golden.py check /tmp/golden-seed /tmp/out-old   # old code
    .venv/bin/python bench/golden.py check /tmp/golden-seed /tmp/out-new   # new code
    .venv/bin/python bench/golden.py compare /tmp/out-old /tmp/out-new [IGNORED_REGEX...]

``seed`` runs the spec once and then removes the same number of runs of every arm
from the journal (the runs a budget stops). ``check`` copies the seed's run folder
into a fresh store and runs the spec again with ``--budget-calls`` equal to the runs
each arm has made: no arm is called, the budget stops the rest, and every result is
made from the journal: the runs table (values and dtypes), the summary, every pair's
``compare``, the coverage warnings, ``report.md``, ``report.html`` of ``hr run`` and
of ``hr report``, the terminal output of ``hr run`` and ``hr summary``. Times and the
temporary folder's path are masked.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HR = [str(Path(sys.executable).with_name("hr"))]
WORK = Path(os.environ.get("HR_GOLDEN_WORK", "/tmp/hr-golden-work"))
SPEC = """name: golden
reference: reference.jsonl
arms:
  partial: golden_arms:partial
  flaky: golden_arms:flaky
  abstain: golden_arms:abstain
  costly: golden_arms:costly
scorer: f1
runs: 2
concurrency: 8
max_error_rate: 1
"""


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'bench'}:{ROOT}", COLUMNS="200",
               PREFECT_LOGGING_LEVEL="WARNING", PREFECT_SERVER_ANALYTICS_ENABLED="false",
               NO_COLOR="1", TERM="dumb")
    env.pop("FORCE_COLOR", None)
    return env


def _hr(*args: str, cwd: Path) -> str:
    done = subprocess.run([*HR, *args], cwd=cwd, env=_env(), capture_output=True, text=True,
                          check=False)
    if done.returncode not in (0, 3):
        sys.exit(f"hr {' '.join(args)}: exit {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done.stdout + done.stderr


def _run_dir(store: Path) -> Path:
    (found,) = [p.parent for p in store.glob("golden/*/manifest.json")]
    return found


def seed(out: Path) -> None:
    sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]
    from golden_arms import reference_items

    out.mkdir(parents=True)
    with open(out / "reference.jsonl", "w", encoding="utf-8") as handle:
        for item in reference_items():
            handle.write(json.dumps(item, ensure_ascii=False) + "\n")
    (out / "spec.yaml").write_text(SPEC, encoding="utf-8")
    _hr("run", "spec.yaml", "--store", "store", cwd=out)
    run_dir = _run_dir(out / "store")
    lines = (run_dir / "journal.jsonl").read_bytes().splitlines(keepends=True)
    kept = [line for line in lines if not _dropped(json.loads(line))]
    for path in run_dir.iterdir():
        if path.name not in ("journal.jsonl", "manifest.json"):
            path.unlink()
    (run_dir / "journal.jsonl").write_bytes(b"".join(sorted(kept)))
    print(f"seeded {run_dir}: {len(kept)} of {len(lines)} runs kept")


def _dropped(record: dict) -> bool:
    return int(record["item_id"].split("-")[1]) % 9 == 4 and record["run"] == 2


def _mask(text: str) -> str:
    text = text.replace(str(WORK), "<work>")
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(\+00:00|Z)?", "<time>", text)
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?( UTC)?", "<time>", text)
    text = re.sub(r"\b\d+(\.\d+)? ?(s|ms|seconds)\b", "<dur>", text)
    text = re.sub(r"\d+(\.\d+)? runs/s", "<rate>", text)
    return text


def check(seed_dir: Path, out: Path) -> None:
    import pandas as pd
    import pyarrow.parquet as pq

    sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]
    from hr_core import Benchmark

    shutil.rmtree(WORK, ignore_errors=True)
    shutil.copytree(seed_dir, WORK)
    out.mkdir(parents=True, exist_ok=True)
    run_dir = _run_dir(WORK / "store")
    made = {}
    for line in (run_dir / "journal.jsonl").read_bytes().splitlines():
        arm = json.loads(line)["arm"]
        made[arm] = made.get(arm, 0) + 1
    (calls,) = set(made.values())
    text = _hr("run", "spec.yaml", "--store", "store", "--budget-calls", str(calls), cwd=WORK)
    (out / "hr_run.txt").write_text(_mask(text), encoding="utf-8")
    for name in ("report.md", "report.html", "summary.csv", "summary.json"):
        if (run_dir / name).exists():
            (out / f"run_{name}").write_text(_mask((run_dir / name).read_text("utf-8")), "utf-8")
    (out / "hr_summary.txt").write_text(_mask(_hr("summary", str(run_dir), cwd=WORK)), "utf-8")
    _hr("report", str(run_dir), "-o", str(WORK / "again.html"), cwd=WORK)
    (out / "hr_report.html").write_text(_mask((WORK / "again.html").read_text("utf-8")), "utf-8")
    table = pq.read_table(run_dir / "runs.parquet")
    frame = table.to_pandas()
    with pd.option_context("display.precision", 17):
        (out / "runs_schema.txt").write_text(str(table.schema) + "\n" + str(frame.dtypes), "utf-8")
    frame.to_csv(out / "runs.csv", index=False, float_format="%.17g")
    bench = Benchmark.load(run_dir)
    bench.summary().to_csv(out / "summary.csv", index=False, float_format="%.17g")
    lines = [repr(bench.compare(a, b)) for a, b in itertools.permutations(bench.arms, 2)]
    lines += bench.coverage_warnings()
    (out / "compare_and_warnings.txt").write_text(_mask("\n".join(lines)), "utf-8")
    manifest = json.loads((run_dir / "manifest.json").read_text("utf-8"))
    (out / "manifest.json").write_text(_mask(json.dumps(manifest, indent=1, sort_keys=True)),
                                       "utf-8")
    print(f"wrote {out}")


_VARYING = [  # what differs between two invocations of the same code
    (r" *\d+(\.\d+)? runs/s", " <rate>"),
    (r"(&quot;|\")(\w+_s|engine_seconds)(&quot;|\"): [\d.e-]+", r"\1\2\3: <dur>"),
    (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<uuid>"),
]


def compare(old: Path, new: Path, ignore: list[str]) -> int:
    """Print the lines that differ between two ``check`` outputs (run-to-run variation
    masked, lines matching an ``ignore`` pattern left out); 1 when any does."""
    import difflib

    differs = 0
    for path in sorted(old.iterdir()):
        texts = []
        for side in (old, new):
            text = (side / path.name).read_text("utf-8")
            for pattern, repl in _VARYING:
                text = re.sub(pattern, repl, text)
            texts.append([t for t in text.splitlines()
                          if not any(re.search(i, t) for i in ignore)])
        diff = list(difflib.unified_diff(*texts, str(old / path.name), str(new / path.name),
                                         n=0, lineterm=""))
        if diff:
            differs = 1
            print("\n".join(line[:300] for line in diff[:20]))
    print("identical" if not differs else "differs")
    return differs


if __name__ == "__main__":
    if sys.argv[1] == "seed":
        seed(Path(sys.argv[2]))
    elif sys.argv[1] == "compare":
        sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4:]))
    else:
        check(Path(sys.argv[2]), Path(sys.argv[3]))
