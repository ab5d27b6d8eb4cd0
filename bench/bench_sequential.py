"""Simulations behind sequential mode, the many-arm correction and the planner.

    .venv/bin/python bench/bench_sequential.py [--sims 10000] [--items 2000] [--only NAME]

Every figure comes from hr_core's own code (``hr_core.stats.sequential.log_bets`` and its
predictable estimates, the same functions ``PairedSequence.update`` sums;
``hr_core.stats.paired_difference``; ``bench/_holm.py``;
``hr_core.stats.sample_size``), vectorised over simulated sequences. Sections:

- validity: two equal arms, the share of sequences that ever declare a difference,
  monitored after every batch (target <= 5% at level 0.95);
- savings: items used until the verdict with a true difference of 5 and 10 points
  on 2,000 items, and the share with the right direction;
- fwer: eight equal arms, the share of runs calling any arm significantly worse,
  unadjusted (hr before), Holm over the comparisons with the best, Holm over all pairs;
- planner: hr plan's power against a simulation of the paired test's power.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _holm import holm

from hr_core.stats import paired_difference
from hr_core.stats.sample_size import paired_power
from hr_core.stats.sequential import first_decisions

LEVEL = 0.95
BATCH = 20
MIN_ITEMS = 30
MARGIN = 0.02


def correlated_pair(rng: np.random.Generator, sims: int, items: int, p_a: float, p_b: float,
                    rho: float) -> tuple[np.ndarray, np.ndarray]:
    """Two binary arms per item with correlation ``rho`` (a joint table of four cells)."""
    both = p_a * p_b + rho * math.sqrt(p_a * (1 - p_a) * p_b * (1 - p_b))
    cells = np.array([both, p_a - both, p_b - both, 1 - p_a - p_b + both])
    if (cells < -1e-12).any():
        raise ValueError(f"no joint distribution for p={p_a}, {p_b}, rho={rho}")
    draw = rng.choice(4, size=(sims, items), p=np.clip(cells, 0, None) / cells.clip(0).sum())
    a = ((draw == 0) | (draw == 1)).astype(np.float64)
    b = ((draw == 0) | (draw == 2)).astype(np.float64)
    return a, b


def sequential_decisions(d: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    return first_decisions(d, alpha, MARGIN, BATCH, MIN_ITEMS)


def validity(rng: np.random.Generator, sims: int, items: int) -> None:
    print(f"\n## validity: two equal arms, {sims} sequences x {items} items, "
          f"batch {BATCH}, looked at after every batch (level {LEVEL})")
    print("| p | correlation | ever declared a difference | declared equivalent |")
    print("|---|---|---|---|")
    for p in (0.5, 0.8, 0.95):
        for rho in (0.0, 0.5):
            wrong = equiv = 0
            for start in range(0, sims, 1000):
                k = min(1000, sims - start)
                a, b = correlated_pair(rng, k, items, p, p, rho)
                _, decision = sequential_decisions(a - b, 1 - LEVEL)
                wrong += int(np.isin(decision, (1, -1)).sum())
                equiv += int((decision == 2).sum())
            print(f"| {p} | {rho} | {wrong / sims:.2%} | {equiv / sims:.1%} |")


def savings(rng: np.random.Generator, sims: int, items: int) -> None:
    print(f"\n## savings: {sims} sequences x {items} items, correlation 0.5, "
          f"batch {BATCH}, margin {MARGIN}")
    print("| true difference | median items used | p90 items used | share of the set (median) "
          "| right direction | undecided at the end |")
    print("|---|---|---|---|---|---|")
    for p_b in (0.75, 0.8):
        used_all, decision_all = [], []
        for start in range(0, sims, 1000):
            k = min(1000, sims - start)
            b, a = correlated_pair(rng, k, items, 0.7, p_b, 0.5)  # a is the better arm
            used, decision = sequential_decisions(a - b, 1 - LEVEL)
            used_all.append(used)
            decision_all.append(decision)
        used = np.concatenate(used_all)
        decision = np.concatenate(decision_all)
        print(f"| {round((p_b - 0.7) * 100)} points (0.7 vs {p_b}) | {np.median(used):.0f} | "
              f"{np.percentile(used, 90):.0f} | {np.median(used) / items:.1%} | "
              f"{(decision == 1).mean():.1%} | {(decision == 0).mean():.1%} |")


def _eight_arms(rng: np.random.Generator, items: int, arms: int, p: float,
                rho: float) -> np.ndarray:
    """Per-item correctness of equal arms sharing an item difficulty (Gaussian copula)."""
    from statistics import NormalDist

    cut = NormalDist().inv_cdf(p)
    shared = rng.standard_normal(items)
    own = rng.standard_normal((arms, items))
    return (math.sqrt(rho) * shared + math.sqrt(1 - rho) * own < cut).astype(np.float64)


def fwer(rng: np.random.Generator, sims: int, items: int) -> None:
    arms = 8
    alpha = 1 - LEVEL
    pairs = [(i, j) for i in range(arms) for j in range(i + 1, arms)]
    print(f"\n## family-wise error: {arms} equal arms (p 0.7, latent correlation 0.5), "
          f"{items} items, {sims} simulations")
    counts = {"unadjusted (each arm against the best, hr before)": 0,
              "Holm over the 7 comparisons with the best": 0,
              "Holm over all 28 pairs (hr now)": 0,
              "sequential, Bonferroni over 28 pairs, every batch": 0}
    for _ in range(sims):
        x = _eight_arms(rng, items, arms, 0.7, 0.5)
        best = int(np.argmax(x.mean(axis=1)))
        vs_best = [paired_difference(x[a], x[best], LEVEL) for a in range(arms) if a != best]
        worse = [r.diff < 0 and r.verdict == "lower" for r in vs_best]
        counts["unadjusted (each arm against the best, hr before)"] += any(worse)
        adjusted = holm([r.p_value for r in vs_best])
        counts["Holm over the 7 comparisons with the best"] += any(
            p < alpha and r.diff < 0 for p, r in zip(adjusted, vs_best, strict=True))
        every = {pair: paired_difference(x[pair[0]], x[pair[1]], LEVEL) for pair in pairs}
        adjusted_all = dict(zip(pairs, holm([r.p_value for r in every.values()]), strict=True))
        counts["Holm over all 28 pairs (hr now)"] += any(
            adjusted_all[tuple(sorted((a, best)))] < alpha for a in range(arms) if a != best)
    seq_sims = min(sims, 2000)
    for _ in range(seq_sims):
        x = _eight_arms(rng, items, arms, 0.7, 0.5)
        d = np.stack([x[i] - x[j] for i, j in pairs])
        _, decision = sequential_decisions(d, alpha / len(pairs))
        counts["sequential, Bonferroni over 28 pairs, every batch"] += bool(
            np.isin(decision, (1, -1)).any())
    print("| verdict | runs calling any arm significantly worse |")
    print("|---|---|")
    for name, count in counts.items():
        total = seq_sims if name.startswith("sequential") else sims
        print(f"| {name} | {count / total:.2%} (of {total}) |")


def planner(rng: np.random.Generator, sims: int) -> None:
    print(f"\n## planner: hr plan's power against a simulation of the paired test "
          f"(exact McNemar, level {LEVEL}), {sims} simulations per row")
    print("| n items | p_a vs p_b (corr 0.5) | discordance | planned power | simulated power "
          "| gap (points) |")
    print("|---|---|---|---|---|---|")
    worst = 0.0
    for n in (50, 100, 200, 500, 1000, 2000):
        for p_a, p_b in ((0.7, 0.8), (0.7, 0.75), (0.6, 0.62)):
            a, b = correlated_pair(rng, sims, n, p_b, p_a, 0.5)
            diff = p_b - p_a
            both = p_a * p_b + 0.5 * math.sqrt(p_a * (1 - p_a) * p_b * (1 - p_b))
            q = (p_a - both) + (p_b - both)
            planned = paired_power(n, diff, q, LEVEL)
            hits = sum(paired_difference(a[s], b[s], LEVEL).verdict == "higher"
                       for s in range(sims))
            simulated = hits / sims
            worst = max(worst, abs(planned - simulated))
            print(f"| {n} | {p_a} vs {p_b} | {q:.3f} | {planned:.1%} | {simulated:.1%} | "
                  f"{(planned - simulated) * 100:+.1f} |")
    print(f"\nlargest gap: {worst * 100:.1f} points (target: within 3)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sims", type=int, default=10_000)
    parser.add_argument("--items", type=int, default=2_000)
    parser.add_argument("--fwer-items", type=int, default=500)
    parser.add_argument("--planner-sims", type=int, default=2_000)
    parser.add_argument("--only", choices=("validity", "savings", "fwer", "planner"))
    parser.add_argument("--seed", type=int, default=20261201)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    if args.only in (None, "validity"):
        validity(rng, args.sims, args.items)
    if args.only in (None, "savings"):
        savings(rng, args.sims, args.items)
    if args.only in (None, "fwer"):
        fwer(rng, args.sims, args.fwer_items)
    if args.only in (None, "planner"):
        planner(rng, args.planner_sims)
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
