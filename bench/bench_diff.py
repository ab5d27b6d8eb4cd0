"""``hr diff`` of two 100k-item, 4-arm runs: wall time and peak memory, against a floor.

Writes two stored runs once (``--store``, default a temporary folder): 100,000 items x 4
arms each, 70% right, run b with 5% of the items flipped per arm, one arm's prompt
changed and a slice field of 5 values. Then interleaves ``--repeat`` passes of

- the **floor**: a fresh process that loads both runs and reads what any item-by-item
  diff must read (the small columns of both ``runs.parquet`` and both
  ``reference.jsonl``), and
- **hr diff**: a fresh process running ``hr diff A B -o diff.html`` (the terminal table
  to /dev/null, the HTML page written),

each reporting its wall and CPU time (imports included), its main thread's time waiting
for a core (``/proc/self/schedstat``: where wall goes beyond CPU on a shared machine)
and its peak RSS (``VmHWM``). A second floor, **pyarrow**, reads the same columns of
both ``runs.parquet`` and both ``reference.jsonl`` with pyarrow alone (no pandas, no
hr). Prints medians and p90, and the ratios of the CPU medians. Targets: under 5 s and
under 500 MB.

    .venv/bin/python bench/bench_diff.py [--items 100000] [--repeat 10] [--store DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ARMS = ("alpha", "beta", "gamma", "delta")

_FIGURES = """
import json, resource, sys, time
def figures(started):
    # VmHWM: this process's own peak (ru_maxrss would count the parent's RSS before exec)
    with open("/proc/self/status") as status:
        peak = next(int(l.split()[1]) for l in status if l.startswith("VmHWM:"))
    used = resource.getrusage(resource.RUSAGE_SELF)
    # the main thread's time waiting for a core (run queue): where wall goes beyond CPU
    with open("/proc/self/schedstat") as stat:
        waited = int(stat.read().split()[1]) / 1e9
    return {"s": time.perf_counter() - started, "cpu": used.ru_utime + used.ru_stime,
            "mb": peak / 1024, "wait": waited}
started = time.perf_counter()
"""

_ARROW_FLOOR = _FIGURES + """
import pyarrow.parquet as pq
columns = json.loads(sys.argv[3])  # hr_core.analysis.diff_items.DIFF_COLUMNS
for run_dir in sys.argv[1:3]:
    pq.read_table(run_dir + "/runs.parquet", columns=columns,
                  read_dictionary=["arm", "failure_kind"])  # coded, as hr reads them
    with open(run_dir + "/reference.jsonl", "rb") as handle:
        handle.read().splitlines()
print(json.dumps(figures(started)))
"""

_FLOOR = _FIGURES + """
from hr_core.analysis.diff_items import DIFF_COLUMNS
from hr_core.analysis.benchmark import Benchmark
from hr_core.store.folder import REFERENCE, RunStore
for run_dir in sys.argv[1:3]:
    bench = Benchmark.load(run_dir)
    bench.columns(DIFF_COLUMNS)
    RunStore.at(run_dir).read_bytes(REFERENCE).splitlines()
print(json.dumps(figures(started)))
"""

_DIFF = _FIGURES + """
from hr_cli import main
try:
    main(["diff", sys.argv[1], sys.argv[2], "-o", sys.argv[3]])
except SystemExit:
    pass
