"""The retriever's corpus hash (hr_core/run/retriever.py): the canonical JSON of the whole
corpus built in memory and hashed (``fingerprint``, before) against the same bytes hashed
passage by passage (``fingerprint_stream``, now); the two digests are checked equal.

    .venv/bin/python bench/bench_corpus_hash.py [PASSAGES] [WORDS]   # default 1000000, 30
    .venv/bin/python bench/bench_corpus_hash.py --plan [PASSAGES] [WORDS]

Each way runs in a fresh process: PASSAGES synthetic passages (WORDS words each from a
5,000-word vocabulary, seed 7) are made and grouped as the retriever groups them, then the
hash is taken; printed are the seconds it took and the peak RSS it added (VmHWM after
minus VmRSS before, from /proc/self/status).

``--plan``: the whole planning of a BM25 arm over such a corpus written as JSONL (read,
checked, hashed: ``normalise_arms``, as a spec's arm), in a fresh process: its seconds and
the process's peak RSS (run it with PYTHONPATH at an older commit for the "before").
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _status(field: str) -> float:
    """A memory field of /proc/self/status, in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise SystemExit(f"/proc/self/status has no {field}")


def one(way: str, passages: int, words: int) -> dict[str, float | str]:
    """In this process: make the corpus, then hash it ``way`` ("whole" or "stream")."""
    from hr_core.core.identity import fingerprint, fingerprint_stream

    rng = random.Random(7)
    vocabulary = [f"w{i}" for i in range(5000)]
    grouped: dict[str | None, list[tuple[str, str]]] = {None: [
        (f"p{i}", " ".join(rng.choices(vocabulary, k=words))) for i in range(passages)]}
    ordered = sorted(grouped.items(), key=lambda kv: str(kv[0]))
    before = _status("VmRSS")
    with open("/proc/self/clear_refs", "w") as out:  # VmHWM from here on (Linux >= 4.0)
        out.write("5")
    start = time.perf_counter()
    digest = (fingerprint if way == "whole" else fingerprint_stream)(ordered)
    seconds = time.perf_counter() - start
    return {"way": way, "digest": digest, "seconds": seconds, "corpus_mb": before,
            "added_mb": _status("VmHWM") - before}


def plan(passages: int, words: int) -> None:
    """Write the corpus as JSONL, then plan an arm over it in a fresh process."""
    import tempfile

    rng = random.Random(7)
    vocabulary = [f"w{i}" for i in range(5000)]
    with tempfile.TemporaryDirectory(prefix="hr-corpus-hash-") as folder:
        corpus = Path(folder) / "corpus.jsonl"
        with corpus.open("w", encoding="utf-8") as out:
            for i in range(passages):
                out.write(json.dumps({"id": f"p{i}", "text": " ".join(
                    rng.choices(vocabulary, k=words))}) + "\n")
        code = ("import resource, sys, time\n"
                "from hr_core.run.arms import normalise_arms\n"
                "start = time.perf_counter()\n"
                "arm = normalise_arms({'r': {'model': 'mock:reader', 'prompt': '{contexts} "
                "{question}', 'retriever': {'corpus': sys.argv[1], 'k': 10}}})['r']\n"
                "print(f'planning {time.perf_counter() - start:.1f} s, peak RSS '\n"
                "      f'{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB, '\n"
                "      f'corpus {arm.retriever.corpus_hash[:12]}')\n")
        subprocess.run([sys.executable, "-c", code, str(corpus)], check=True,
                       cwd=folder)  # PYTHONPATH decides which hr_core (not this folder)


def main(passages: int, words: int) -> None:
    found = []
    for way in ("whole", "stream"):
        out = subprocess.run([sys.executable, __file__, "--one", way, str(passages), str(words)],
                             check=True, capture_output=True, text=True, cwd=ROOT).stdout
        found.append(json.loads(out))
    if found[0]["digest"] != found[1]["digest"]:
        raise SystemExit(f"the digests differ: {found}")
    print(f"{passages:,} passages of {words} words (process RSS with the corpus "
          f"{found[0]['corpus_mb']:.0f} MB); digest {str(found[0]['digest'])[:12]} both ways")
    for row in found:
        print(f"  {row['way']:>6}: {row['seconds']:.2f} s, peak RSS added {row['added_mb']:.1f} MB")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(one(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
    elif sys.argv[1:2] == ["--plan"]:
        args = [int(a) for a in sys.argv[2:4]]
        plan(*(args + [1_000_000, 30][len(args):]))
    else:
        args = [int(a) for a in sys.argv[1:3]]
        main(*(args + [1_000_000, 30][len(args):]))
