"""Why the failed runs failed, per arm: retrieval misses, reading errors and refusals
despite evidence (:func:`hr_core.scoring.relevance.attribute`), each as a count and a
share of the arm's attributed runs with an item-clustered interval.

The share is pooled over runs (``count / attributed``) and its interval is
:func:`~hr_core.stats.intervals.pooled_share_ci`'s: the item is the cluster (runs of one
item are not independent), Clopper-Pearson's itself with one attributed run per item.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from hr_core.scoring.relevance import ATTRIBUTIONS
from hr_core.stats.intervals import pooled_share_ci

__all__ = ["ArmAttribution", "attribution_by_arm", "attribution_summary"]


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


@dataclass(frozen=True)
class ArmAttribution:
    """One arm's attribution as every page words it (the report's markdown and HTML, the
    terminal): ``cells`` maps each attribution to ``"31 (78%, 62–89%)"`` (count, share,
    interval), ``headline`` is ``"of 40 failed answers, 31 (78%, 95% CI 62–89%) never saw
    a gold passage"`` (``None`` when nothing was attributed). Texts from the data
    (``arm``) are not escaped: each page escapes them for itself."""

    arm: str
    attributed: int
    cells: dict[str, str]
    headline: str | None


def _percent(value: Any) -> str:
    return "–" if value is None or pd.isna(value) else f"{float(value):.0%}"


def attribution_by_arm(attribution: pd.DataFrame, level: float = 0.95) -> list[ArmAttribution]:
    """:func:`attribution_summary`'s frame, one :class:`ArmAttribution` per arm in its
    order: the one wording of the split for every page.

    Example:
        >>> runs = pd.DataFrame({"arm": ["a"] * 4, "item_id": ["q1", "q2", "q3", "q4"],
        ...     "attribution": ["retrieval miss", "retrieval miss", "reading error", None]})
        >>> found = attribution_by_arm(attribution_summary(runs))[0]
        >>> found.cells["retrieval miss"]
        '2 (67%, 9%–99%)'
        >>> found.headline
        'of 3 failed answers, 2 (67%, 95% CI 9%–99%) never saw a gold passage'
    """
    found = []
    for arm, rows in attribution.groupby("arm", sort=False):
        by_kind = {str(r["attribution"]): r for r in rows.to_dict("records")}
        total = int(rows["attributed"].iloc[0])
        cells = {kind: f"{int(r['count']):,} ({_percent(r['share'])}, "
                       f"{_percent(r['ci_low'])}–{_percent(r['ci_high'])})"
                 for kind, r in by_kind.items()}
        missed = by_kind.get("retrieval miss")
        headline = None if missed is None or not total else (
            f"of {total:,} failed answers, {int(missed['count']):,} "
            f"({_percent(missed['share'])}, {level:.0%} CI {_percent(missed['ci_low'])}–"
            f"{_percent(missed['ci_high'])}) never saw a gold passage")
        found.append(ArmAttribution(str(arm), total, cells, headline))
    return found
