"""Time to result, whole process: hr (server up) against pydantic-evals and plain Python.

Four contenders run the same two functions (``bench/startup_arms.py``) on the
same 10 document-QA items (the first 10 of ``hr_core/examples/docqa_reference.jsonl``)
and print a result table:

- (a) ``hr run spec.yaml --fresh``, with the hr server up (``hr server start``): the
  run in the ``hr`` process (the warm runner that once ran it in a forked child was
  removed, issue 31; see bench/README.md);
- (b) the same through the Python API: ``hr_benchmark("spec.yaml", fresh=True)``;
- (c) pydantic-evals: a ``Dataset`` of the 10 cases, an exact-match evaluator,
  ``evaluate_sync`` per function, the report printed;
- (d) plain Python: a loop calling both functions and counting exact matches;
- (e) a bare Prefect flow against the same server: one task per function, the
  runs as a pandas table written to Parquet (what any Prefect flow run in the
  calling process that stores a table costs: hr's floor).

Each is a new process (interpreter start, imports, work, exit), timed from spawn
to exit (hr's own modules byte-compiled first, as an installed package is), with
its peak RSS and CPU from ``wait4``; the contenders are interleaved (rotated each repetition)
and the medians and 90th percentiles of ``--reps`` (default 10) repetitions are
reported, with ratios to (c) and (d). Also timed: ``hr --help``, a refused
command (``hr run missing.yaml``: the full app imported, the command line
refused, exit 2), ``hr run --help`` (both help pages rendered by the full app,
its commands' modules imported lazily), and their floors in
the same rounds: ``python -c pass``, ``python -S -c pass``, ``python -I -c pass``
(``--startup-only``: these alone, no ``hr demo``). Then ``hr demo`` with the server up against ``hr
demo`` with Prefect's temporary server (its own ``PREFECT_HOME``, database
created beforehand), interleaved, ``--demo-reps`` times (default 3; 0 skips it).

Targets: (a) <= 0.8x (c) (issue 25; (b) <= 1.5x, issue 11); ``hr --help`` and
a refused command under 0.5 s (issue 33); ``hr demo`` with the server <= 1/3 of its time with the
temporary server.

Run: ``.venv/bin/python bench/bench_startup.py [--reps N] [--demo-reps N]``
(needs ``pip install -e '.[bench]'`` for pydantic-evals). The hr server is
started in a temporary ``PREFECT_HOME`` and stopped at the end.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _workloads import p90

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
PYTHON = sys.executable
HR = str(Path(sys.executable).with_name("hr"))

SPEC = """\
name: startup-10
reference: ref10.jsonl
arms:
  first_number: startup_arms:first_number
  last_sentence: startup_arms:last_sentence
scorer: exact
"""

API = """\
from flows import hr_benchmark
bench = hr_benchmark("spec.yaml", store="results-api", fresh=True)
print(bench.summary()[["arm", "accuracy", "ci_low", "ci_high"]].to_string())
"""

PYDANTIC_EVALS = """\
import json
from dataclasses import dataclass

from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import Evaluator, EvaluatorContext

from startup_arms import ARMS, matches


@dataclass
class Exact(Evaluator):
    def evaluate(self, ctx: EvaluatorContext) -> bool:
        return matches(ctx.output, ctx.expected_output)


rows = [json.loads(line) for line in open("ref10.jsonl")]
cases = [Case(name=r["id"], inputs={"document": r["document"], "question": r["question"]},
              expected_output=r["label"]) for r in rows]
dataset = Dataset(name="startup-10", cases=cases, evaluators=[Exact()])
for name, arm in ARMS.items():
    report = dataset.evaluate_sync(arm, name=name)
    report.print(include_input=False, include_output=False)
"""

BARE_PREFECT = """\
import asyncio
import gc
import json

gc.disable()  # as hr does: the collector paused while Prefect is imported, then frozen
import pandas as pd
from prefect import flow, task
from prefect.cache_policies import NO_CACHE

gc.enable()
gc.freeze()
from startup_arms import ARMS, matches


@task(cache_policy=NO_CACHE, persist_result=False)  # as hr's tasks
async def run_arm(name, rows):
    runs = []
    for r in rows:
        output = ARMS[name]({"document": r["document"], "question": r["question"]})
        runs.append({"arm": name, "id": r["id"], "output": output,
                     "correct": matches(output, r["label"])})
    return runs


@flow(name="bare-startup-10", persist_result=False)  # async, as hr's flow
async def bare():
    rows = [json.loads(line) for line in open("ref10.jsonl")]
    table = pd.DataFrame([run for name in ARMS for run in await run_arm(name, rows)])
    table.to_parquet("bare-runs.parquet")
    return table


print(asyncio.run(bare()).groupby("arm")["correct"].mean().to_string())
"""

PLAIN = """\
import json

from startup_arms import ARMS, matches

rows = [json.loads(line) for line in open("ref10.jsonl")]
for name, arm in ARMS.items():
    right = sum(matches(arm({"document": r["document"], "question": r["question"]}),
                        r["label"]) for r in rows)
    print(f"{name}: {right}/{len(rows)} correct")
