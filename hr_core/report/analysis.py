"""The numbers a report shows that a run's summary does not hold: outcome shares and paired diffs.

Pure pandas over a ``Benchmark.runs`` table (SPEC section 9 columns).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pandas as pd

from hr_core.accuracy import item_accuracy
from hr_core.failures import FAILURE_KINDS
from hr_core.stats import paired_difference

__all__ = ["OUTCOMES", "PairedRow", "outcome_counts", "paired_differences"]

OUTCOMES: tuple[str, ...] = ("correct", *FAILURE_KINDS, "unscored")
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
    verdict: str = "too few items to tell"


def outcome_counts(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs per arm and outcome: ``correct``, each failure kind, ``unscored``.

    Example:
        >>> runs = pd.DataFrame({"arm": ["a", "a"], "correct": [True, False],
        ...                      "failure_kind": [None, "wrong"]})
        >>> outcome_counts(runs).loc["a", ["correct", "wrong"]].tolist()
        [1, 1]
    """
    arms = list(dict.fromkeys(runs["arm"]))
    kind = runs["failure_kind"]
    correct = runs["correct"].astype("boolean")
    has_kind = (kind.notna() & (kind.astype(object) != "")).to_numpy(dtype=bool)
    categories = np.where(  # vectorised: a loop over 1M runs took 11 s
        has_kind, kind.astype(object).to_numpy(),
        np.where(correct.isna(), "unscored",
                 np.where(correct.fillna(False).to_numpy(dtype=bool), "correct", "wrong")))
    counts = (
        pd.DataFrame({"arm": runs["arm"].to_numpy(), "outcome": categories})
        .groupby(["arm", "outcome"])
        .size()
        .unstack(fill_value=0)
    )
    return counts.reindex(index=arms, columns=list(OUTCOMES), fill_value=0).astype(int)


def paired_differences(runs: pd.DataFrame, baseline: str | None = None) -> list[PairedRow]:
    """Every other arm's paired accuracy difference with ``baseline`` (default: the best arm).

    Accuracy is over the runs made (:func:`hr_core.accuracy.item_accuracy`); items
    count when both arms scored them; the interval, p-value and verdict ("too few
    items to tell" below ``hr_core.stats.MIN_ITEMS``) are those of
    :func:`hr_core.stats.paired_difference`.
    """
    arms = list(dict.fromkeys(runs["arm"]))
    per_arm = {arm: item_accuracy(runs, arm) for arm in arms}
    if not arms:
        return []
    if baseline is None:
        baseline = max(arms, key=lambda a: per_arm[a].mean() if len(per_arm[a]) else -1.0)
    rows = []
    for arm in arms:
        if arm == baseline:
            continue
        common = per_arm[arm].index.intersection(per_arm[baseline].index)
        result = paired_difference(
            per_arm[arm].loc[common].tolist(), per_arm[baseline].loc[common].tolist()
        )
        rows.append(PairedRow(arm, baseline, _num(result.diff), _num(result.ci_low),
                              _num(result.ci_high), _num(result.p_value), int(result.n_items),
                              result.verdict))
    return rows


def _num(value: float) -> float:
    return float("nan") if value is None or math.isnan(value) else float(value)
