"""Scale benchmark: item-runs vs wall time, peak RSS, store size, report size and time.

Each size runs in a fresh process, so peak RSS is that run's (``hr report``'s
peak and time are measured in another fresh process, as a user runs it):
``hr_benchmark`` with 3 instant arms (one right on 7 items in 10, one always
wrong, one abstaining) on a generated reference,
runs=1, then ``hr report`` of the stored run. The floor is the smallest size
(1,000 item-runs) measured in the same invocation: the table gives each size's
RSS and report time/size as ratios to it.

Targets (issue 14): 1,000,000 item-runs with peak RSS <= 600 MB; report time and
size flat in the number of items (beyond the item tables' caps).

``--workload lambdas`` (issue 25) runs a different workload with the same sizes and
target: the engine benchmarks' reference (``bench/_workloads.py``: each item's payload
a dict ``{"n": i}``, no ``item=`` column), 3 plain-Python lambda arms on it, concurrency
64 (the default workload: string payloads, module functions, concurrency 16). Its
peak is also given for the whole process tree (``tree peak MB``: the run's process and
its children, Prefect's temporary server among them, sampled every 20 ms).

By default the Prefect API is the hr server (``hr server start`` in a temporary
``PREFECT_HOME``, stopped at the end), external to the run's process, as a user
with ``hr server start`` runs; ``--temporary`` uses Prefect's temporary server
instead, a process of its own that the run's process starts (``hr_server/temporary.py``;
before issue 25 the run's process imported the server's code, ~45 MB of its RSS). The
output says which. Times are wall clock; ``cpu s`` is the child's user + system
time (``wait4`` rusage), less sensitive to the other jobs on the machine.

Run: ``.venv/bin/python bench/bench_scale.py [--temporary] [--workload lambdas]
[10000 100000 1000000]``
(``--quick``: 1,000 and 10,000 only).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ARMS = 3
ROOT = Path(__file__).resolve().parents[1]


def _child(item_runs: int, store: str, workload: str) -> dict[str, float]:
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    sys.path.insert(0, str(ROOT))
    tree = _TreePeak()
    from flows import hr_benchmark
    from hr_core import hr_reference

    items = item_runs // ARMS
    imported = _status("VmRSS")
    if workload == "lambdas":  # issue 25: dict payloads, lambdas, concurrency 64
        from _workloads import make_reference

        reference = make_reference(items)
        arms: dict[str, Any] = {
            "mostly_right": lambda p: f"answer {p['n']}" if p["n"] % 10 < 7 else "wrong",
            "wrong": lambda p: "no idea", "abstain": lambda p: "NOT_IN_DOCUMENT"}
        concurrency = 64
    else:
        reference = hr_reference([{"id": f"i{i}", "question": str(i), "label": f"answer {i}"}
                                  for i in range(items)], item="question")
        arms = {"mostly_right": _mostly_right, "wrong": _wrong, "abstain": _abstain}
        concurrency = 16
    with_reference = _status("VmRSS")
    started = time.perf_counter()
    bench = hr_benchmark(arms, reference, store=store, name="scale", concurrency=concurrency)
    wall = time.perf_counter() - started
    run_dir = Path(str(bench.run_dir))
    del bench
    peak = _status("VmHWM")  # hr_benchmark (run, results, report.html)
    tree_peak = tree.stop()
    store_bytes = sum(p.stat().st_size for p in run_dir.rglob("*") if p.is_file())
    return {"item_runs": items * ARMS, "wall_s": wall, "peak_rss_mb": peak,
            "store_mb": store_bytes / 1e6, "run_dir": str(run_dir), "tree_peak_mb": tree_peak,
            "imports_mb": imported, "reference_mb": with_reference - imported,
            "journal_kb": sum(p.stat().st_size for p in run_dir.glob("journal*")) / 1e3}


def _report_child(run_dir: str, out: str) -> dict[str, float]:
    """``hr report`` as a user runs it: a fresh process (the run's leftover heap is not
    counted), its whole peak RSS, the time of making the page."""
    sys.path.insert(0, str(ROOT))
    from hr_core.report import write_report

    started = time.perf_counter()
    report = write_report(run_dir, out)
    return {"report_s": time.perf_counter() - started, "report_peak_mb": _status("VmHWM"),
            "report_kb": Path(report).stat().st_size / 1e3}


def _mostly_right(question: str) -> str:
    return f"answer {question}" if int(question) % 10 < 7 else "something else"


def _wrong(question: str) -> str:
    return "no idea"


def _abstain(question: str) -> str:
    return "NOT_IN_DOCUMENT"


class _TreePeak:
    """The peak RSS of this process and its children (Prefect's temporary server),
    sampled every 20 ms in a thread (``VmHWM`` counts this process only)."""

    def __init__(self) -> None:
        import threading

        import psutil

        self.peak = 0
        self._me = psutil.Process()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        import psutil

        while not self._done.wait(0.02):
            try:
                rss = self._me.memory_info().rss + sum(
                    c.memory_info().rss for c in self._me.children(recursive=True))
            except psutil.Error:  # a child ended while it was read
                continue
            self.peak = max(self.peak, rss)

    def stop(self) -> float:
        self._done.set()
        self._thread.join()
        return self.peak / 2**20


def _status(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _measured(command: list[str], env: dict[str, str], what: str) -> dict[str, Any]:
    """Run a child; its JSON line plus its CPU time (user + system, from rusage)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        print(done.stdout, done.stderr, file=sys.stderr)
        raise SystemExit(f"{what} failed")
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    row["cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return row


def _start_server(env: dict[str, str]) -> str:
    """``hr server start`` in ``env``'s PREFECT_HOME; its API URL."""
    hr = str(Path(sys.executable).with_name("hr"))
    subprocess.run([hr, "server", "start", "--timeout", "300"], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    port = json.loads((Path(env["PREFECT_HOME"]) / "hr-server.json").read_text())["port"]
    return f"http://127.0.0.1:{port}/api"


def _stop_server(env: dict[str, str]) -> None:
    hr = str(Path(sys.executable).with_name("hr"))
    subprocess.run([hr, "server", "stop"], env=env, stdout=subprocess.DEVNULL, check=False)


def main(argv: list[str]) -> None:
    if argv[:1] == ["--child"]:
        print(json.dumps(_child(int(argv[1]), argv[2], argv[3])))
        return
    if argv[:1] == ["--report"]:
        print(json.dumps(_report_child(argv[1], argv[2])))
        return
    workload = argv[argv.index("--workload") + 1] if "--workload" in argv else "scale"
    if workload not in ("scale", "lambdas"):
        raise SystemExit(f"--workload {workload!r}: give scale (the default) or lambdas")
    sizes = [1000] + ([10_000] if "--quick" in argv else
                      [int(a) for a in argv if a.isdigit()] or [10_000, 100_000, 1_000_000])
    env = {**os.environ, "PREFECT_HOME": os.environ.get("PREFECT_HOME") or
           tempfile.mkdtemp(prefix="hr-bench-prefect-")}
    server = "--temporary" not in argv and "PREFECT_API_URL" not in os.environ
    if server:
        env["PREFECT_API_URL"] = _start_server(env)
        api = f"the hr server (external, {env['PREFECT_API_URL']})"
    else:
        api = (os.environ.get("PREFECT_API_URL")
               or "Prefect's temporary server (a process the run starts)")
    print(f"workload: {workload}; Prefect API: {api}; "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    rows = []
    try:
        for size in sizes:
            with tempfile.TemporaryDirectory(prefix="hr-bench-scale-") as store:
                row = _measured([sys.executable, __file__, "--child", str(size), store,
                                 workload], env, f"{size} item-runs")
                report = _measured([sys.executable, __file__, "--report", row["run_dir"],
                                    str(Path(store) / "report.html")], env,
                                   f"hr report of {size} item-runs")
                rows.append({**row, **{k: v for k, v in report.items() if k != "cpu_s"},
                             "report_cpu_s": report["cpu_s"]})
    finally:
        if server:
            _stop_server(env)
    floor = rows[0]
    print(f"{'item-runs':>10} {'wall s':>8} {'runs/s':>8} {'peak RSS MB':>11} {'x floor':>7} "
          f"{'store MB':>8} {'report KB':>9} {'x floor':>7} {'report s':>8} {'x floor':>7} "
          f"{'journal KB':>10} {'report peak MB':>14} {'cpu s':>7} {'report cpu s':>12} "
          f"{'tree peak MB':>12}")
    for row in rows:
        print(f"{row['item_runs']:>10,} {row['wall_s']:>8.1f} "
              f"{row['item_runs'] / row['wall_s']:>8,.0f} {row['peak_rss_mb']:>11.0f} "
              f"{row['peak_rss_mb'] / floor['peak_rss_mb']:>7.2f} {row['store_mb']:>8.1f} "
              f"{row['report_kb']:>9.0f} {row['report_kb'] / floor['report_kb']:>7.2f} "
              f"{row['report_s']:>8.2f} {row['report_s'] / floor['report_s']:>7.2f} "
              f"{row['journal_kb']:>10.0f} {row['report_peak_mb']:>14.0f} "
              f"{row['cpu_s']:>7.1f} {row['report_cpu_s']:>12.2f} {row['tree_peak_mb']:>12.0f}")
    print("RSS after imports / added by the reference (MB): " + ", ".join(
        f"{r['item_runs']:,}: {r['imports_mb']:.0f} / +{r['reference_mb']:.0f}" for r in rows))
    big = rows[-1]
    if big["item_runs"] >= 1_000_000:
        verdict = "meets" if big["peak_rss_mb"] <= 600 else "MISSES"
        print(f"1M item-runs ({workload}): peak RSS {big['peak_rss_mb']:.0f} MB {verdict} the "
              f"600 MB target (tree {big['tree_peak_mb']:.0f} MB; Prefect API: {api}); "
              f"load average now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