"""


def measure(argv: list[str], env: dict[str, str], cwd: Path,
            log: Path, expect: int = 0) -> tuple[float, float, float]:
    """Wall seconds from spawn to exit, peak RSS (MB) and CPU seconds (user + system, the
    process and the children it waited for) of one process; raises on failure."""
    with log.open("ab") as out:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != expect:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{tail}")
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


Figures = tuple[float, float, float, list[float]]


def interleaved(contenders: dict[str, Callable[[], tuple[float, float, float]]],
                reps: int) -> dict[str, Figures]:
    """Median wall, peak RSS and CPU per contender over ``reps`` rotated rounds (+ walls)."""
    walls: dict[str, list[float]] = {name: [] for name in contenders}
    rss: dict[str, list[float]] = {name: [] for name in contenders}
    cpu: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for rep in range(reps):
        order = names[rep % len(names):] + names[:rep % len(names)]
        for name in order:
            wall, peak, seconds = contenders[name]()
            walls[name].append(wall)
            rss[name].append(peak)
            cpu[name].append(seconds)
            print(f"  rep {rep + 1}/{reps} {name:<26} {wall:6.2f} s {peak:6.0f} MB "
                  f"cpu {seconds:5.2f} s", flush=True)
    return {n: (statistics.median(walls[n]), statistics.median(rss[n]),
                statistics.median(cpu[n]), walls[n]) for n in names}


def _startup_table(results: dict[str, Figures], reps: int) -> None:
    """hr --help, hr run --help and a refused command against the interpreter's floors."""
    floor = results["floor: python -c pass"]
    bare = results["floor: python -S -c pass"]
    print(f"\nstartup, whole process, medians and p90 of {reps} (load average "
          f"{os.getloadavg()[0]:.1f}, {os.cpu_count()} cores; target < 0.5 s)")
    print("| process | wall median (s) | wall p90 (s) | median / python -c pass | "
          "median / python -S | CPU (s) | peak RSS (MB) |")
    print("|---|---|---|---|---|---|---|")
    for name, (wall, peak, seconds, walls) in results.items():
        if name.startswith(("hr --help", "hr run --help", "refused", "floor")):
            print(f"| {name} | {wall:.3f} | {p90(walls):.3f} | {wall / floor[0]:.2f} | "
                  f"{wall / bare[0]:.2f} | {seconds:.3f} | {peak:.0f} |")


