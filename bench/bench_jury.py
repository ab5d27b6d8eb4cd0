"""When does a jury of judges agree with people more than its best member?

Three grade judges with fixed accuracies 0.85, 0.75 and 0.70 (each the share of items on
which its verdict is the people's) judge the same items; the people's verdicts are the
truth (pass on 60% of items). Each member errs on an item when ``Z_k < q_k`` with ``q_k``
the normal quantile of its error rate and ``Z_k = sqrt(rho) W + sqrt(1 - rho) E_k``
(a Gaussian copula): ``W`` is the item's difficulty, shared by the members, ``E_k`` the
member's own noise. ``rho = 0`` makes the errors independent; as ``rho`` grows the
members err on the same (hard) items, and at ``rho = 1`` the weaker members are wrong
wherever the best one is. Each member keeps its accuracy at every ``rho``.

For each ``rho``, over ``--sims`` benchmarks of ``--items`` items: each member's agreement
with the people, the jury's under each aggregation (:func:`hr_core.judge.jury.jury_verdict`,
the code a jury runs; no consensus counts as disagreement), and the members' agreement with
each other (:func:`hr_core.stats.agreement.krippendorff_alpha`, ``fleiss_kappa``): the
sign that the jury has stopped helping.

Run: ``.venv/bin/python bench/bench_jury.py [--sims 200] [--items 500] [--seed 5]``
(~1 minute).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from statistics import NormalDist

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hr_core.judge.jury import jury_verdict
from hr_core.stats.agreement import fleiss_kappa, krippendorff_alpha

ACCURACIES = (0.85, 0.75, 0.70)
GRADES = ("pass", "fail")
RHOS = (0.0, 0.1, 0.2, 0.3, 0.5, 0.8, 1.0)


def verdicts(rng: np.random.Generator, truth: np.ndarray, rho: float) -> np.ndarray:
    """Each member's verdicts (True: pass) on items whose people's verdict is ``truth``."""
    shared = rng.standard_normal(len(truth))
    out = []
    for accuracy in ACCURACIES:
        z = np.sqrt(rho) * shared + np.sqrt(1 - rho) * rng.standard_normal(len(truth))
        wrong = z < NormalDist().inv_cdf(1 - accuracy)
        out.append(np.where(wrong, ~truth, truth))
    return np.stack(out, axis=1)


def setting(rng: np.random.Generator, sims: int, items: int, rho: float
            ) -> dict[str, float]:
    totals: dict[str, float] = {}
    for _ in range(sims):
        truth = rng.random(items) < 0.6
        said = verdicts(rng, truth, rho)
        rows = [[GRADES[0] if v else GRADES[1] for v in row] for row in said.tolist()]
        people = [GRADES[0] if t else GRADES[1] for t in truth.tolist()]
        found = {f"member {k + 1}": float((said[:, k] == truth).mean())
                 for k in range(len(ACCURACIES))}
        for aggregation in ("majority", "mean", "unanimous"):
            jury = [jury_verdict(aggregation, GRADES, [("ok", v) for v in row])[1]
                    for row in rows]
            found[aggregation] = float(np.mean([j == p for j, p in
                                                zip(jury, people, strict=True)]))
        found["alpha"] = krippendorff_alpha(rows)
        found["kappa"] = fleiss_kappa(rows).kappa
        for key, value in found.items():
            totals[key] = totals.get(key, 0.0) + value / sims
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sims", type=int, default=200)
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"Agreement with people, members' accuracies {ACCURACIES}, {args.items} items, "
          f"{args.sims} benchmarks per row (Monte Carlo error about "
          f"±{0.5 / np.sqrt(args.items * args.sims):.2%})")
    print("| rho | member 1 | member 2 | member 3 | jury: majority (= mean) | unanimous | "
          "jury - best member | alpha between members | Fleiss' kappa |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for rho in RHOS:
        r = setting(rng, args.sims, args.items, rho)
        assert abs(r["majority"] - r["mean"]) < 1e-12  # two grades, three members: the same
        best = max(r[f"member {k + 1}"] for k in range(len(ACCURACIES)))
        print(f"| {rho} | {r['member 1']:.1%} | {r['member 2']:.1%} | {r['member 3']:.1%} | "
              f"{r['majority']:.1%} | {r['unanimous']:.1%} | "
              f"{(r['majority'] - best) * 100:+.1f} points | {r['alpha']:.2f} | "
              f"{r['kappa']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
