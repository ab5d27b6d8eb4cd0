"""The paired comparison per slice: each arm against the run's best arm on a slice's items.

The same mechanism as the run's verdict (:mod:`hr_core.analysis.verdict`): per-item
accuracy over the runs made (:func:`hr_core.stats.accuracy.item_accuracies`) and the one
comparison (:func:`hr_core.stats.compare_paired`, what ``Benchmark.compare`` returns)
over the items both arms scored, Bonferroni-corrected over every pair of arms in every
value of one slice field: a field's table makes one claim per cell, so its family is
``pairs x values`` (family-wise error at most 5% per field), and each interval is made
at the corrected level, so it never disagrees with its verdict. A slice where a pair has
fewer than ``MIN_ITEMS`` paired items gets no verdict ("too few items") and is not in
the family (the count decides that, not the outcome).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from hr_core.stats import MIN_ITEMS, compare_paired, decision_from_legacy

__all__ = ["COMPARE_COLUMNS", "comparison_text", "correction_text", "slice_comparisons"]

COMPARE_COLUMNS = ("vs", "diff", "diff_low", "diff_high", "p_value", "level", "paired",
                   "family", "verdict")
"""The columns the comparison adds to each (field, value, arm) row of the slice table:
the arm it is compared with (the run's best), ``arm - vs`` in accuracy with its interval
at ``level`` (0.95 Bonferroni-corrected over ``family``, the field's comparisons), the
p-value (compared with ``1 - level``), the paired items (0 for the best arm) and the
verdict (empty for the best arm). Tables stored before this release had ``p_holm`` in
place of ``level`` and the verdicts ``higher``/``lower``/``no clear difference``."""


def _family(values: Mapping[str, np.ndarray], arms: list[str],
            slices: list[tuple[str, np.ndarray]]) -> int:
    """Pairs of arms, in every value, with at least ``MIN_ITEMS`` items both scored."""
    size = 0
    for _, at in slices:
        for i, a in enumerate(arms):
            for b in arms[i + 1:]:
                both = ~np.isnan(values[a][at]) & ~np.isnan(values[b][at])
                size += int(both.sum()) >= MIN_ITEMS
    return size


def slice_comparisons(table: pd.DataFrame, groups: Mapping[str, list[tuple[str, np.ndarray]]],
                      best: str | None) -> pd.DataFrame:
    """Each arm against ``best`` on every slice: one row per (field, value, arm).

    ``table`` is :func:`hr_core.stats.accuracy.item_accuracies` (items by arms, NaN where an
    arm scored no run of the item); ``groups`` each field's slices as positions in
    ``table``'s rows. Columns ``slice, value, arm`` and :data:`COMPARE_COLUMNS`.

    Example:
        >>> table = pd.DataFrame({"a": [1.0] * 8, "b": [0.0] * 8})
        >>> rows = slice_comparisons(table, {"k": [("x", np.arange(8)),
        ...                                         ("y", np.arange(1))]}, "a")
        >>> rows[rows.arm == "b"][["value", "diff", "verdict"]].values.tolist()
        [['x', -1.0, 'worse'], ['y', -1.0, 'too few items']]
    """
    arms = [str(a) for a in table.columns]
    values = {arm: table[arm].to_numpy(dtype="float64") for arm in arms}
    rows = []
    for field, slices in groups.items():
        family = _family(values, arms, slices)
        for value, at in slices:
            for arm in arms:
                row: dict[str, Any] = {"slice": field, "value": value, "arm": arm,
                                       "vs": best or "", "paired": 0, "verdict": "",
                                       "family": family}
                if best is not None and arm != best and best in values:
                    x, y = values[arm][at], values[best][at]
                    common = ~np.isnan(x) & ~np.isnan(y)
                    got = compare_paired(x[common], y[common], family_size=max(1, family))
                    row.update(diff=got.estimate, diff_low=got.low, diff_high=got.high,
                               p_value=got.p_value, level=got.level, paired=got.n_items,
                               verdict=got.decision)
                rows.append(row)
    frame = pd.DataFrame(rows, columns=["slice", "value", "arm", *COMPARE_COLUMNS])
    return frame.astype({"diff": "float64", "diff_low": "float64", "diff_high": "float64",
                         "p_value": "float64", "level": "float64",
                         "paired": "int64", "family": "int64"})


def _missing(value: object) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def comparison_text(row: Mapping[Any, Any]) -> str:
    """One row's comparison in words (plain text: the report, report.md and ``hr summary``
    escape it): ``-12.0 points (-20.1 to -3.9), p 0.003: worse``; "best" for the arm
    compared with, the verdict alone when there is no difference to show. A row stored
    before this release reads in today's words (``lower`` is ``worse``).

    Example:
        >>> comparison_text({"arm": "b", "vs": "a", "diff": -0.12, "diff_low": -0.2,
        ...     "diff_high": -0.04, "p_value": 0.003, "verdict": "worse"})
        '-12.0 points (-20.0 to -4.0), p 0.003: worse'
    """
    verdict = row.get("verdict")
    if _missing(verdict) or not verdict:
        return "best" if row.get("arm") == row.get("vs") and row.get("vs") else ""
    verdict = decision_from_legacy(str(verdict))
    diff = row.get("diff")
    if _missing(diff):
        return verdict
    low, high, p = row.get("diff_low"), row.get("diff_high"), row.get("p_value")

    def points(value: object) -> str:
        return "–" if _missing(value) else f"{float(value) * 100:+.1f}"  # type: ignore[arg-type]

    p_text = "" if _missing(p) else f", p {float(p):.2g}"  # type: ignore[arg-type]
    return f"{points(diff)} points ({points(low)} to {points(high)}){p_text}: {verdict}"


def correction_text(rows: pd.DataFrame) -> str:
    """The correction a field's comparisons used, in words (beside each slice table).

    Example:
        >>> correction_text(pd.DataFrame({"vs": ["a"], "family": [12]}))[-59:]
        'each interval at level 99.58%, family-wise error at most 5%'
    """
    if "family" not in rows.columns or rows.empty:
        return ""
    best = str(rows["vs"].iloc[0] or "")
    family = int(pd.to_numeric(rows["family"], errors="coerce").fillna(0).max())
    against = f"each arm against {best} (the best arm) on the items both scored in the slice"
    if family == 0:
        return f"{against}; no slice has enough paired items for a verdict"
    if family == 1:
        return f"{against}; one comparison: no correction needed"
    return (f"{against}; paired t with continuity correction, Bonferroni over the {family} "
            f"comparisons of this field (every pair of arms in every value with at least "
            f"{MIN_ITEMS} paired items): each interval at level {1 - 0.05 / family:.2%}, "
            "family-wise error at most 5%")
