"""Honest error bars: Wilson intervals, item-clustered CIs, paired differences, kappa.

Pure functions of counts and per-item values; no pandas needed.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from statistics import NormalDist
from typing import NamedTuple

__all__ = [
    "Interval",
    "PairedDifference",
    "accuracy_interval",
    "clustered_mean_ci",
    "cohen_kappa",
    "normal_p_value",
    "paired_difference",
    "wilson_interval",
    "win_rate",
    "z_for",
]

_NAN = float("nan")


class Interval(NamedTuple):
    """An estimate with the low and high ends of its confidence interval."""

    estimate: float
    low: float
    high: float


class PairedDifference(NamedTuple):
    """``mean(a - b)`` over paired items, with CI and a two-sided p-value."""

    diff: float
    ci_low: float
    ci_high: float
    p_value: float
    n_items: int


def z_for(level: float = 0.95) -> float:
    """The two-sided normal quantile for a confidence level (1.959964 for 0.95)."""
    if not 0 < level < 1:
        raise ValueError(f"confidence level must be between 0 and 1, not {level!r}")
    return NormalDist().inv_cdf(0.5 + level / 2)


def wilson_interval(successes: float, n: int, level: float = 0.95) -> Interval:
    """Wilson score interval for a proportion; NaN when ``n == 0``.

    ``successes`` may be fractional (ties counted as half a win).

    Example:
        >>> [round(x, 3) for x in wilson_interval(8, 10)]
        [0.8, 0.49, 0.943]
    """
    if n <= 0:
        return Interval(_NAN, _NAN, _NAN)
    z = z_for(level)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(p * (1 - p) / n + z * z / (4 * n * n), 0.0)) / denom
    return Interval(p, max(0.0, centre - half), min(1.0, centre + half))


def clustered_mean_ci(item_means: Sequence[float], level: float = 0.95) -> Interval:
    """Mean of per-item values with a CLT interval over items (clustered by item).

    Used for accuracy when each item has several runs: runs of one item are not
    independent, so the item is the unit. Clipped to [0, 1].

    Example:
        >>> [round(x, 3) for x in clustered_mean_ci([1.0, 0.5, 0.0, 1.0])]
        [0.625, 0.156, 1.0]
    """
    values = [float(v) for v in item_means if not math.isnan(float(v))]
    n = len(values)
    if n == 0:
        return Interval(_NAN, _NAN, _NAN)
    mean = sum(values) / n
    if n == 1:
        return Interval(mean, _NAN, _NAN)
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    half = z_for(level) * math.sqrt(var / n)
    return Interval(mean, max(0.0, mean - half), min(1.0, mean + half))


def accuracy_interval(
    correct: Sequence[int], scored: Sequence[int], level: float = 0.95
) -> Interval:
    """Accuracy over items (mean of each item's share of correct scored runs) with a CI.

    Wilson when every item has at most one scored run; item-clustered otherwise.
    Items with no scored run are left out.

    Example:
        >>> [round(x, 3) for x in accuracy_interval([1, 0, 1], [1, 1, 1])]
        [0.667, 0.208, 0.939]
    """
    pairs = [(c, s) for c, s in zip(correct, scored, strict=True) if s > 0]
    if not pairs:
        return Interval(_NAN, _NAN, _NAN)
    if all(s == 1 for _, s in pairs):
        return wilson_interval(sum(c for c, _ in pairs), len(pairs), level)
    return clustered_mean_ci([c / s for c, s in pairs], level)


def normal_p_value(z_score: float) -> float:
    """Two-sided p-value of a standard normal statistic."""
    return math.erfc(abs(z_score) / math.sqrt(2))


def paired_difference(
    a: Sequence[float], b: Sequence[float], level: float = 0.95
) -> PairedDifference:
    """Paired difference ``mean(a_i - b_i)`` with a CLT interval and two-sided p-value.

    ``a`` and ``b`` are per-item values (accuracies) on the same items, in the
    same order.

    Example:
        >>> paired_difference([1, 1, 1, 0], [1, 0, 0, 0]).diff
        0.5
    """
    if len(a) != len(b):
        raise ValueError(f"paired values need equal lengths, got {len(a)} and {len(b)}")
    diffs = [float(x) - float(y) for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    if n == 0:
        return PairedDifference(_NAN, _NAN, _NAN, _NAN, 0)
    mean = sum(diffs) / n
    if n == 1:
        return PairedDifference(mean, _NAN, _NAN, _NAN, 1)
    var = sum((d - mean) ** 2 for d in diffs) / (n - 1)
    se = math.sqrt(var / n)
    if se == 0:
        return PairedDifference(mean, mean, mean, 1.0 if mean == 0 else 0.0, n)
    half = z_for(level) * se
    return PairedDifference(mean, mean - half, mean + half, normal_p_value(mean / se), n)


def cohen_kappa(pairs: Iterable[tuple[Hashable, Hashable]]) -> float:
    """Cohen's kappa between two raters over ``(rater_1, rater_2)`` label pairs.

    NaN when there are no pairs or chance agreement is 1 (one category only).

    Example:
        >>> round(cohen_kappa([("a", "a"), ("b", "b"), ("a", "b"), ("b", "b")]), 3)
        0.5
    """
    rows = list(pairs)
    n = len(rows)
    if n == 0:
        return _NAN
    observed = sum(1 for x, y in rows if x == y) / n
    first = Counter(x for x, _ in rows)
    second = Counter(y for _, y in rows)
    expected = sum(first[k] * second.get(k, 0) for k in first) / (n * n)
    if expected >= 1:
        return _NAN
    return (observed - expected) / (1 - expected)


def win_rate(a_wins: int, b_wins: int, ties: int, level: float = 0.95) -> Interval:
    """Share of A's wins with ties counted as half, with a Wilson interval.

    Example:
        >>> win_rate(6, 2, 2).estimate
        0.7
    """
    n = a_wins + b_wins + ties
    return wilson_interval(a_wins + ties / 2, n, level)
