"""``hr diff`` of two judged runs corrected by people's labels: does the corrected paired
difference ``now - then`` cover the truth, and how often does it call equal runs different?

Each simulated pair of runs has ``N`` items of latent difficulty ``q_i ~ Beta(4p, 4(1-p))``
(shared by both runs: an item hard then is hard now); run *then* answers each run of an
item right with probability ``q_i``, run *now* with ``q_i`` (equal runs) or ``q_i + delta
(1 - q_i)`` (a better run, true difference ``delta (1 - p)``). The judge is harsher on run
*then* (sensitivity 0.9, specificity 0.7) than on *now* (0.95, 0.6), as when an answer's
style changed: the judge's own paired difference is biased. People label every run of a
uniformly random sample of items in each run: the same items in both (``hr label sample
--seed`` with run a's seed) or independent samples (only the items in both are paired).

For each setting, over ``--sims`` pairs of runs, the corrected difference exactly as ``hr
diff`` makes it (:func:`hr_core.judge.corrected.corrected_difference`: items the units and
the cluster, PPI++ then the one comparison) against the judge's own (``compare_paired``
over item shares, as ``hr diff``'s verdict): coverage of the true difference, and the
share of pairs where the interval excludes 0 (the type-I error when the runs are equal).

Run: ``.venv/bin/python bench/bench_ppi_diff.py [--sims 2000] [--seed 11]`` (~2 minutes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_ppi import judge

from hr_core.judge.corrected import corrected_difference
from hr_core.stats import compare_paired

DELTA = 1 / 3


def _rows(ids: np.ndarray, truth: np.ndarray, verdicts: np.ndarray,
          labelled: np.ndarray) -> pd.DataFrame:
    """One run's rows as :func:`hr_core.judge.corrected.verdict_table` gives them."""
    runs = truth.shape[1]
    y = np.where(labelled[:, None], truth, np.nan)
    return pd.DataFrame({"item": np.repeat(ids, runs), "f": verdicts.ravel(),
                         "y": y.ravel()})


def setting(rng: np.random.Generator, sims: int, p: float, better: bool, big_n: int,
            n: int, runs: int, same_sample: bool) -> dict[str, float]:
    truth_diff = DELTA * (1 - p) if better else 0.0
    ids = np.array([f"q{i}" for i in range(big_n)])
    hits = {"judge": 0, "ppi": 0}
    rejected = {"judge": 0, "ppi": 0}
    paired = 0
    for _ in range(sims):
        q = rng.beta(4 * p, 4 * (1 - p), big_n)
        q_now = q + DELTA * (1 - q) if better else q
        then = (rng.random((big_n, runs)) < q[:, None]).astype(np.float64)
        now = (rng.random((big_n, runs)) < q_now[:, None]).astype(np.float64)
        f_then, f_now = judge(rng, then, 0.9, 0.7), judge(rng, now, 0.95, 0.6)
        lab_then = np.zeros(big_n, dtype=bool)
        lab_then[rng.choice(big_n, n, replace=False)] = True
        lab_now = lab_then.copy() if same_sample else np.zeros(big_n, dtype=bool)
        if not same_sample:
            lab_now[rng.choice(big_n, n, replace=False)] = True
        found = corrected_difference(_rows(ids, now, f_now, lab_now),
                                     _rows(ids, then, f_then, lab_then), ("now", "then"), 1)
        assert found is not None and found.ppi is not None
        own = compare_paired(f_now.mean(axis=1), f_then.mean(axis=1))
        paired += found.ppi.labelled
        for name, c in {"judge": own, "ppi": found.comparison}.items():
            hits[name] += c.low <= truth_diff <= c.high
            rejected[name] += not c.low <= 0 <= c.high
    return {"judge_coverage": hits["judge"] / sims, "ppi_coverage": hits["ppi"] / sims,
            "judge_rejects": rejected["judge"] / sims, "ppi_rejects": rejected["ppi"] / sims,
            "paired": paired / sims}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"hr diff, corrected now - then, 2,000 items, {args.sims} pairs of runs per row; "
          "judge (0.9, 0.7) then, (0.95, 0.6) now")
    print("| p then | now | runs | labelled per run | samples | items paired (mean) | "
          "judge covers | PPI++ covers | judge rejects 0 | PPI++ rejects 0 |")
    print("|---|---|---:|---:|---|---:|---:|---:|---:|---:|")
    for p, better, runs, n, same in ((0.7, False, 1, 200, True), (0.85, False, 1, 200, True),
                                     (0.7, False, 3, 200, True), (0.7, False, 1, 450, False),
                                     (0.7, True, 1, 200, True), (0.85, True, 1, 200, True),
                                     (0.7, True, 3, 200, True), (0.7, True, 1, 450, False)):
        r = setting(rng, args.sims, p, better, 2000, n, runs, same)
        now = f"{p + DELTA * (1 - p):.2f}" if better else "equal"
        print(f"| {p} | {now} | {runs} | {n} | {'one seed' if same else 'independent'} | "
              f"{r['paired']:.0f} | {r['judge_coverage']:.1%} | {r['ppi_coverage']:.1%} | "
              f"{r['judge_rejects']:.1%} | {r['ppi_rejects']:.1%} |", flush=True)


if __name__ == "__main__":
    main()