def _whole_table(results: dict[str, Figures], reps: int) -> None:
    """The 10-item run's contenders against pydantic-evals (c) and plain Python (d)."""
    c, d = results["(c) pydantic-evals"], results["(d) plain Python"]
    print(f"\n10 items x 2 arms, whole process, medians and p90 of {reps} "
          f"(load average {os.getloadavg()[0]:.1f} at the end, {os.cpu_count()} cores)")
    print("| contender | wall median (s) | wall p90 (s) | median / (c) | p90 / (c) p90 | "
          "median / (d) | CPU (s) | CPU / (c) | peak RSS (MB) |")
    print("|---|---|---|---|---|---|---|---|---|")
    c90 = p90(c[3])
    for name, (wall, peak, seconds, walls) in results.items():
        print(f"| {name} | {wall:.2f} | {p90(walls):.2f} | {wall / c[0]:.2f} | "
              f"{p90(walls) / c90:.2f} | {wall / d[0]:.2f} | {seconds:.2f} | "
              f"{seconds / c[2]:.2f} | {peak:.0f} |")
    e = results["(e) bare Prefect flow"]
    a = results["(a) hr run"]
    print(f"\n(a) hr run / (c) pydantic-evals: median {a[0] / c[0]:.2f}x, p90 "
          f"{p90(a[3]) / c90:.2f}x (target <= 0.8); (a) / bare Prefect (e) "
          f"{a[0] / e[0]:.2f}x; hr --help {results['hr --help'][0]:.3f} s (target < 0.5 s), "
          f"refused command {results['refused command'][0]:.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--demo-reps", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("--startup-only", action="store_true",
                        help="only hr --help, a refused command and their floors (no hr demo)")
    args = parser.parse_args()

    # bytecode caches for hr's own modules, as a regular install (a wheel) has them and a
    # user's first run writes them: with PYTHONDONTWRITEBYTECODE set (this machine's
    # environment) an editable install would compile ~90 modules in every process, ~70 ms
    # of CPU that pydantic-evals (installed, byte-compiled) never pays
    for package in ("hr_core", "hr_cli", "flows", "tasks"):
        compileall.compile_dir(ROOT / package, quiet=1)
    compileall.compile_file(BENCH / "startup_arms.py", quiet=1)
    work = Path(tempfile.mkdtemp(prefix="hr-bench-startup-"))
    home, temporary_home = work / "prefect-home", work / "prefect-home-temporary"
    home.mkdir()
    temporary_home.mkdir()
    lines = (ROOT / "hr_core/examples/docqa_reference.jsonl").read_text().splitlines()[:10]
    (work / "ref10.jsonl").write_text("\n".join(lines) + "\n")
    (work / "spec.yaml").write_text(SPEC)
    scripts = {"api.py": API, "pydantic_evals_run.py": PYDANTIC_EVALS, "plain.py": PLAIN,
               "bare_prefect.py": BARE_PREFECT}
    for name, text in scripts.items():
        (work / name).write_text(text)
    base = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    base.update(PYTHONPATH=os.pathsep.join([str(BENCH), str(ROOT)]),
                PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_LOGGING_LEVEL="WARNING",
                COLUMNS="120")
    env = dict(base, PREFECT_HOME=str(home))
    temporary_env = dict(base, PREFECT_HOME=str(temporary_home))
    log = work / "bench.log"

    def run(argv: list[str], e: dict[str, str] = env,
            expect: int = 0) -> Callable[[], tuple[float, float, float]]:
        return lambda: measure(argv, e, work, log, expect)

    # this process stays small (stdlib only): a child's peak RSS counts its parent's pages
    # until it execs (fork), so the server is started and stopped by `hr server` processes
    started = time.perf_counter()
    with socket.socket() as probe:  # a free port: 4200 may be another server's
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    subprocess.run([HR, "server", "start", "--port", str(port), "--timeout", "240"], env=env,
                   check=True, stdout=subprocess.DEVNULL)
    url = "http://127.0.0.1:{port}".format(**json.loads((home / "hr-server.json").read_text()))
    print(f"hr server up in {time.perf_counter() - started:.1f} s at {url} "
          f"(PREFECT_HOME {home})", flush=True)
    try:
        contenders = {
            "(a) hr run": run([HR, "run", "spec.yaml", "--store", "results-cli", "--fresh"]),
            "(b) hr_benchmark (API)": run([PYTHON, "api.py"]),
            "(c) pydantic-evals": run([PYTHON, "pydantic_evals_run.py"]),
            "(d) plain Python": run([PYTHON, "plain.py"]),
            # hr's own defaults: the hr server's API, no SDK usage data (hr_server.quiet)
            "(e) bare Prefect flow": run([PYTHON, "bare_prefect.py"], dict(
                env, PREFECT_API_URL=f"{url}/api", DO_NOT_TRACK=env.get("DO_NOT_TRACK", "1"))),
            "hr --help": run([HR, "--help"]),
            "hr run --help": run([HR, "run", "--help"]),
            "refused command": run([HR, "run", "missing.yaml"], expect=2),
            # hr's own part above the bare interpreter: no site step (no .pth finder)
            "hr --help (python -S)": run([PYTHON, "-S", HR, "--help"], dict(
                env, PYTHONPATH=str(ROOT))),
            # the floors of the three above: this venv's interpreter with its site (an
            # editable install's finder included), without site, isolated
            "floor: python -c pass": run([PYTHON, "-c", "pass"]),
            "floor: python -S -c pass": run([PYTHON, "-S", "-c", "pass"]),
            "floor: python -I -c pass": run([PYTHON, "-I", "-c", "pass"]),
        }
        if args.startup_only:
            contenders = {name: contender for name, contender in contenders.items()
                          if name.startswith(("hr --help", "hr run --help", "refused",
                                              "floor"))}
        print("warm-up (one untimed run each; creates the temporary server's database)")
        for contender in contenders.values():
            contender()
        demo = {
            "hr demo (server up)": run([HR, "demo", "--store", "results-demo", "--judges",
                                        "judges"]),
            "hr demo (temporary server)": run([HR, "demo", "--store", "results-demo-t",
                                               "--judges", "judges-t"], temporary_env),
        }
        if args.startup_only:
            demo.clear()
        if demo:
            demo["hr demo (temporary server)"]()  # its database, created once
        print(f"{args.reps} interleaved repetitions")
        results = interleaved(contenders, args.reps)
        demo_results = interleaved(demo, args.demo_reps) if args.demo_reps and demo else {}
    finally:
        subprocess.run([HR, "server", "stop"], env=env, check=False, stdout=subprocess.DEVNULL)
    _startup_table(results, args.reps)
    if not args.startup_only:
        _whole_table(results, args.reps)
    if demo_results:
        up, temp = (demo_results[n] for n in demo)
        print(f"\nhr demo, medians of {args.demo_reps}: server up {up[0]:.1f} s (CPU "
              f"{up[2]:.1f} s), temporary server {temp[0]:.1f} s (CPU {temp[2]:.1f} s, its "
              f"server included): {up[0] / temp[0]:.2f} of it (target <= 0.33)")
    summary = {"reps": args.reps, "load_average": os.getloadavg(),
               "results": {n: {"wall_s": w, "wall_p90_s": p90(ws), "peak_rss_mb": r,
                               "cpu_s": cs, "walls": ws}
                           for n, (w, r, cs, ws) in {**results, **demo_results}.items()}}
    (work / "bench_startup.json").write_text(json.dumps(summary, indent=2))
    print(f"\nfigures: {work / 'bench_startup.json'}; log: {log}")
    if not args.keep:
        for path in sorted(work.rglob("*"), reverse=True):
            if path.name not in ("bench_startup.json", "bench.log"):
                (path.unlink if path.is_file() or path.is_symlink() else path.rmdir)()


if __name__ == "__main__":
    main()
