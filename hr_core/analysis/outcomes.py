"""The numbers a report shows that a run's summary does not hold: outcome shares and paired diffs.

Pure pandas over a ``Benchmark.runs`` table (SPEC section 9 columns).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd

from hr_core.core.failures import OUTCOMES
from hr_core.stats import compare_paired, paired_difference
from hr_core.stats.accuracy import arms_in_order, item_accuracies, name_codes

__all__ = ["OUTCOMES", "PairStatistics", "PairedRow", "outcome_counts", "pair_statistics",
           "paired_differences"]

"""The categories every run falls in, in the order the report stacks them."""


class PairedRow(NamedTuple):
    """One arm's paired difference against the reference arm (``arm - baseline``)."""

    arm: str
    baseline: str
    diff: float
    ci_low: float
    ci_high: float
    p_value: float
    n_items: int
    verdict: str = "too few items"
    method: str = ""


def outcome_counts(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs per arm and outcome: ``correct``, each failure kind, ``unscored``.

    Example:
        >>> runs = pd.DataFrame({"arm": ["a", "a"], "correct": [True, False],
        ...                      "failure_kind": [None, "wrong"]})
        >>> outcome_counts(runs).loc["a", ["correct", "wrong"]].tolist()
        [1, 1]
    """
    arms = arms_in_order(runs)
    kind = runs["failure_kind"]
    correct = runs["correct"].astype("boolean")
    no_kind = kind.isna().to_numpy(dtype=bool) | (kind == "").to_numpy(dtype=bool,
                                                                     na_value=False)
    verdicts = np.where(correct.isna().to_numpy(dtype=bool), OUTCOMES.index("unscored"),
                        np.where(correct.fillna(False).to_numpy(dtype=bool),
                                 OUTCOMES.index("correct"), OUTCOMES.index("wrong")))
    # integer codes and one bincount (vectorised: a loop, or strings, were slow at 1M runs)
    outcome = np.where(no_kind, verdicts, name_codes(OUTCOMES, kind))
    arm = name_codes(arms, runs["arm"])
    keep = (outcome >= 0) & (arm >= 0)  # kinds that are not outcomes are not counted
    counts = np.bincount(arm[keep] * len(OUTCOMES) + outcome[keep],
                         minlength=len(arms) * len(OUTCOMES)).reshape(len(arms), len(OUTCOMES))
    return pd.DataFrame(counts, index=pd.Index(arms, name="arm"),
                        columns=pd.Index(list(OUTCOMES), name="outcome")).astype(int)


def paired_differences(runs: pd.DataFrame, baseline: str | None = None, *,
                       family_size: int = 1) -> list[PairedRow]:
    """Every other arm's paired accuracy difference with ``baseline`` (default: the best arm).

    Accuracy is over the runs made (:func:`hr_core.stats.accuracy.item_accuracy`); items
    count when both arms scored them; the interval, p-value and verdict ("too few
    items" below ``hr_core.stats.MIN_ITEMS``) are those of the one comparison,
    :func:`hr_core.stats.compare_paired`, Bonferroni-corrected over ``family_size``.
    """
    arms = arms_in_order(runs)
    if not arms:
        return []
    table = item_accuracies(runs)  # one grouping for every arm (vectorised: 1M runs)
    if baseline is None:
        means = {arm: table[arm].dropna() for arm in arms}
        baseline = max(arms, key=lambda a: means[a].mean() if len(means[a]) else -1.0)
    base = table[baseline].to_numpy(dtype="float64") if baseline in table else None
    rows = []
    for arm in arms:
        if arm == baseline:
            continue
        values = table[arm].to_numpy(dtype="float64")
        if base is None:
            values = base_values = values[:0]
        else:
            common = ~np.isnan(values) & ~np.isnan(base)
            values, base_values = values[common], base[common]
        result = compare_paired(values, base_values, family_size=family_size)
        rows.append(PairedRow(arm, baseline, _num(result.estimate), _num(result.low),
                              _num(result.high), _num(result.p_value), int(result.n_items),
                              result.decision, result.method))
    return rows


class PairStatistics(NamedTuple):
    """A pair of arms over the items both scored: the paired test's p-value, the item
    count and the discordance ``mean((a_i - b_i)^2)`` (McNemar's ``p10 + p01``)."""

    p_value: float
    n_items: int
    discordance: float


def pair_statistics(runs: pd.DataFrame, level: float = 0.95
                    ) -> dict[tuple[str, str], PairStatistics]:
    """Every pair of arms ``(a, b)``, ``a`` before ``b`` in
    :func:`hr_core.stats.accuracy.arms_in_order`: the family the verdict's Bonferroni correction
    is over, and what the planner needs (:mod:`hr_core.stats.sample_size`).

    Example:
        >>> runs = pd.DataFrame({"arm": ["a", "b", "c"], "item_id": "q1",
        ...     "correct": pd.array([True, False, True], dtype="boolean"), "failure_kind": None})
        >>> sorted(pair_statistics(runs))
        [('a', 'b'), ('a', 'c'), ('b', 'c')]
    """
    arms = arms_in_order(runs)
    table = item_accuracies(runs)
    values = {arm: table[arm].to_numpy(dtype="float64") for arm in arms}
    out: dict[tuple[str, str], PairStatistics] = {}
    for i, a in enumerate(arms):
        for b in arms[i + 1:]:
            common = ~np.isnan(values[a]) & ~np.isnan(values[b])
            x, y = values[a][common], values[b][common]
            d = x - y
            out[(a, b)] = PairStatistics(_num(paired_difference(x, y, level).p_value),
                                         int(d.size),
                                         float(np.mean(d * d)) if d.size else math.nan)
    return out


def _num(value: float) -> float:
    return float("nan") if value is None or math.isnan(value) else float(value)
