"""Coverage of the retrieval figures' 95% intervals (docs/statistics.md, "Retrieval figures").

Simulated benchmarks of one arm whose runs retrieve 10 contexts: each item names 1, 2 or 3
gold passages (shares 0.6, 0.3, 0.1) and has its own ease ``q`` (Beta(a, b)): in each run
each gold passage is among the 10 contexts with probability ``q``, at a rank drawn without
replacement with weights 2^-r (r = 1..10). hr's interval for each figure
(:func:`hr_core.stats.retrieval.retrieval_summary`: Clopper-Pearson for one run of a 0/1
figure per item, item-clustered otherwise) is checked against the figure's true value, the
mean over 400,000 simulated runs.

    .venv/bin/python bench/bench_retrieval_coverage.py [REPS] [SEED] [figures|attribution]
    # default 1000 simulated benchmarks per row, seed 7, both sections

Prints one markdown row per (population, items, runs): the share of intervals that hold
the true value, per figure (target 95%). The attribution section checks the share of
retrieval misses among an arm's attributed runs (:func:`hr_core.stats.intervals.
pooled_share_ci`, as :func:`hr_core.analysis.attribution.attribution_summary` uses it):
each item fails a run with probability ``f`` (Beta(2, 3)) and a failed run is a miss with
probability ``m`` (Beta(a, b)); the true share is E[misses] / E[failed runs] (400,000
simulated items).
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from hr_core.stats.intervals import pooled_share_ci
from hr_core.stats.retrieval import figures_of, retrieval_summary

KS = (1, 5)
FIGURES = (("hit", 1), ("hit", 5), ("recall", 5), ("precision", 5), ("mrr", None),
           ("ndcg", 5))
DEPTH = 10
WEIGHTS = 0.5 ** np.arange(1, DEPTH + 1)
POPULATIONS = {"mixed ease, Beta(2, 2)": (2.0, 2.0), "easy, Beta(9, 1)": (9.0, 1.0)}


def _runs(rng: np.random.Generator, items: int, runs: int, a: float, b: float
          ) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``gold_ranks`` texts, ``gold_n`` and item numbers of ``items`` x ``runs`` runs."""
    n_gold = rng.choice([1, 2, 3], size=items, p=[0.6, 0.3, 0.1])
    ease = rng.beta(a, b, size=items)
    total = items * runs
    gold = np.repeat(n_gold, runs)
    found = ((rng.random((total, 3)) < np.repeat(ease, runs)[:, None])
             & (np.arange(3) < gold[:, None])).sum(axis=1)
    # ranks drawn without replacement with weights 2^-r: the first places of a weighted
    # random order (Gumbel top-k)
    order = np.argsort(-(np.log(WEIGHTS) + rng.gumbel(size=(total, DEPTH))), axis=1) + 1
    texts = [" ".join(map(str, sorted(row[:f].tolist()))) for row, f in zip(order, found,
                                                                           strict=True)]
    return texts, gold.astype(np.float64), np.repeat(np.arange(items), runs)


def _truth(rng: np.random.Generator, a: float, b: float) -> dict[tuple[str, int | None], float]:
    texts, n_gold, _ = _runs(rng, 400_000, 1, a, b)
    values = figures_of(texts, n_gold, KS)
    return {(m, k): float(np.mean(values[m if k is None else f"{m}@{k}"])) for m, k in FIGURES}


def _attributed(rng: np.random.Generator, items: int, runs: int, a: float, b: float
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per item: retrieval misses and attributed (failed) runs of ``runs`` runs."""
    failed = rng.binomial(runs, rng.beta(2.0, 3.0, size=items))
    return rng.binomial(failed, rng.beta(a, b, size=items)), failed


def attribution_section(rng: np.random.Generator, reps: int) -> float:
    """Coverage of the share of retrieval misses among the attributed runs."""
    print("| misses per failed run | items | runs | true share | coverage |")
    print("|---|---|---|---|---|")
    worst = 1.0
    for label, (a, b) in {"Beta(2, 2)": (2.0, 2.0), "Beta(1, 9)": (1.0, 9.0)}.items():
        truth_runs = 3
        misses, failed = _attributed(rng, 400_000, truth_runs, a, b)
        truth = misses.sum() / failed.sum()
        for items in (30, 100, 500):
            for runs in (1, 3):
                held = 0
                for _ in range(reps):
                    misses, failed = _attributed(rng, items, runs, a, b)
                    _, low, high = pooled_share_ci(misses, failed)
                    held += low <= truth <= high
                worst = min(worst, held / reps)
                print(f"| {label} | {items} | {runs} | {truth:.3f} | {held / reps:.1%} |",
                      flush=True)
    return worst


def main(reps: int, seed: int, sections: str = "both") -> None:
    rng = np.random.default_rng(seed)
    if sections in ("attribution", "both"):
        worst = attribution_section(rng, reps)
        print(f"\nworst coverage {worst:.1%} ({reps} simulated benchmarks per row)\n")
        if sections == "attribution":
            return
    print("| population | items | runs | " + " | ".join(
        m if k is None else f"{m}@{k}" for m, k in FIGURES) + " |")
    print("|---|---|---|" + "---|" * len(FIGURES))
    worst = 1.0
    for population, (a, b) in POPULATIONS.items():
        truth = _truth(rng, a, b)
        for items in (30, 100, 500):
            for runs in (1, 3):
                held = dict.fromkeys(FIGURES, 0)
                for _ in range(reps):
                    texts, n_gold, item = _runs(rng, items, runs, a, b)
                    table = pd.DataFrame({"arm": "a", "item_id": item, "gold_ranks": texts,
                                          "gold_n": n_gold})
                    summary = retrieval_summary(table, KS)
                    for row in summary.itertuples():
                        key = (row.figure, None if pd.isna(row.k) else int(row.k))
                        if key in held:
                            held[key] += row.ci_low <= truth[key] <= row.ci_high
                shares = [held[f] / reps for f in FIGURES]
                worst = min(worst, *shares)
                print(f"| {population} | {items} | {runs} | "
                      + " | ".join(f"{s:.1%}" for s in shares) + " |", flush=True)
    print(f"\nworst coverage {worst:.1%} ({reps} simulated benchmarks per row)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000,
         int(sys.argv[2]) if len(sys.argv) > 2 else 7,
         sys.argv[3] if len(sys.argv) > 3 else "both")
