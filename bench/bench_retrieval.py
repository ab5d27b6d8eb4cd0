"""The write phase of a run whose arms return contexts (issue 36's target), against the same
run without them: ``runs.parquet`` from the journal, then the summary and the retrieval
figures, differences and attribution.

    .venv/bin/python bench/bench_retrieval.py prepare 100000 /tmp/hr-retrieval
    .venv/bin/python bench/bench_retrieval.py measure 100000 1 /tmp/hr-retrieval  # one rep
    .venv/bin/python bench/bench_retrieval.py reps 100000 10 /tmp/hr-retrieval    # A/B

    .venv/bin/python bench/bench_retrieval.py session-prepare 100000 /tmp/hr-retrieval
    .venv/bin/python bench/bench_retrieval.py session-reps 100000 10 /tmp/hr-retrieval
    .venv/bin/python bench/bench_retrieval.py session-parts 100000 10 /tmp/hr-retrieval

The ``session-`` modes measure the whole write phase of a benchmark (``session.finish()``,
what ``hr_benchmark`` runs after its chunks: ``runs.parquet``, the summary and the
retrieval figures, ``report.md``, ``report.html``, the summary files, the reference and the
manifest) on a journal every run of which is done (a resume that calls no arm), with the
peak RSS of the write phase itself (``VmHWM`` reset after the session opened).

``session-parts`` splits the difference in three interleaved variants: no contexts (0), the
contexts journaled and shown but their relevance never judged (2: the same journal as 1 with
each line's ``gold_ranks`` and ``gold_n`` removed, so the runs table has the ``contexts`` and
``contexts_cut`` columns and there are no retrieval figures and no attribution), and
everything (1): 2 - 0 is what journaling and showing the contexts costs, 1 - 2 what the
retrieval figures and the attribution cost.

ITEMS items x 4 arms x 1 run; with contexts, each run returns 10 passages of ~1 KB (one of
them the gold passage for ~60% of the runs). ``prepare`` writes both folders' journals
through ``Journal`` as a benchmark does (the session's reference set: each run's contexts
judged when written, the passages in ``journal.contexts.jsonl``) and prints the seconds
that took (engine-phase work: the arms' calls overlap it). ``measure`` prints one
repetition's table and figures seconds and its process's peak RSS; ``reps`` runs
``measure`` in fresh processes, with and without contexts interleaved, and prints the
median and p90 of each and their ratios.
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import random
import resource
import statistics
import string
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from hr_core import hr_reference
from hr_core.analysis.benchmark import Benchmark
from hr_core.data.reference import Reference
from hr_core.run.session import BenchmarkSession, plan_benchmark
from hr_core.store import rows
from hr_core.store.journal import Journal
from hr_core.store.record import RunRecord

ARMS, K = 4, 10


def _reference(items: int) -> Reference:
    return hr_reference([{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}",
                          "gold_contexts": [f"p{i}"]} for i in range(items)])


def prepare(items: int, work: Path) -> None:
    """Write the journals of both folders (with and without contexts)."""
    random.seed(1)
    words = ["".join(random.choices(string.ascii_lowercase, k=random.randint(2, 9)))
             for _ in range(5000)]
    texts = [" ".join(random.choices(words, k=170))[:1000] for _ in range(2000)]
    reference = _reference(items)
    for with_contexts in (False, True):
        folder = work / f"{items}-{int(with_contexts)}"
        folder.mkdir(parents=True, exist_ok=True)
        journal = Journal(folder / "journal.jsonl", fallback=folder / "none.jsonl")
        journal.clear()
        journal.reference = reference
        spent = 0.0
        for a in range(ARMS):
            for i in range(items):
                record = RunRecord(arm=f"arm{a}", item_id=f"q{i}", run=1, output="x",
                                   correct=i % 3 == 0, outcome="x",
                                   failure_kind=None if i % 3 == 0 else "wrong",
                                   latency_s=0.1, truncated=False, replayed=False)
                if with_contexts:
                    gold = random.randint(0, K - 1) if random.random() < 0.6 else -1
                    record.contexts = [
                        {"id": f"p{i}" if j == gold else f"n{random.randint(0, 10**6)}",
                         "text": random.choice(texts), "score": 1 - j / K}
                        for j in range(K)]
                journal.append(record)
                if i % 4096 == 4095:  # the session flushes every 0.5 s
                    started = time.perf_counter()
                    journal.flush()
                    spent += time.perf_counter() - started
        started = time.perf_counter()
        journal.flush()
        spent += time.perf_counter() - started
        aside = journal.contexts_path
        print(f"contexts={with_contexts} journal={journal.path.stat().st_size / 1e6:.0f} MB "
              f"contexts file={aside.stat().st_size / 1e6 if aside.exists() else 0:.0f} MB "
              f"journal writes={spent:.2f} s")


def measure(items: int, with_contexts: bool, work: Path) -> dict[str, float]:
    """One repetition of the write phase's retrieval-dependent part."""
    reference = _reference(items)
    folder = work / f"{items}-{int(with_contexts)}"
    journal = Journal(folder / "journal.jsonl", fallback=folder / "none.jsonl")
    arms = [f"arm{a}" for a in range(ARMS)]
    positions = rows.RunPositions(arms, dict.fromkeys(arms, 1), reference)
    started = time.perf_counter()
    rows.write_runs(journal, positions, str(folder / "runs.parquet"))
    table_s = time.perf_counter() - started
    table_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    bench = Benchmark.stored({"name": "bench", "scorer": "exact"}, folder, reference=reference)
    started = time.perf_counter()
    bench.summary()
    bench.retrieval_summary()
    bench.retrieval_differences()
    bench.attribution_summary()
    figures_s = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"table_s": table_s, "figures_s": figures_s, "write_s": table_s + figures_s,
            "peak_mb": peak, "table_peak_mb": table_peak}


