"""Does the planned number of human labels give the target width? Simulated benchmarks.

``hr plan RUN_DIR --label-width W`` (:func:`hr_core.stats.label_plan.labels_for_width`)
says how many of a run's ``N`` judged items to label for a 95% interval ``W`` wide,
with PPI++ and from the labels alone. Each row plans ``n`` from the judge's sensitivity
and specificity and the true accuracy (what a validation record gives), or from a pilot
of 50 random labels (the moments estimated as hr does), for the width of the interval
hr shows (``mean=`` given, the share interval), then simulates ``--sims``
benchmarks: ``N`` items correct with probability ``p``, the judge's verdicts with those
error rates, ``n`` items labelled at random, and the interval hr computes
(:func:`hr_core.stats.ppi.ppi_mean_ci` with ``method="share"``, as hr shows it, and
PPI++'s normal interval for contrast). Reported: the mean width over the target (1.00 is
on target), the share of benchmarks whose interval is no wider than the target, the
mean width with one label in ten fewer (the count is not generous), and the coverage.

Run: ``.venv/bin/python bench/bench_label_plan.py [--sims 2000] [--seed 11]`` (~1 minute).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hr_core.stats.label_plan import judge_moments, labels_for_width
from hr_core.stats.ppi import ppi_mean_ci

SETTINGS = (  # (sensitivity, specificity, true accuracy, judged items, target width)
    (0.9, 0.7, 0.6, 2000, 0.1),
    (0.9, 0.7, 0.75, 2000, 0.1),
    (0.9, 0.7, 0.9, 2000, 0.08),
    (0.95, 0.9, 0.6, 1800, 0.1),
    (0.95, 0.9, 0.8, 1800, 0.08),
    (0.95, 0.9, 0.8, 1800, 0.05),
)


def simulate(rng: np.random.Generator, sims: int, p: float, big_n: int, n: int, sens: float,
             spec: float) -> dict[str, np.ndarray]:
    """Widths and coverage of the PPI++ intervals (normal and share) with ``n`` labels."""
    normal, share, covered = np.empty(sims), np.empty(sims), np.empty(sims)
    for k in range(sims):
        truth = (rng.random(big_n) < p).astype(np.float64)
        verdicts = (rng.random(big_n) < np.where(truth == 1, sens, 1 - spec)).astype(float)
        order = rng.permutation(big_n)
        lab, rest = order[:n], order[n:]
        est = ppi_mean_ci(truth[lab], verdicts[lab], verdicts[rest])
        shown = ppi_mean_ci(truth[lab], verdicts[lab], verdicts[rest], method="share")
        normal[k], share[k] = est.high - est.low, shown.high - shown.low
        covered[k] = shown.low <= p <= shown.high
    return {"normal": normal, "share": share, "covered": covered}


def pilot_plan(rng: np.random.Generator, p: float, big_n: int, sens: float, spec: float,
               width: float, pilot: int = 50) -> int | None:
    """The PPI++ count planned from a pilot of ``pilot`` random labels (sample moments of
    the labelled items, the judge's variance over all items), as hr plan does."""
    truth = (rng.random(big_n) < p).astype(np.float64)
    verdicts = (rng.random(big_n) < np.where(truth == 1, sens, 1 - spec)).astype(float)
    lab = rng.permutation(big_n)[:pilot]
    y, f = truth[lab], verdicts[lab]
    plan = labels_for_width(width, float(y.var(ddof=1)), float(verdicts.var()),
                            float(np.cov(y, f)[0, 1]), judged=big_n, mean=float(y.mean()))
    return plan.labels_ppi


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"Planned labels against simulated benchmarks ({args.sims} per row, seed "
          f"{args.seed}); widths are mean width / target")
    print("| sens | spec | p | N | target | labels alone | PPI++ n | hr's width | "
          "normal width | <= target | 0.9 n: width | coverage | pilot-50 n (median) "
          "| pilot width |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for sens, spec, p, big_n, width in SETTINGS:
        plan = labels_for_width(width, *judge_moments(p, sens, spec), judged=big_n, mean=p)
        assert plan.labels_ppi is not None
        got = simulate(rng, args.sims, p, big_n, plan.labels_ppi, sens, spec)
        fewer = simulate(rng, args.sims // 4, p, big_n, int(plan.labels_ppi * 0.9), sens,
                         spec)
        pilots = [pilot_plan(rng, p, big_n, sens, spec, width) for _ in range(200)]
        median = int(np.median([x for x in pilots if x is not None]))
        from_pilot = simulate(rng, args.sims // 4, p, big_n, median, sens, spec)
        print(f"| {sens} | {spec} | {p} | {big_n} | {width} | {plan.labels_only} | "
              f"{plan.labels_ppi} | {got['share'].mean() / width:.3f} | "
              f"{got['normal'].mean() / width:.3f} | {(got['share'] <= width).mean():.0%} | "
              f"{fewer['share'].mean() / width:.3f} | {got['covered'].mean():.1%} | "
              f"{median} | {from_pilot['share'].mean() / width:.3f} |")


if __name__ == "__main__":
    main()
