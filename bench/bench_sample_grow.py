"""Does a grown sample keep the corrected interval's coverage? Simulated benchmarks.

``hr label sample --n N --grow`` adds items drawn uniformly from the rest of a sample's
frame (:func:`hr_core.judge.human_labels.grow_items`): the union is a uniform sample of
its size (``tests/test_label_sample_grow.py`` checks it against ``1 / C(N, n)``), and the
corrected accuracy treats it as one sample of ``n``. When ``n`` is chosen *after* seeing
the first labels (``hr plan --label-width`` from a pilot, whose variance depends on the
labels' mean), the final size depends on the data, so the treatment is checked here: each
benchmark draws ``N`` items correct with probability ``p`` and the judge's verdicts with
the given sensitivity and specificity, labels a random pilot of 50, plans ``n`` from the
pilot as hr plan does, grows the sample to ``n`` (new items uniform over the rest) and
computes the interval hr shows (:func:`hr_core.stats.ppi.ppi_mean_ci`, ``method="share"``)
on the union. Reported: the median planned ``n``, the coverage of the grown sample's
interval, and beside it a fresh sample of the same ``n`` drawn at once (no pilot in it).

Run: ``.venv/bin/python bench/bench_sample_grow.py [--sims 2000] [--seed 5]`` (~2 minutes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hr_core.stats.label_plan import labels_for_width
from hr_core.stats.ppi import ppi_mean_ci

SETTINGS = (  # (sensitivity, specificity, true accuracy, judged items, target width)
    (0.9, 0.7, 0.6, 2000, 0.1),
    (0.9, 0.7, 0.9, 2000, 0.08),
    (0.95, 0.9, 0.8, 1800, 0.08),
)
PILOT = 50


def one(rng: np.random.Generator, p: float, big_n: int, sens: float, spec: float,
        width: float) -> tuple[int, bool, bool]:
    """One benchmark: the planned ``n``, whether the grown sample's interval covers ``p``,
    and whether a sample of ``n`` drawn at once does."""
    truth = (rng.random(big_n) < p).astype(np.float64)
    verdicts = (rng.random(big_n) < np.where(truth == 1, sens, 1 - spec)).astype(float)
    order = rng.permutation(big_n)
    pilot = order[:PILOT]
    y, f = truth[pilot], verdicts[pilot]
    plan = labels_for_width(width, float(y.var(ddof=1)), float(verdicts.var()),
                            float(np.cov(y, f)[0, 1]) if y.var() > 0 else 0.0,
                            judged=big_n, mean=float(y.mean()))
    n = min(big_n - 1, max(PILOT, plan.labels_ppi or big_n - 1))
    rest = order[PILOT:]
    added = rest[rng.choice(len(rest), size=n - PILOT, replace=False)]  # the growth
    lab = np.concatenate([pilot, added])
    others = np.setdiff1d(np.arange(big_n), lab)
    grown = ppi_mean_ci(truth[lab], verdicts[lab], verdicts[others], method="share")
    fresh = rng.permutation(big_n)
    once = ppi_mean_ci(truth[fresh[:n]], verdicts[fresh[:n]], verdicts[fresh[n:]],
                       method="share")
    return n, bool(grown.low <= p <= grown.high), bool(once.low <= p <= once.high)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"A pilot of {PILOT} random labels, n planned from it, the sample grown to n "
          f"({args.sims} benchmarks per row, seed {args.seed})")
    print("| sens | spec | p | N | target | planned n (median, 5%-95%) | coverage, grown "
          "| coverage, drawn at once |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for sens, spec, p, big_n, width in SETTINGS:
        runs = [one(rng, p, big_n, sens, spec, width) for _ in range(args.sims)]
        sizes = np.array([r[0] for r in runs])
        grown = np.mean([r[1] for r in runs])
        once = np.mean([r[2] for r in runs])
        low, mid, high = np.percentile(sizes, [5, 50, 95])
        print(f"| {sens} | {spec} | {p} | {big_n} | {width} | {mid:.0f} ({low:.0f}-{high:.0f}) "
              f"| {grown:.1%} | {once:.1%} |")


if __name__ == "__main__":
    main()