sys.stderr.write(json.dumps(figures(started)) + "\\n")
"""


def _write_run(folder: Path, items: int, flipped: bool) -> str:
    """One stored run as hr writes it (``runs.parquet`` in row groups of ``ROW_GROUP`` with
    ``item_index``, ``reference.jsonl``, ``manifest.json``), made directly: the engine would
    take minutes for 400,000 runs on a shared machine, and ``hr diff`` reads only files."""
    import numpy as np
    import orjson
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from hr_core import __version__
    from hr_core.core.identity import fingerprint
    from hr_core.store.folder import package_versions
    from hr_core.store.rows import ROW_GROUP

    folder.mkdir(parents=True, exist_ok=True)
    n = np.arange(items)
    ids = pd.Series([f"q{i}" for i in range(items)], dtype="str")
    frames = []
    for salt, arm in enumerate(ARMS):
        right = (n * 7 + salt) % 10 < 7  # 70% right
        if flipped:
            right = np.where(((n // 10) * 3 + salt) % 20 == 0, ~right, right)  # 5% flip
        outputs = np.where(right, np.char.add("a", n.astype(str)), "wrong")
        frames.append(pd.DataFrame({
            "arm": arm, "item_id": ids, "run": np.ones(items, dtype=np.int64),
            "output": outputs, "correct": pd.array(right, dtype="boolean"),
            "score": np.nan, "outcome": outputs,
            "failure_kind": pd.Series(np.where(right, None, "wrong"), dtype="str"),
            "error": pd.Series([None] * items, dtype="str"),
            "latency_s": 0.01 + (n % 97) / 1000, "tokens_in": pd.array(n % 50 + 10,
                                                                       dtype="Int64"),
            "tokens_out": pd.array(n % 7 + 1, dtype="Int64"), "cost_usd": 1e-6 * (n % 5),
            "item_index": n.astype(np.int32)}))
    table = pa.Table.from_pandas(pd.concat(frames, ignore_index=True), preserve_index=False)
    pq.write_table(table, folder / "runs.parquet", row_group_size=ROW_GROUP)
    lines = [orjson.dumps({"id": f"q{i}", "payload": {"question": str(i), "kind": f"k{i % 5}"},
                           "label": f"a{i}"}) for i in range(items)]
    (folder / "reference.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    arms = {arm: {"kind": "llm", "model": "openai:gpt-4o-mini",
                  "prompt": "Q: {question}" + (" Be brief." if flipped and arm == "gamma"
                                               else "")} for arm in ARMS}
    manifest = {"name": "diffbench", "run_id": folder.name, "status": "completed",
                "reference_hash": fingerprint(lines[:1000]), "n_items": items, "arms": arms,
                "scorer": "exact", "scorer_fingerprint": "e" * 16, "runs": 1,
                "slices": ["kind"] if flipped else [], "version": __version__,
                "versions": package_versions(), "fingerprints": {}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return str(folder)


def make_runs(store: Path, items: int) -> tuple[str, str]:
    """The two run folders (made once per store and size)."""
    run_a, run_b = store / f"a{items}", store / f"b{items}"
    if not (run_b / "manifest.json").is_file():
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        _write_run(run_a, items, flipped=False)
        _write_run(run_b, items, flipped=True)
    return str(run_a), str(run_b)


def _measure(code: str, args: list[str], stream: str) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          check=False, env={**os.environ, "COLUMNS": "140"})
    text = done.stdout if stream == "stdout" else done.stderr
    lines = [line for line in text.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(f"no figures: {done.stderr[-2000:]}")
    figures: dict[str, float] = json.loads(lines[-1])
    return figures


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--store", default=None)
    options = parser.parse_args(argv)
    store = Path(options.store or tempfile.mkdtemp(prefix="hr-bench-diff-"))
    store.mkdir(parents=True, exist_ok=True)
    run_a, run_b = make_runs(store, options.items)
    if options.repeat < 1:  # only make the runs
        return
    page = str(store / "diff.html")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from hr_core.analysis.diff_items import DIFF_COLUMNS

    columns = json.dumps(list(DIFF_COLUMNS))
    arrow, floors, diffs = [], [], []
    loads = []
    for _ in range(options.repeat):  # interleaved: the machine is shared
        arrow.append(_measure(_ARROW_FLOOR, [run_a, run_b, columns], "stdout"))
        floors.append(_measure(_FLOOR, [run_a, run_b], "stdout"))
        diffs.append(_measure(_DIFF, [run_a, run_b, page], "stderr"))
        loads.append(os.getloadavg()[0])
    for what, rows in (("floor: pyarrow reads", arrow), ("floor: hr loads both runs", floors),
                       ("hr diff -o diff.html", diffs)):
        seconds, cpu, mb, wait = ([r[k] for r in rows] for k in ("s", "cpu", "mb", "wait"))
        print(f"{what:26s} wall median {statistics.median(seconds):.2f} s, p90 "
              f"{_p90(seconds):.2f} s; CPU median {statistics.median(cpu):.2f} s, p90 "
              f"{_p90(cpu):.2f} s; waiting for a core median {statistics.median(wait):.2f} s; "
              f"peak RSS median {statistics.median(mb):.0f} MB, p90 {_p90(mb):.0f} MB")
    for what, rows in (("pyarrow", arrow), ("hr load", floors)):
        ratio = statistics.median(r["cpu"] for r in diffs) / statistics.median(
            r["cpu"] for r in rows)
        print(f"ratio hr diff / floor {what} (CPU medians): {ratio:.2f}x")
    print(f"load {min(loads):.1f}-{max(loads):.1f}; {options.items:,} items x {len(ARMS)} "
          f"arms; page {os.path.getsize(page):,} bytes")


if __name__ == "__main__":
    main(sys.argv[1:])
