"""The one comparison: "is B different from A?" answered by one method.

hr asks this question in the report's verdict, ``hr diff``, the nightly regression
check, accuracy by slice and ``Benchmark.compare``; every one of them calls
:func:`compare_paired` (per-item values) or :func:`compare_estimate` (an estimate
with its standard error), so that no page shows an interval on one side of zero
beside a decision on the other.

The method (``docs/statistics.md``, "One comparison"):

- per-item differences ``d_i = now_i - then_i`` of values in [0, 1] (item accuracies,
  shares over runs); the item is the unit (runs of one item are one cluster);
- the interval is Student's t over items with a continuity correction of ``1/n`` in
  the mean (as Edwards' correction to McNemar's test: the mean of ``n`` discrete
  differences moves in steps of ``1/n``): ``mean ± (t_{1-α/2, n-1} sd/√n + 1/n)``,
  clipped to [-1, 1]. When the items leave no spread (every ``d_i`` equal to ``v``) it
  is the distribution-free bound ``[v s - (1 - s), v s + (1 - s)]`` with
  ``s = (α/2)^(1/n)``, Clopper-Pearson's lower bound for ``n`` of ``n``;
- the p-value is that interval's inversion (the smallest ``α`` at which it excludes
  0): ``2 T_{n-1}.sf((|mean| - 1/n) / se)`` (1 when ``|mean| <= 1/n``), and
  ``2 (1 / (1 + |v|))^n`` without spread; never below the smallest float. So the
  interval excludes 0 exactly when ``p < α``, and the decision is that exclusion;
- a family of ``m`` comparisons is corrected by Bonferroni, here and nowhere else:
  the interval is made at level ``1 - α/m`` and ``p`` is compared with ``α/m``
  (consistent by construction). The stop rule (:mod:`hr_core.stats.sequential`) already
  spends ``α`` by Bonferroni over its arms; a stop-rule run's verdict is the
  sequence's decision (``undecided`` when it did not stop), not corrected twice here.

Below :data:`~hr_core.stats.intervals.MIN_ITEMS` paired items the decision is
``too few items``; with an ``equivalence_margin`` an interval inside
``(-margin, margin)`` that covers 0 is ``equivalent``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Final, Literal, NamedTuple

import numpy as np

from hr_core.stats.distributions import betainc, check_level, t_for
from hr_core.stats.intervals import MIN_ITEMS, exact_sum, no_spread_interval

__all__ = [
    "DECISIONS",
    "LEGACY_VERDICTS",
    "Comparison",
    "Decision",
    "compare_estimate",
    "compare_paired",
    "compare_paired_counts",
    "decision_from_legacy",
]

_TINY = sys.float_info.min
_NAN = float("nan")

Decision = Literal["better", "worse", "no detectable change", "equivalent", "too few items",
                   "undecided"]
"""The one verdict vocabulary, on ``now - then`` (or ``arm - reference``)."""

DECISIONS: Final[tuple[Decision, ...]] = (
    "better", "worse", "no detectable change", "equivalent", "too few items", "undecided")
"""Every decision, in the order pages list them."""

LEGACY_VERDICTS: Final[dict[str, Decision]] = {
    "higher": "better",
    "lower": "worse",
    "no clear difference": "no detectable change",
    "too few items to tell": "too few items",
}
"""Verdicts written before the one vocabulary (``Benchmark.compare`` and stored
summaries up to this release), mapped to today's; kept readable for one release."""


class Comparison(NamedTuple):
    """One comparison's figures: all from one method, at one (corrected) level.

    ``low``/``high`` are the interval at ``level`` (already corrected for the family);
    ``p_value`` is compared with ``1 - level``; ``decision`` is ``better`` exactly when
    ``low > 0`` and ``worse`` exactly when ``high < 0`` (``n_items >= MIN_ITEMS``).
    """

    estimate: float
    low: float
    high: float
    p_value: float
    n_items: int
    decision: Decision
    level: float
    family_size: int
    method: str


def _method(name: str, family_size: int) -> str:
    return name if family_size == 1 else f"{name}, Bonferroni over {family_size}"


def _corrected_level(level: float, family_size: int) -> float:
    check_level(level)
    if family_size < 1:
        raise ValueError(f"family_size must be at least 1, not {family_size!r}")
    return 1 - (1 - level) / family_size


def compare_estimate(
    diff: float,
    se: float,
    n: int,
    *,
    level: float = 0.95,
    family_size: int = 1,
    equivalence_margin: float | None = None,
    continuity: float = 0.0,
    df: float | None = None,
    bounds: tuple[float, float] = (-math.inf, math.inf),
) -> Comparison:
    """An estimated difference with its standard error: interval, p-value and decision.

    The interval is ``diff ± (t_{df} se + continuity)`` (``df`` defaults to ``n - 1``)
    at ``level`` corrected by Bonferroni over ``family_size``, clipped to ``bounds``;
    the p-value is its inversion. :func:`compare_paired` calls this with
    ``continuity = 1/n``; the corrected judge estimates pass their own ``se``.

    Example:
        >>> got = compare_estimate(-0.2, 0.4104 / 20 ** 0.5, 20, continuity=1 / 20)
        >>> round(got.low, 3), round(got.high, 3), round(got.p_value, 2), got.decision
        (-0.442, 0.042, 0.12, 'no detectable change')
    """
    corrected = _corrected_level(level, family_size)
    method = _method("t interval" if continuity == 0 else
                     "paired t with continuity correction", family_size)
    if n < 1 or math.isnan(diff) or math.isnan(se):
        return Comparison(_NAN, _NAN, _NAN, _NAN, max(n, 0), "too few items", corrected,
                          family_size, method)
    dof = float(n - 1 if df is None else df)
    if se <= 0 or dof <= 0:
        raise ValueError(f"a t interval needs se > 0 and df > 0, got se={se!r}, df={dof!r}")
    half = t_for(corrected, dof) * se + continuity
    low, high = max(bounds[0], diff - half), min(bounds[1], diff + half)
    excess = abs(diff) - continuity
    p = 1.0 if excess <= 0 else max(betainc(dof / 2, 0.5, dof / (dof + (excess / se) ** 2)),
                                    _TINY)
    return _finish(diff, low, high, p, n, corrected, family_size, method, equivalence_margin)


