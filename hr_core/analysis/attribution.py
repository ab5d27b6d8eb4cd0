"""Why the failed runs failed, per arm: retrieval misses, reading errors and refusals
despite evidence (:func:`hr_core.scoring.relevance.attribute`), each as a count and a
share of the arm's attributed runs with an item-clustered interval.

The share is pooled over runs (``count / attributed``) and its interval is
:func:`~hr_core.stats.intervals.pooled_share_ci`'s: the item is the cluster (runs of one
item are not independent), Clopper-Pearson's itself with one attributed run per item.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from hr_core.scoring.relevance import ATTRIBUTIONS
from hr_core.stats.intervals import pooled_share_ci

__all__ = ["attribution_summary"]


def attribution_summary(runs: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Per arm and attribution: ``arm, attribution, count, attributed, share, ci_low,
    ci_high`` (an empty frame when no run was attributed).

    ``runs``: the runs table's ``arm``, ``item_index`` (or ``item_id``) and
    ``attribution``.

    Example:
        >>> runs = pd.DataFrame({"arm": ["a"] * 4, "item_id": ["q1", "q2", "q3", "q4"],
        ...     "attribution": ["retrieval miss", "retrieval miss", "reading error", None]})
        >>> row = attribution_summary(runs).iloc[0]
        >>> row["attribution"], int(row["count"]), int(row["attributed"])
        ('retrieval miss', 2, 3)
        >>> round(float(row["share"]), 3)
        0.667
    """
    columns = ["arm", "attribution", "count", "attributed", "share", "ci_low", "ci_high"]
    if "attribution" not in runs.columns:
        return pd.DataFrame(columns=columns)
    blamed = runs["attribution"].notna().to_numpy()
    item = "item_index" if "item_index" in runs.columns else "item_id"
    arm_codes, arms = pd.factorize(runs["arm"][blamed], sort=False)
    items, _ = pd.factorize(runs[item][blamed], sort=True)
    kinds = pd.Categorical(runs["attribution"][blamed], categories=ATTRIBUTIONS).codes
    rows: list[dict[str, Any]] = []
    for a, arm in enumerate(arms):
        mine = arm_codes == a
        groups, at = np.unique(items[mine], return_inverse=True)  # the arm's items, in order
        totals = np.bincount(at.ravel(), minlength=len(groups))
        for k, kind in enumerate(ATTRIBUTIONS):
            hits = np.bincount(at.ravel(), weights=kinds[mine] == k, minlength=len(groups))
            share, low, high = pooled_share_ci(hits, totals, level)
            rows.append({"arm": str(arm), "attribution": kind, "count": int(hits.sum()),
                         "attributed": int(totals.sum()), "share": share, "ci_low": low,
                         "ci_high": high})
    return pd.DataFrame(rows, columns=columns)
