"""Simulations behind the one comparison (``hr_core.stats.compare_paired``, issue 32).

    .venv/bin/python bench/bench_comparison.py [--reps 20000] [--seed 7]

The interval is computed vectorised from the same formula and the same quantiles
(``hr_core.stats.t_for``) as ``compare_paired``; a sample of simulated tables is
checked against ``compare_paired`` itself, row by row. Because the decision is the
interval's exclusion of 0 (and the p-value its inversion), the type-I error is the
share of intervals that exclude 0 when the arms are equal. Sections:

- two arms: binary outcomes on n = 10 to 1,000 items, accuracies 0.5 to 0.97, the arms
  independent or correlated (item by item), true differences 0 to 0.2: the worst
  coverage of the 95% interval (target >= 95%) and the worst type-I error at a true
  difference of 0 (target <= 5%);
- family: eight equal arms on items of mixed difficulty (the arms correlated through the
  items) or of one difficulty (independent): the share of benchmarks in which any arm
  is claimed different, each arm against the best with Bonferroni over all 28 pairs
  (the report), and each arm against the first with Bonferroni over 7 (target <= 5%).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hr_core.stats import compare_paired, t_for

LEVEL = 0.95
SIZES = (10, 20, 50, 100, 300, 1000)
ACCURACIES = (0.5, 0.7, 0.9, 0.97)
DIFFERENCES = (0.0, 0.05, 0.1, 0.2, -0.1)
CORRELATIONS = (0.0, 0.5, 0.9)


def intervals(d: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """``compare_paired``'s interval for each row of per-item differences ``d``."""
    n = d.shape[-1]
    mean = d.mean(axis=-1)
    sd = d.std(axis=-1, ddof=1)
    half = t_for(level, n - 1) * sd / np.sqrt(n) + 1.0 / n
    low, high = np.maximum(-1.0, mean - half), np.minimum(1.0, mean + half)
    s = ((1 - level) / 2) ** (1 / n)  # no spread: the distribution-free bound
    flat = sd == 0
    low = np.where(flat, np.maximum(-1.0, mean * s - (1 - s)), low)
    high = np.where(flat, np.minimum(1.0, mean * s + (1 - s)), high)
    return low, high


def two_arms(rng: np.random.Generator, n: int, pa: float, pb: float, rho: float,
             reps: int) -> tuple[np.ndarray, np.ndarray]:
    """``reps`` tables of ``n`` items: arm a right with ``pa``, b with ``pb``; with
    probability ``rho`` an item's b outcome uses a's latent draw (correlated arms)."""
    u = rng.random((reps, n))
    a = u < pa
    mixed = np.where(rng.random((reps, n)) < rho, u, rng.random((reps, n)))
    return a.astype(float), (mixed < pb).astype(float)


def check_against_the_function(rng: np.random.Generator) -> int:
    """Row by row, the vectorised interval equals ``compare_paired``'s; returns rows checked."""
    checked = 0
    for n in (10, 50, 300):
        a, b = two_arms(rng, n, 0.7, 0.75, 0.5, 50)
        low, high = intervals(b - a, LEVEL)
        for i in range(len(a)):
            got = compare_paired(b[i], a[i])
            assert abs(got.low - low[i]) < 1e-9 and abs(got.high - high[i]) < 1e-9, (n, i)
            assert (got.decision in ("better", "worse")) == (low[i] > 0 or high[i] < 0)
            checked += 1
    return checked


def two_arm_section(rng: np.random.Generator, reps: int) -> None:
    print("## Two arms (binary outcomes; paired t with continuity correction, 95%)")
    print("| items | worst coverage | worst type-I error (difference 0) | settings "
          "| Monte Carlo s.e. |")
    print("|---|---|---|---|---|")
    overall_cover, overall_reject = 1.0, 0.0
    for n in SIZES:
        runs = reps if n <= 100 else max(reps // 4, 500)
        worst_cover, worst_reject, settings = 1.0, 0.0, 0
        for pa in ACCURACIES:
            for delta in DIFFERENCES:
                pb = pa + delta
                if not 0 < pb < 1:
                    continue
                for rho in CORRELATIONS:
                    a, b = two_arms(rng, n, pa, pb, rho, runs)
                    low, high = intervals(b - a, LEVEL)
                    worst_cover = min(worst_cover,
                                      float(((low <= delta) & (delta <= high)).mean()))
                    if delta == 0:
                        worst_reject = max(worst_reject, float(((low > 0) | (high < 0)).mean()))
                    settings += 1
        overall_cover, overall_reject = min(overall_cover, worst_cover), max(overall_reject,
                                                                             worst_reject)
        se = (0.05 * 0.95 / runs) ** 0.5
        print(f"| {n} | {worst_cover:.2%} | {worst_reject:.2%} | {settings} x {runs} runs "
              f"| {se:.2%} |")
    print(f"\nworst coverage {overall_cover:.2%}; worst type-I error {overall_reject:.2%}\n")


def family_section(rng: np.random.Generator, reps: int) -> None:
    print("## Eight equal arms (share of benchmarks claiming any difference)")
    print("| items | items' difficulty | vs best, Bonferroni over 28 | vs first, over 7 |")
    print("|---|---|---|---|")
    arms = 8
    for n in (20, 100, 500):
        for spread, label in ((0.0, "one (independent arms)"),
                              (2.0, "mixed, Beta (correlated)")):
            runs = max(reps // 4, 500) if n <= 100 else max(reps // 10, 500)
            p = 0.75
            if spread:
                q = rng.beta(p * spread, (1 - p) * spread, (runs, 1, n))
            else:
                q = np.full((runs, 1, n), p)
            outcome = (rng.random((runs, arms, n)) < q).astype(float)
            best = outcome.mean(axis=2).argmax(axis=1)
            base = outcome[np.arange(runs), best][:, None, :]
            low, high = intervals(outcome - base, 1 - (1 - LEVEL) / 28)
            claimed = (low > 0) | (high < 0)  # the best against itself: no spread at 0
            vs_best = float(claimed.any(axis=1).mean())
            low, high = intervals(outcome[:, 1:] - outcome[:, :1], 1 - (1 - LEVEL) / 7)
            vs_first = float(((low > 0) | (high < 0)).any(axis=1).mean())
            print(f"| {n} | {label} | {vs_best:.2%} | {vs_first:.2%} |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    print(f"checked against compare_paired: {check_against_the_function(rng)} tables\n")
    two_arm_section(rng, args.reps)
    family_section(rng, args.reps)
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
