"""Benchmark of the benchmark engine: hr_benchmark vs a plain asyncio floor (same process).

Medians and 90th percentiles over 10 interleaved repetitions (2 with --quick).

Workloads (issue 4): item i's arm answers the label when i % 10 < 7 (half of those
upper-cased with padding), else a wrong string; scoring is the exact scorer.

- W1: 2,000 items, the arm awaits 20 ms, concurrency 50, 1 run   (target <= 1.1x floor)
- W2: 20,000 items, the arm returns at once, concurrency 16       (target <= 2x floor)
- W3: 1,000 items x 5 runs, the arm awaits 10 ms, concurrency 50  (target <= 1.15x floor)
- peak RSS during W2 <= 150 MB with the server external (issue 11).

Each timed section (hr's call, the floor) starts after an untimed ``gc.collect()``, so
that both start from the same collector state (see ``timed``). Prefect's fixed start-up
(ephemeral API server, first flow run) is measured first
and reported apart; each workload then reports the whole ``hr_benchmark`` call
(flow run, tasks, journal, parquet, artifacts) and its engine phase (the chunks,
from the manifest's ``engine_seconds``) as ratios to the floor.

Run: ``.venv/bin/python bench/bench_engine.py [--quick] [--temporary]`` (PREFECT_HOME
is set to a temporary folder unless already set). By default the API is the hr server
(``hr server start``, in that PREFECT_HOME, stopped at the end), external to this
process; ``--temporary`` uses Prefect's temporary server inside it instead (RSS then
includes the server's code imported into the client).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="hr-bench-prefect-"))
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import atexit
import contextlib
import gc
import json
import subprocess

HR = str(Path(sys.executable).with_name("hr"))
SERVER = "--temporary" not in sys.argv and "PREFECT_API_URL" not in os.environ
if SERVER:  # the hr server, external to this process (`hr server start`), stopped at exit
    subprocess.run([HR, "server", "start", "--timeout", "300"], check=True,
                   stdout=subprocess.DEVNULL)
    atexit.register(subprocess.run, [HR, "server", "stop"], stdout=subprocess.DEVNULL)
    _port = json.loads((Path(os.environ["PREFECT_HOME"]) / "hr-server.json").read_text())["port"]
    os.environ["PREFECT_API_URL"] = f"http://127.0.0.1:{_port}/api"
    from hr_server.private import auth_string  # the server is private: its API secret

    _secret = auth_string(Path(os.environ["PREFECT_HOME"]))
    if _secret is not None:
        os.environ["PREFECT_API_AUTH_STRING"] = _secret

import statistics  # noqa: E402

from _workloads import floor, make_arm, make_reference, p90  # noqa: E402
from prefect import flow  # noqa: E402

from flows import hr_benchmark  # noqa: E402
from flows.clients import prefect_clients  # noqa: E402


def rss_mb(field: str = "VmRSS") -> float:
    """This process's resident set (or its peak, ``VmHWM``) in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak_rss() -> None:
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


@flow(name="bench-empty")
async def empty_flow() -> int:
    return 0


async def empty_flow_shared_clients() -> int:
    """The empty flow as ``hr_benchmark`` starts a flow run (``flows.clients``)."""
    async with prefect_clients():
        return await empty_flow()


def timed(fn: Any) -> tuple[Any, float]:
    """``fn()`` and its wall time, after a full collection (untimed).

    Each timed section (hr's call and the floor) starts from the same collector state:
    without it, the objects the section before left to collect, and the count of
    objects it promoted, decide whether this one runs one or two full collections over
    the whole heap (Prefect, pandas, hr: ~0.2 s each at W2), which is what made the W2
    floor vary from 0.5 to 0.9 s (bench/README.md, issue 25)."""
    gc.collect()
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


class Workload:
    """One workload's arm and reference, and its measured repetitions."""

    def __init__(self, label: str, n: int, delay: float, runs: int, concurrency: int) -> None:
        self.label, self.runs, self.concurrency = label, runs, concurrency
        self.reference = make_reference(n)
        _ = self.reference.hash
        self.arm = make_arm(delay)
        self.n_runs = n * runs
        self.reps: list[dict[str, float]] = []

    def once(self, store: str) -> None:
        """One repetition: the whole hr_benchmark call, then the floor (interleaved)."""
        bench, hr_s = timed(lambda: hr_benchmark(
            {"arm": self.arm}, self.reference, runs=self.runs,
            concurrency=self.concurrency, store=store, name=self.label.lower(), fresh=True))
        correct, floor_s = timed(lambda: asyncio.run(
            floor(self.reference, self.arm, self.runs, self.concurrency)))
        assert int(bench.runs["correct"].sum()) == correct, "engine and floor disagree"
        timings = bench.manifest["timings"]
        engine_s = float(bench.manifest["engine_seconds"])
        self.reps.append({
            "floor_s": floor_s, "hr_s": hr_s, "engine_s": engine_s,
            "open_s": timings["open_s"], "table_s": timings["table_s"],
            # the write phase: after the engine (runs table, summary, health, verdict,
            # reports, manifest, artifacts) and the flow run's own calls
            "write_s": hr_s - engine_s - timings["open_s"],
            "ratio": hr_s / floor_s, "engine_ratio": engine_s / floor_s})

    def figure(self, key: str) -> tuple[float, float]:
        """Median and 90th percentile of ``key`` over the repetitions."""
        values = [rep[key] for rep in self.reps]
        return statistics.median(values), p90(values)