def _session(items: int, with_contexts: int, work: Path) -> Any:
    reference = _reference(items)
    # never called (every run is in the journal); a builtin's fingerprint is the same
    # whether this file runs as __main__ or is imported: the same run id, the same folder
    arms = {f"arm{a}": str for a in range(ARMS)}
    return BenchmarkSession(plan_benchmark(arms, reference, store=str(
        work / f"store-{items}-{int(with_contexts)}"), name="bench"))


def session_prepare(items: int, work: Path) -> None:
    """The journals of ``prepare``, each put where its benchmark's session finds it."""
    prepare(items, work)
    for with_contexts in (False, True):
        session = _session(items, with_contexts, work)
        folder = work / f"{items}-{int(with_contexts)}"
        session.journal.path.parent.mkdir(parents=True, exist_ok=True)
        for name in ("journal.jsonl", "journal.contexts.jsonl"):
            if (folder / name).exists():
                os.replace(folder / name, session.journal.path.with_name(name))


def _unjudged(items: int, work: Path) -> None:
    """Variant 2 of ``session-parts``: variant 1's journal without the relevance judgement."""
    source = _session(items, True, work).journal.path
    target = _session(items, 2, work).journal.path
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(source, "rb") as lines, open(target, "wb") as out:
        for line in lines:
            record = json.loads(line)
            record.pop("gold_ranks", None)
            record.pop("gold_n", None)
            out.write(json.dumps(record, separators=(",", ":")).encode() + b"\n")


def _hwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def session_measure(items: int, with_contexts: int, work: Path) -> dict[str, float]:
    """One repetition of the whole write phase (a fresh store copy is not needed: every
    write replaces its file)."""
    session = _session(items, with_contexts, work)
    session.open()
    try:
        session.done = {}  # the resume's records: not the write phase's
        gc.collect()
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM from here
        before = _hwm_mb()
        started, cpu = time.perf_counter(), time.process_time()
        bench = session.build()  # session.finish(), step by step
        built, built_cpu = time.perf_counter(), time.process_time()
        summary, report = session.summarise(bench)
        summarised, summarised_cpu = time.perf_counter(), time.process_time()
        session.write(bench, summary, report)
        done, done_cpu = time.perf_counter(), time.process_time()
        return {"write_s": done - started, "table_s": built - started,
                "summarise_s": summarised - built, "files_s": done - summarised,
                "write_cpu_s": done_cpu - cpu, "table_cpu_s": built_cpu - cpu,
                "summarise_cpu_s": summarised_cpu - built_cpu,
                "files_cpu_s": done_cpu - summarised_cpu,
                "peak_mb": _hwm_mb(), "start_mb": before}
    finally:
        session.close()


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def reps(items: int, count: int, work: Path, mode: str = "measure",
         variants: tuple[int, ...] = (0, 1)) -> None:
    """``count`` interleaved repetitions of each variant, in fresh processes; each compared
    with the one before it."""
    got: dict[int, list[dict[str, float]]] = {v: [] for v in variants}
    for _ in range(count):
        for variant in variants:
            out = subprocess.run([sys.executable, __file__, mode, str(items),
                                  str(variant), str(work)],
                                 check=True, capture_output=True, text=True).stdout
            got[variant].append(json.loads(out.strip().splitlines()[-1]))
    for before, after in itertools.pairwise(variants):
        print(f"variant {after} against variant {before}:")
        _compare(got[before], got[after])


def _compare(floors: list[dict[str, float]], withs: list[dict[str, float]]) -> None:
    for key in floors[0]:
        floor = [r[key] for r in floors]
        withc = [r[key] for r in withs]
        print(f"{key}: without median {statistics.median(floor):.3f} p90 {_p90(floor):.3f}; "
              f"with median {statistics.median(withc):.3f} p90 {_p90(withc):.3f}; ratio "
              f"median {statistics.median(withc) / statistics.median(floor):.3f} p90 "
              f"{_p90(withc) / _p90(floor):.3f}; difference of medians "
              f"{statistics.median(withc) - statistics.median(floor):+.3f}")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "prepare":
        prepare(int(sys.argv[2]), Path(sys.argv[3]))
    elif mode == "measure":
        print(json.dumps(measure(int(sys.argv[2]), sys.argv[3] == "1", Path(sys.argv[4]))))
    elif mode == "session-prepare":
        session_prepare(int(sys.argv[2]), Path(sys.argv[3]))
    elif mode == "session-measure":
        print(json.dumps(session_measure(int(sys.argv[2]), int(sys.argv[3]),
                                         Path(sys.argv[4]))))
    elif mode == "session-reps":
        reps(int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]), "session-measure")
    elif mode == "session-parts":
        if not _session(int(sys.argv[2]), 2, Path(sys.argv[4])).journal.path.exists():
            _unjudged(int(sys.argv[2]), Path(sys.argv[4]))
        reps(int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]), "session-measure",
             (0, 2, 1))
    else:
        reps(int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]))
