"""Time to result with Prefect's temporary server: ``hr run`` without the hr server, A/B.

The 10-item, 2-arm run of ``bench_startup.py`` (``hr run spec.yaml --fresh``, no hr
server: hr starts Prefect's temporary server for the process and stops it at exit),
timed from spawn to exit for this checkout and for ``--against REV`` (that commit's
tree, ``git archive``d into a temporary folder), each with its own ``PREFECT_HOME``
(database created by an untimed warm-up run), the two interleaved (rotated each
repetition), ``--reps`` times (default 10): median and 90th percentile of the wall,
median CPU (user + system of hr and the children it waited for: the server too) and
peak RSS (``wait4``: the largest of hr and those children, often the server).

Run: ``.venv/bin/python bench/bench_temporary.py [--reps N] [--against REV]``
(default REV ``main``).
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _workloads import p90
from bench_startup import SPEC, interleaved, measure

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
PYTHON = sys.executable
HR = "import sys; from hr_cli import main; sys.argv[0] = 'hr'; sys.exit(main())"


def _tree(rev: str, into: Path) -> Path:
    """The source tree of ``rev`` (this repository's commit), extracted into ``into``."""
    into.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--against", default="main")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hr-bench-temporary-"))
    lines = (ROOT / "hr_core/examples/docqa_reference.jsonl").read_text().splitlines()[:10]
    (work / "ref10.jsonl").write_text("\n".join(lines) + "\n")
    (work / "spec.yaml").write_text(SPEC)
    trees = {"this checkout": ROOT, f"{args.against}": _tree(args.against, work / "against")}
    base = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    base.update(PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_LOGGING_LEVEL="WARNING",
                COLUMNS="120")
    log = work / "bench.log"
    contenders = {}
    for n, (name, tree) in enumerate(trees.items()):
        for package in ("hr_core", "hr_cli", "flows", "tasks"):  # as an installed package
            compileall.compile_dir(tree / package, quiet=1)
        home = work / f"home-{n}"
        home.mkdir()
        env = dict(base, PREFECT_HOME=str(home),
                   PYTHONPATH=os.pathsep.join([str(BENCH), str(tree)]))
        argv = [PYTHON, "-c", HR, "run", "spec.yaml", "--store", f"results-{n}", "--fresh"]
        contenders[name] = (lambda a=argv, e=env: measure(a, e, work, log))
    print(f"work folder {work}; load average {os.getloadavg()[0]:.2f}")
    print("warm-up (one untimed run each: creates each temporary server's database)")
    for contender in contenders.values():
        contender()
    results = interleaved(contenders, args.reps)
    print(f"\n{args.reps} interleaved repetitions, load average {os.getloadavg()[0]:.2f}\n")
    print("| hr run, temporary server | wall median s | wall p90 s | CPU s | peak RSS MB |")
    print("|---|---:|---:|---:|---:|")
    for name, (_, rss, cpu, walls) in results.items():
        print(f"| {name} | {statistics.median(walls):.2f} | {p90(walls):.2f} | {cpu:.2f} | "
              f"{rss:.0f} |")


if __name__ == "__main__":
    main()
