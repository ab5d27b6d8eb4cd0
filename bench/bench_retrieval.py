"""The write phase of a run whose arms return contexts (issue 36's target), against the same
run without them: ``runs.parquet`` from the journal, then the summary and the retrieval
figures, differences and attribution.

    .venv/bin/python bench/bench_retrieval.py 10000 1 /tmp/hr-retrieval   # with contexts
    .venv/bin/python bench/bench_retrieval.py 10000 0 /tmp/hr-retrieval   # without

ITEMS items x 4 arms x 1 run; with contexts, each run returns 10 passages of ~1 KB (one of
them the gold passage for ~60% of the runs). The journal is written once per folder.
Prints the journal's size, the table's and the figures' seconds and the peak RSS.
"""

from __future__ import annotations

import random
import resource
import string
import sys
import time
from pathlib import Path

from hr_core import hr_reference
from hr_core.analysis.benchmark import Benchmark
from hr_core.store import rows
from hr_core.store.journal import Journal
from hr_core.store.record import RunRecord, encode

ARMS, K = 4, 10


def main(items: int, with_contexts: bool, work: Path) -> None:
    random.seed(1)
    words = ["".join(random.choices(string.ascii_lowercase, k=random.randint(2, 9)))
             for _ in range(5000)]
    texts = [" ".join(random.choices(words, k=170))[:1000] for _ in range(2000)]
    reference = hr_reference([{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}",
                               "gold_contexts": [f"p{i}"]} for i in range(items)])
    folder = work / f"{items}-{int(with_contexts)}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "journal.jsonl"
    if not path.exists():
        with open(path, "wb") as handle:
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
                    handle.write(encode(record))
    journal = Journal(path, fallback=folder / "none.jsonl")
    arms = [f"arm{a}" for a in range(ARMS)]
    positions = rows.RunPositions(arms, dict.fromkeys(arms, 1), reference)
    started = time.perf_counter()
    rows.write_runs(journal, positions, str(folder / "runs.parquet"))
    table_s = time.perf_counter() - started
    bench = Benchmark.stored({"name": "bench", "scorer": "exact"}, folder, reference=reference)
    started = time.perf_counter()
    bench.summary()
    bench.retrieval_summary()
    bench.retrieval_differences()
    bench.attribution_summary()
    figures_s = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"items={items} contexts={with_contexts} journal={path.stat().st_size / 1e6:.0f} MB "
          f"table={table_s:.2f} s figures={figures_s:.2f} s peak RSS={peak:.0f} MB")


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2] == "1", Path(sys.argv[3]))
