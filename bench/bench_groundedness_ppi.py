"""Does groundedness' unsupported share corrected by people's labels (PPI++) cover the truth?

Each simulated run has ``--items`` judged answers (one run per item unless said) of which a
true share ``p`` (0.2) is not supported by its passages; the groundedness judge says
"unsupported" with probability ``sensitivity`` (0.8) on an unsupported answer and ``1 -
specificity`` (0.1) on a supported one, so its own share is biased (0.24 here); people
label a uniformly random sample of ``n`` items (100, 200, 500) and are right. Per row,
over ``--sims`` simulated runs (2,000):

- the judge alone: what ``hr judge groundedness`` shows (``pooled_share_ci`` over the
  judged runs: Clopper-Pearson's with one run per item);
- the labels alone and PPI++ as ``hr_core.judge.corrected.corrected_groundedness`` makes
  them: ``f`` 1 where the judge said unsupported, 0 supported, 1/2 no verdict; ``y`` 1
  where people said unsupported; items the units (their runs' means), then
  ``ppi_mean_ci(method="share")``;
- coverage of ``p`` by each 95% interval, their mean widths and PPI++'s mean weight on the
  judge.

Two more rows at n = 200: the judge gives no verdict on 5% of the answers (their ``f`` is
1/2, as hr counts them), and three runs per item (each item's chance of an unsupported
answer ~ Beta(0.8, 3.2), mean 0.2; items the cluster).

Run: ``.venv/bin/python bench/bench_groundedness_ppi.py [--sims 2000] [--seed 7]``
(about 10 seconds).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hr_core.stats.intervals import pooled_share_ci
from hr_core.stats.ppi import ppi_mean_ci

TRUE_SHARE = 0.2
SENSITIVITY = 0.8
SPECIFICITY = 0.9


def simulate(rng: np.random.Generator, sims: int, items: int, n: int, *, runs: int = 1,
             no_verdict: float = 0.0) -> dict[str, float]:
    """Coverage and widths of the judge-only, labels-only and PPI++ intervals."""
    hits = {"judge": 0, "labels": 0, "ppi": 0}
    widths = {"judge": 0.0, "labels": 0.0, "ppi": 0.0}
    lams = 0.0
    for _ in range(sims):
        if runs == 1:
            chance = np.full(items, TRUE_SHARE)
        else:
            chance = rng.beta(4 * TRUE_SHARE, 4 * (1 - TRUE_SHARE), items)
        truth = (rng.random((items, runs)) < chance[:, None]).astype(np.float64)
        says = np.where(truth == 1, SENSITIVITY, 1 - SPECIFICITY)
        judge = (rng.random(truth.shape) < says).astype(np.float64)
        silent = rng.random(truth.shape) < no_verdict
        f = np.where(silent, 0.5, judge)  # hr's convention for a run without a verdict
        # the judge alone, as hr judge groundedness shows it: the runs with a verdict
        decided = ~silent
        _, low, high = pooled_share_ci((judge * decided).sum(axis=1),
                                       decided.sum(axis=1))
        order = rng.permutation(items)
        labelled, rest = order[:n], order[n:]
        y_i, f_i = truth.mean(axis=1), f.mean(axis=1)
        est = ppi_mean_ci(y_i[labelled], f_i[labelled], f_i[rest], method="share")
        for name, (lo, hi) in {"judge": (low, high), "labels": tuple(est.labels_only)[1:],
                               "ppi": (est.low, est.high)}.items():
            hits[name] += lo <= TRUE_SHARE <= hi
            widths[name] += hi - lo
        lams += est.lam
    out = {f"{k}_coverage": v / sims for k, v in hits.items()}
    out.update({f"{k}_width": v / sims for k, v in widths.items()})
    out["lam"] = lams / sims
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    biased = TRUE_SHARE * SENSITIVITY + (1 - TRUE_SHARE) * (1 - SPECIFICITY)
    print(f"true unsupported share {TRUE_SHARE}, judge sensitivity {SENSITIVITY} / "
          f"specificity {SPECIFICITY} (its share {biased:.2f}), "
          f"{args.items} items, {args.sims} simulated runs per row, seed {args.seed}")
    print("| labels | setting | judge alone: coverage (width) | labels alone | PPI++ | "
          "judge weight |")
    print("|---|---|---|---|---|---|")
    rows = [(100, {}, "1 run per item"), (200, {}, "1 run per item"),
            (500, {}, "1 run per item"), (200, {"no_verdict": 0.05}, "5% no verdict"),
            (200, {"runs": 3}, "3 runs per item")]
    for n, extra, name in rows:
        r = simulate(rng, args.sims, args.items, n, **extra)  # type: ignore[arg-type]
        print(f"| {n} | {name} | {r['judge_coverage']:.1%} ({r['judge_width']:.3f}) | "
              f"{r['labels_coverage']:.1%} ({r['labels_width']:.3f}) | "
              f"{r['ppi_coverage']:.1%} ({r['ppi_width']:.3f}) | {r['lam']:.2f} |")
    print(f"({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
