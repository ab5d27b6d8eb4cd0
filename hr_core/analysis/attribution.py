"""Why the failed runs failed, per arm: retrieval misses, reading errors and refusals
despite evidence (:func:`hr_core.scoring.relevance.attribute`), each as a count and a
share of the arm's attributed runs with an item-clustered interval.

The share is pooled over runs (``count / attributed``) and its interval is
:func:`~hr_core.stats.intervals.pooled_share_ci`'s: the item is the cluster (runs of one
item are not independent), Clopper-Pearson's itself with one attributed run per item.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

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
    kinds, blamed = _kind_codes(runs["attribution"])
    item = "item_index" if "item_index" in runs.columns else "item_id"
    arm_codes, arms = pd.factorize(runs["arm"][blamed], sort=False)
    items, width = _item_codes(runs[item].to_numpy()[blamed])
    kinds = kinds[blamed]
    # runs per (arm, item) and, per attribution, the runs it names: the interval is over
    # items in any order (pooled_share_ci's sums are exact)
    keys = arm_codes.astype(np.int64) * width + items
    cells = len(arms) * width
    totals = np.bincount(keys, minlength=cells).reshape(len(arms), width)
    found: dict[tuple[int, int], dict[str, Any]] = {}
    for k, kind in enumerate(ATTRIBUTIONS):  # one attribution's counts at a time
        named = np.bincount(keys[kinds == k], minlength=cells).reshape(len(arms), width)
        for a, arm in enumerate(arms):
            share, low, high = pooled_share_ci(named[a], totals[a], level)
            found[(a, k)] = {"arm": str(arm), "attribution": kind, "count": int(named[a].sum()),
                             "attributed": int(totals[a].sum()), "share": share,
                             "ci_low": low, "ci_high": high}
    return pd.DataFrame([found[key] for key in sorted(found)], columns=columns)


def _kind_codes(attribution: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Each run's attribution as its position in ``ATTRIBUTIONS`` (-1: another text) and
    whether it has one, by Arrow (no Python object per run)."""
    try:
        texts = pa.array(attribution, from_pandas=True)  # pandas' own Arrow strings: no copy
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        texts = None
    if texts is None or not (pa.types.is_string(texts.type)
                             or pa.types.is_large_string(texts.type)):  # pandas' own codes
        codes = pd.Categorical(attribution, categories=ATTRIBUTIONS).codes
        return codes.astype(np.int64), attribution.notna().to_numpy()
    found = pc.index_in(texts, value_set=pa.array(ATTRIBUTIONS, type=texts.type))
    codes = pc.coalesce(found, pa.scalar(-1, found.type))
    return (codes.to_numpy(zero_copy_only=False).astype(np.int64),
            texts.is_valid().to_numpy(zero_copy_only=False))


def _item_codes(items: np.ndarray) -> tuple[np.ndarray, int]:
    """Codes of the items (any order) and how many there can be: the positions themselves
    when they are small whole numbers (``item_index``), else their order of appearance."""
    if items.dtype.kind in "iu" and len(items):
        low, high = int(items.min()), int(items.max())
        if low >= 0 and high < 2 * len(items) + 1024:
            return items.astype(np.int64), max(high + 1, 1)
    codes, uniques = pd.factorize(items, sort=False)
    return codes.astype(np.int64), max(len(uniques), 1)


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
    arms: dict[Any, list[dict[Hashable, Any]]] = {}  # by arm, in order (a groupby cost more)
    for record in attribution.to_dict("records"):
        arms.setdefault(record["arm"], []).append(record)
    for arm, rows in arms.items():
        by_kind = {str(r["attribution"]): r for r in rows}
        total = int(rows[0]["attributed"])
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
