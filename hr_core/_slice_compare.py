"""The paired comparison per slice: each arm against the run's best arm on a slice's items.

The same mechanism as the run's verdict (:mod:`hr_core.report.verdict`): per-item
accuracy over the runs made (:func:`hr_core.accuracy.item_accuracies`), the paired
difference over the items both arms scored (:func:`hr_core.stats.paired_difference`,
what ``Benchmark.compare`` returns), and Holm's correction
(:func:`hr_core.multiplicity.holm`) over every pair of arms, here in every value of
one slice field: a field's table makes one claim per cell, so its family is
``pairs x values`` (family-wise error at most 5% per field). A slice where a pair has
fewer than ``MIN_ITEMS`` paired items gets no verdict ("too few items to tell") and its
p-value is not in the family (the count decides that, not the outcome).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from hr_core.multiplicity import holm
from hr_core.stats import MIN_ITEMS, TOO_FEW_ITEMS, paired_difference

__all__ = ["COMPARE_COLUMNS", "comparison_text", "corrected_verdict", "correction_text",
           "slice_comparisons"]

COMPARE_COLUMNS = ("vs", "diff", "diff_low", "diff_high", "p_value", "p_holm", "paired",
                   "family", "verdict")
"""The columns the comparison adds to each (field, value, arm) row of the slice table:
the arm it is compared with (the run's best), ``arm - vs`` in accuracy with its 95%
interval, the raw and Holm-corrected p-values, the paired items (0 for the best arm),
the size of the Holm family (the field's comparisons) and the corrected verdict (empty
for the best arm)."""


def corrected_verdict(verdict: str, n_items: int, p_holm: float, alpha: float = 0.05) -> str:
    """A paired verdict (:func:`hr_core.stats.paired_difference`) with the Holm-corrected
    p-value in place of the raw one: "higher"/"lower" only when that is below ``alpha``.

    Example:
        >>> corrected_verdict("lower", 40, 0.2), corrected_verdict("lower", 40, 0.01)
        ('no clear difference', 'lower')
    """
    if n_items < MIN_ITEMS or verdict == TOO_FEW_ITEMS:
        return TOO_FEW_ITEMS
    if verdict in ("higher", "lower") and p_holm < alpha:
        return verdict
    return "no clear difference"


def slice_comparisons(table: pd.DataFrame, groups: Mapping[str, list[tuple[str, np.ndarray]]],
                      best: str | None) -> pd.DataFrame:
    """Each arm against ``best`` on every slice: one row per (field, value, arm).

    ``table`` is :func:`hr_core.accuracy.item_accuracies` (items by arms, NaN where an
    arm scored no run of the item); ``groups`` each field's slices as positions in
    ``table``'s rows. Columns ``slice, value, arm`` and :data:`COMPARE_COLUMNS`.

    Example:
        >>> table = pd.DataFrame({"a": [1.0] * 8, "b": [0.0] * 8})
        >>> rows = slice_comparisons(table, {"k": [("x", np.arange(8)),
        ...                                         ("y", np.arange(1))]}, "a")
        >>> rows[rows.arm == "b"][["value", "diff", "verdict"]].values.tolist()
        [['x', -1.0, 'lower'], ['y', -1.0, 'too few items to tell']]
    """
    arms = [str(a) for a in table.columns]
    values = {arm: table[arm].to_numpy(dtype="float64") for arm in arms}
    rows = []
    for field, slices in groups.items():
        found: list[dict[str, Any]] = []
        family: list[float] = []  # every pair of arms in every value of the field
        where: list[int | None] = []  # the family member that is a shown row's test
        for value, at in slices:
            tests = {}
            for i, a in enumerate(arms):
                for b in arms[i + 1:]:
                    x, y = values[a][at], values[b][at]
                    common = ~np.isnan(x) & ~np.isnan(y)
                    result = paired_difference(x[common], y[common])
                    if result.n_items >= MIN_ITEMS and not math.isnan(result.p_value):
                        family.append(result.p_value)
                        tests[(a, b)] = tests[(b, a)] = len(family) - 1
            for arm in arms:
                row: dict[str, Any] = {"slice": field, "value": value, "arm": arm,
                                          "vs": best or "", "paired": 0, "verdict": ""}
                if best is not None and arm != best and best in values:
                    x, y = values[arm][at], values[best][at]
                    common = ~np.isnan(x) & ~np.isnan(y)
                    got = paired_difference(x[common], y[common])
                    row.update(diff=got.diff, diff_low=got.ci_low, diff_high=got.ci_high,
                               p_value=got.p_value, paired=got.n_items, verdict=got.verdict)
                    where.append(tests.get((arm, best)))
                else:
                    where.append(None)
                found.append(row)
        adjusted = holm(family)
        for row, index in zip(found, where, strict=True):
            row["family"] = len(family)
            if row["verdict"]:
                p_holm = math.nan if index is None else adjusted[index]
                row["p_holm"] = p_holm
                row["verdict"] = corrected_verdict(str(row["verdict"]), int(row["paired"]),
                                                   p_holm)
        rows += found
    frame = pd.DataFrame(rows, columns=["slice", "value", "arm", *COMPARE_COLUMNS])
    return frame.astype({"diff": "float64", "diff_low": "float64", "diff_high": "float64",
                         "p_value": "float64", "p_holm": "float64",
                         "paired": "int64", "family": "int64"})


def _missing(value: object) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def comparison_text(row: Mapping[Any, Any]) -> str:
    """One row's comparison in words (plain text: the report, report.md and ``hr summary``
    escape it): ``-12.0 points (-20.1 to -3.9), p (Holm) 0.003: lower``; "best" for the
    arm compared with, the verdict alone when there is no difference to show.

    Example:
        >>> comparison_text({"arm": "b", "vs": "a", "diff": -0.12, "diff_low": -0.2,
        ...     "diff_high": -0.04, "p_holm": 0.003, "verdict": "lower"})
        '-12.0 points (-20.0 to -4.0), p (Holm) 0.003: lower'
    """
    verdict = row.get("verdict")
    if _missing(verdict) or not verdict:
        return "best" if row.get("arm") == row.get("vs") and row.get("vs") else ""
    diff = row.get("diff")
    if _missing(diff):
        return str(verdict)
    low, high, p = row.get("diff_low"), row.get("diff_high"), row.get("p_holm")

    def points(value: object) -> str:
        return "–" if _missing(value) else f"{float(value) * 100:+.1f}"  # type: ignore[arg-type]

    p_text = "" if _missing(p) else f", p (Holm) {float(p):.2g}"  # type: ignore[arg-type]
    return f"{points(diff)} points ({points(low)} to {points(high)}){p_text}: {verdict}"


def correction_text(rows: pd.DataFrame) -> str:
    """The correction a field's comparisons used, in words (beside each slice table).

    Example:
        >>> correction_text(pd.DataFrame({"vs": ["a"], "family": [12]}))[-65:]
        'value with at least 6 paired items; family-wise error at most 5%)'
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
    return (f"{against}; p-values Holm-corrected over the {family} comparisons of this field "
            f"(every pair of arms in every value with at least {MIN_ITEMS} paired items; "
            "family-wise error at most 5%)")