def task_overhead(store: str, repeats: int) -> tuple[float, float, int]:
    """Engine phase of 20,000 instant runs in 1 chunk task vs in 50: the cost of a task run."""
    reference = make_reference(20000)
    arm = make_arm(0.0)
    best: dict[int, float] = {}
    for _ in range(repeats):
        for chunk_size in (20000, 400):
            bench = hr_benchmark({"arm": arm}, reference, store=store, name="overhead",
                                 fresh=True, chunk_size=chunk_size)
            seconds = float(bench.manifest["engine_seconds"])
            best[chunk_size] = min(best.get(chunk_size, seconds), seconds)
    per_task = (best[400] - best[20000]) / 49
    return best[20000], best[400], round(per_task * 1000, 2)


def main() -> None:
    quick = "--quick" in sys.argv
    after_imports = rss_mb()
    store = tempfile.mkdtemp(prefix="hr-bench-results-")
    _, startup_s = timed(lambda: asyncio.run(empty_flow()))
    empty_s = min(timed(lambda: asyncio.run(empty_flow()))[1] for _ in range(3))
    shared_s = min(timed(lambda: asyncio.run(empty_flow_shared_clients()))[1] for _ in range(3))
    after_startup = rss_mb()
    scale = 10 if quick else 1
    repeats = 2 if quick else 10
    rows = [Workload("W1", 2000 // scale, 0.020, 1, 50),
            Workload("W2", 20000 // scale, 0.0, 1, 16),
            Workload("W3", 1000 // scale, 0.010, 5, 50)]
    reset_peak_rss()
    w2_before = rss_mb()
    rows[1].once(store)  # the first W2 call: its peak RSS
    w2_peak = rss_mb("VmHWM")
    rows[1].reps.clear()
    for _ in range(repeats):  # interleaved: every workload once per round, floor beside
        for row in rows:
            row.once(store)
    one, fifty, per_task_ms = task_overhead(store, 3)
    targets = {"W1": (1.1, 1.2), "W2": (2.0, 2.5), "W3": (1.15, 1.2)}
    api = "the hr server (external)" if SERVER else os.environ.get(
        "PREFECT_API_URL", "Prefect's temporary server (in this process)")
    print(f"Prefect API: {api}; load average at the end: {os.getloadavg()[0]:.1f}")
    print(f"Prefect fixed start-up (API client + first flow run): {startup_s:.2f} s")
    print(f"Prefect fixed cost of one more (empty) flow run: {empty_s:.3f} s; with hr's "
          f"shared API clients (as hr_benchmark starts it): {shared_s:.3f} s")
    print(f"RSS after imports: {after_imports:.0f} MB; after Prefect start-up: "
          f"{after_startup:.0f} MB")
    print(f"median / p90 over {repeats} interleaved repetitions (each: the whole hr_benchmark "
          "call, then the floor); ratios are per repetition. engine = the chunks; write = the "
          "call minus engine and open (runs table, summary, reports, manifest, artifacts, "
          "the flow run's states)")
    print()
    print("| workload | runs | floor (s) | hr_benchmark (s) | ratio | engine (s) | engine ratio "
          "| write (s) | write / engine | targets (engine, whole call p90) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        cells = [f"{r.figure(k)[0]:.3f} / {r.figure(k)[1]:.3f}"
                 for k in ("floor_s", "hr_s")]
        ratio = "{:.2f}x / {:.2f}x".format(*r.figure("ratio"))
        engine = "{:.3f} / {:.3f}".format(*r.figure("engine_s"))
        engine_ratio = "{:.2f}x / {:.2f}x".format(*r.figure("engine_ratio"))
        write = "{:.3f} / {:.3f}".format(*r.figure("write_s"))
        share = r.figure("write_s")[0] / r.figure("engine_s")[0]
        target = targets[r.label]
        print(f"| {r.label} | {r.n_runs} | {cells[0]} | {cells[1]} | {ratio} | {engine} | "
              f"{engine_ratio} | {write} | {share:.2f} | <= {target[0]}x, <= {target[1]}x |")
    print()
    print(f"task-run overhead: 20,000 instant runs in 1 chunk task {one:.3f} s, in 50 tasks "
          f"{fifty:.3f} s -> {per_task_ms:.1f} ms per extra task run (default chunk: 2,000 runs;"
          " best of 3)")
    print()
    print("floor (s) per repetition: " + "; ".join(
        f"{r.label} " + " ".join(f"{rep['floor_s']:.3f}" for rep in r.reps) for r in rows))
    print()
    print(f"W2 peak RSS (first W2 call): {w2_peak:.0f} MB = "
          f"{w2_peak - after_imports:+.0f} MB above the RSS after imports, "
          f"{w2_peak - after_startup:+.0f} MB above the RSS after Prefect start-up, "
          f"{w2_peak - w2_before:+.0f} MB above the RSS just before it "
          "(target: peak <= 150 MB with the server external)")


if __name__ == "__main__":
    main()
