"""Does the judge-corrected accuracy (PPI++) cover the truth? Simulated benchmarks.

Each simulated benchmark has ``N`` items whose true correctness is Bernoulli(p); a judge
says "correct" with probability ``sensitivity`` on a correct output and ``1 -
specificity`` on a wrong one; people label a uniformly random sample of ``n`` items
(their labels are the truth). For each setting, over ``--sims`` benchmarks:

- coverage of the true accuracy ``p`` by the 95% interval of the judge alone (what
  hr's summary shows for a judged run: Clopper-Pearson over the judge's verdicts), of
  the labels alone and of PPI++ (:func:`hr_core.stats.ppi.ppi_mean_ci`, ``method=
  "share"`` as hr shows it, and ``ppi_py``'s normal interval for contrast);
- their mean widths, and how much narrower PPI++'s is than the labels-only one;
- the paired difference of two arms judged with different biases (coverage of the
  true difference; type-I error when the arms are equal): PPI++'s estimate and standard
  error through :func:`hr_core.stats.compare_estimate` (Student t over the labelled
  items), as hr shows it, against the judge's own paired comparison;
- several runs per item (items the cluster): item accuracies Beta-distributed.

Run: ``.venv/bin/python bench/bench_ppi.py [--sims 2000] [--seed 7]`` (~1 minute).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hr_core.stats import clopper_pearson, compare_estimate, compare_paired
from hr_core.stats.ppi import ppi_mean_ci

ACCURACIES = (0.6, 0.7, 0.8, 0.9)


def judge(rng: np.random.Generator, truth: np.ndarray, sensitivity: float,
          specificity: float) -> np.ndarray:
    """The judge's verdicts (1 correct) on outputs whose true correctness is ``truth``."""
    says_correct = np.where(truth == 1, sensitivity, 1 - specificity)
    return (rng.random(truth.shape) < says_correct).astype(np.float64)