def compare_paired(
    now: Sequence[float] | np.ndarray,
    then: Sequence[float] | np.ndarray,
    *,
    level: float = 0.95,
    family_size: int = 1,
    equivalence_margin: float | None = None,
) -> Comparison:
    """Compare paired per-item values ``now`` and ``then`` (in [0, 1], same items, same order).

    The paired t interval with a ``1/n`` continuity correction, its inverted p-value
    and the decision, Bonferroni-corrected over ``family_size`` comparisons (see the
    module's docstring). NaN pairs are an error: leave unscored items out first.

    Example:
        >>> got = compare_paired([0] * 4 + [1] * 16, [1] * 20)
        >>> round(got.low, 3), round(got.high, 3), round(got.p_value, 2), got.decision
        (-0.442, 0.042, 0.12, 'no detectable change')
    """
    x = np.asarray(now, dtype=np.float64).ravel()
    y = np.asarray(then, dtype=np.float64).ravel()
    if len(x) != len(y):
        raise ValueError(f"paired values need equal lengths, got {len(x)} and {len(y)}")
    return _compare_differences(x - y, None, level, family_size, equivalence_margin)


def compare_paired_counts(
    differences: Sequence[float] | np.ndarray,
    counts: Sequence[int] | np.ndarray,
    *,
    level: float = 0.95,
    family_size: int = 1,
    equivalence_margin: float | None = None,
) -> Comparison:
    """:func:`compare_paired` of items whose differences ``now - then`` take few values:
    ``counts[i]`` items have the difference ``differences[i]`` (the same float ``now_i -
    then_i`` gives). The same comparison, bit for bit, as :func:`compare_paired` over the
    items (its sums are exact, so the items' order never mattered), without a value per
    item (a 100k-item figure whose values are a few ranks' reciprocals).

    Example:
        >>> a = compare_paired_counts([-1.0, 0.0], [4, 16])
        >>> a == compare_paired([0] * 4 + [1] * 16, [1] * 20)
        True
    """
    values = np.asarray(differences, dtype=np.float64).ravel()
    times = np.asarray(counts, dtype=np.int64).ravel()
    if len(values) != len(times):
        raise ValueError(f"differences and counts need equal lengths, got {len(values)} and "
                         f"{len(times)}")
    if (times < 0).any():
        raise ValueError("counts must not be negative")
    used = times > 0
    return _compare_differences(values[used], times[used], level, family_size,
                                equivalence_margin)


def _compare_differences(diffs: np.ndarray, counts: np.ndarray | None, level: float,
                         family_size: int, equivalence_margin: float | None) -> Comparison:
    """The comparison of items with differences ``diffs`` (``counts[i]`` items each when
    given, else one)."""
    corrected = _corrected_level(level, family_size)
    n = len(diffs) if counts is None else int(counts.sum())
    if n == 0:
        return Comparison(_NAN, _NAN, _NAN, _NAN, 0, "too few items", corrected, family_size,
                          _method("paired t with continuity correction", family_size))
    mean = exact_sum(diffs, counts) / n
    centred = diffs - mean
    var = exact_sum(centred * centred, counts) / (n - 1) if n > 1 else 0.0
    se = math.sqrt(var / n)
    if se > 0:
        return compare_estimate(mean, se, n, level=level,
                                family_size=family_size,
                                equivalence_margin=equivalence_margin,
                                continuity=1.0 / n, bounds=(-1.0, 1.0))
    # no spread: every item's difference is the mean (the distribution-free bound)
    low, high = no_spread_interval(mean, n, corrected)
    p = max(min(1.0, 2 * (1 / (1 + abs(mean))) ** n), _TINY)
    method = _method("paired, distribution-free bound (no spread)", family_size)
    return _finish(mean, low, high, p, n, corrected, family_size, method, equivalence_margin)


def _finish(estimate: float, low: float, high: float, p: float, n: int, corrected: float,
            family_size: int, method: str, margin: float | None) -> Comparison:
    """The decision is the interval's exclusion of 0; ``p`` is held on the same side of
    ``alpha`` (the quantile and the tail are computed separately, so at the boundary
    they can disagree in the last digits)."""
    alpha = 1 - corrected
    excludes = low > 0 or high < 0
    if excludes and p >= alpha:
        p = math.nextafter(alpha, 0.0)
    elif not excludes and p < alpha:
        p = alpha
    decision: Decision
    if n < MIN_ITEMS:
        decision = "too few items"
    elif low > 0:
        decision = "better"
    elif high < 0:
        decision = "worse"
    elif margin is not None and -margin < low and high < margin:
        decision = "equivalent"
    else:
        decision = "no detectable change"
    return Comparison(estimate, low, high, p, n, decision, corrected, family_size, method)


def decision_from_legacy(verdict: str) -> str:
    """Today's decision for a verdict stored before the one vocabulary (else unchanged).

    Example:
        >>> decision_from_legacy("higher"), decision_from_legacy("worse")
        ('better', 'worse')
    """
    return LEGACY_VERDICTS.get(verdict, verdict)