def split(rng: np.random.Generator, size: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A uniformly random sample of ``n`` of ``size`` units, and the rest."""
    order = rng.permutation(size)
    return order[:n], order[n:]


def accuracy_setting(rng: np.random.Generator, sims: int, p: float, big_n: int, n: int,
                     sensitivity: float, specificity: float) -> dict[str, float]:
    """Coverage and widths of the three intervals for one setting."""
    hits = {"judge": 0, "labels": 0, "ppi": 0, "normal": 0}
    widths = {"judge": 0.0, "labels": 0.0, "ppi": 0.0, "normal": 0.0}
    lams = 0.0
    for _ in range(sims):
        truth = (rng.random(big_n) < p).astype(np.float64)
        verdicts = judge(rng, truth, sensitivity, specificity)
        labelled, rest = split(rng, big_n, n)
        naive = clopper_pearson(float(verdicts.sum()), big_n)
        est = ppi_mean_ci(truth[labelled], verdicts[labelled], verdicts[rest], method="share")
        normal = ppi_mean_ci(truth[labelled], verdicts[labelled], verdicts[rest],
                             bounds=(0, 1))
        for name, (low, high) in {"judge": naive[1:], "labels": est.labels_only[1:],
                                  "ppi": (est.low, est.high),
                                  "normal": (normal.low, normal.high)}.items():
            hits[name] += low <= p <= high
            widths[name] += high - low
        lams += est.lam
    out = {f"{k}_coverage": v / sims for k, v in hits.items()}
    out.update({f"{k}_width": v / sims for k, v in widths.items()})
    out["lam"] = lams / sims
    out["narrower"] = 1 - out["ppi_width"] / out["labels_width"]
    return out


def difference_setting(rng: np.random.Generator, sims: int, p_a: float, p_b: float,
                       big_n: int, n: int) -> dict[str, float]:
    """Two arms on the same items; the judge is harsher on A (specificity 0.7, sensitivity
    0.9) than on B (0.6, 0.95): the judge-only difference is biased."""
    truth_diff = p_a - p_b
    hits = {"judge": 0, "ppi": 0}
    rejected = {"judge": 0, "ppi": 0}
    for _ in range(sims):
        a = (rng.random(big_n) < p_a).astype(np.float64)
        b = (rng.random(big_n) < p_b).astype(np.float64)
        fa, fb = judge(rng, a, 0.9, 0.7), judge(rng, b, 0.95, 0.6)
        labelled, rest = split(rng, big_n, n)
        d, g = a - b, fa - fb
        est = ppi_mean_ci(d[labelled], g[labelled], g[rest], bounds=(-1, 1))
        shown = compare_estimate(est.estimate, est.se, est.labelled, bounds=(-1, 1),
                                 continuity=1 / est.labelled)  # as hr_core.judge.corrected
        naive = compare_paired(fa, fb)  # the judge's own paired difference, as hr diff shows
        for name, (low, high) in {"judge": (naive.low, naive.high),
                                  "ppi": (shown.low, shown.high)}.items():
            hits[name] += low <= truth_diff <= high
            rejected[name] += not low <= 0 <= high
    return {"judge_coverage": hits["judge"] / sims, "ppi_coverage": hits["ppi"] / sims,
            "judge_rejects": rejected["judge"] / sims, "ppi_rejects": rejected["ppi"] / sims}


def clustered_setting(rng: np.random.Generator, sims: int, p: float, big_n: int, n: int,
                      runs: int) -> dict[str, float]:
    """Several runs per item: item accuracies ~ Beta(4p, 4(1-p)); units are item means."""
    hits = 0
    for _ in range(sims):
        item_p = rng.beta(4 * p, 4 * (1 - p), big_n)
        truth = (rng.random((big_n, runs)) < item_p[:, None]).astype(np.float64)
        verdicts = judge(rng, truth, 0.9, 0.7)
        labelled, rest = split(rng, big_n, n)
        y, f = truth.mean(axis=1), verdicts.mean(axis=1)
        est = ppi_mean_ci(y[labelled], f[labelled], f[rest], method="share")
        hits += est.low <= p <= est.high
    return {"ppi_coverage": hits / sims}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    sims = args.sims

    print(f"Coverage of the true accuracy, biased judge (sensitivity 0.9, specificity 0.7), "
          f"2,000 judged items, {sims} benchmarks per row")
    print("| p | human labels | judge alone | labels alone | PPI++ (normal) | PPI++ | lam | "
          "PPI++ width | labels width | narrower |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    worst = worst_normal = 1.0
    for n in (100, 200, 500):
        for p in ACCURACIES:
            r = accuracy_setting(rng, sims, p, 2000, n, 0.9, 0.7)
            worst = min(worst, r["ppi_coverage"])
            worst_normal = min(worst_normal, r["normal_coverage"])
            print(f"| {p} | {n} | {r['judge_coverage']:.1%} | {r['labels_coverage']:.1%} | "
                  f"{r['normal_coverage']:.1%} | {r['ppi_coverage']:.1%} | {r['lam']:.2f} | "
                  f"{r['ppi_width']:.3f} | "
                  f"{r['labels_width']:.3f} | {r['narrower']:.0%} |")
    print(f"worst PPI++ coverage: {worst:.1%} (normal interval: {worst_normal:.1%})")

    print(f"\nWidth, 1,800 judged items, 200 human labels, {sims} benchmarks per row")
    print("| judge (sens, spec) | p | PPI++ coverage | PPI++ width | labels width | narrower |")
    print("|---|---|---:|---:|---:|---:|")
    for sens, spec in ((0.95, 0.90), (0.9, 0.7)):
        for p in ACCURACIES:
            r = accuracy_setting(rng, sims, p, 1800, 200, sens, spec)
            print(f"| {sens}, {spec} | {p} | {r['ppi_coverage']:.1%} | {r['ppi_width']:.3f} | "
                  f"{r['labels_width']:.3f} | {r['narrower']:.0%} |")

    print(f"\nPaired difference A - B (judge harsher on A), 2,000 items, 200 labelled items, "
          f"{sims} benchmarks per row")
    print("| p_A | p_B | judge alone covers | PPI++ covers | judge alone rejects 0 | "
          "PPI++ rejects 0 |")
    print("|---|---|---:|---:|---:|---:|")
    for p_a, p_b in ((0.8, 0.8), (0.7, 0.7), (0.8, 0.7), (0.9, 0.75)):
        r = difference_setting(rng, sims, p_a, p_b, 2000, 200)
        print(f"| {p_a} | {p_b} | {r['judge_coverage']:.1%} | {r['ppi_coverage']:.1%} | "
              f"{r['judge_rejects']:.1%} | {r['ppi_rejects']:.1%} |")

    print(f"\nThree runs per item (items the cluster), biased judge, 2,000 items, "
          f"200 labelled items, {sims} benchmarks per row")
    print("| p | PPI++ coverage |")
    print("|---|---:|")
    for p in ACCURACIES:
        r = clustered_setting(rng, sims, p, 2000, 200, 3)
        print(f"| {p} | {r['ppi_coverage']:.1%} |")


if __name__ == "__main__":
    main()
