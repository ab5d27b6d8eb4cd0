"""Honest error bars: exact and clustered intervals, paired differences, kappa.

Pure functions of counts and per-item values; no pandas needed. Every method
and its reference is described in ``docs/statistics.md``:

- one proportion over items (one run each): Clopper-Pearson's exact interval;
- a mean of per-item proportions (several runs, ties counted half): Korn and
  Graubard's interval (Clopper-Pearson on the effective sample size, item-clustered);
- a paired difference: Student's t interval over items (exact McNemar test when
  every value is 0 or 1), with a distribution-free bound when the items leave no
  spread, and no verdict below :data:`MIN_ITEMS` items.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from typing import Final, Literal, NamedTuple

import numpy as np

from hr_core.stats.distributions import beta_ppf, betainc, check_level, t_for, t_two_sided_p, z_for

__all__ = [
    "MIN_ITEMS",
    "TOO_FEW_ITEMS",
    "Interval",
    "PairedDifference",
    "accuracy_interval",
    "clopper_pearson",
    "clustered_mean_ci",
    "cohen_kappa",
    "effective_size_interval",
    "paired_difference",
    "pooled_share_ci",
    "wilson_interval",
    "win_rate",
]

_NAN = float("nan")
_TINY = sys.float_info.min

MIN_ITEMS = 6
"""The fewest paired items that can support a verdict: with fewer, even every item
going one way has an exact sign-test p-value of at least ``2 ** (1 - 5) = 0.0625``."""

TOO_FEW_ITEMS: Final = "too few items to tell"
"""What summaries and reports say instead of a verdict below :data:`MIN_ITEMS` items."""

Verdict = Literal["higher", "lower", "no clear difference", "too few items to tell"]
"""A paired difference's verdict on ``a - b``: ``higher`` (CI above 0 and p below
``1 - level``), ``lower`` (the mirror image), ``no clear difference``, or
:data:`TOO_FEW_ITEMS` (fewer than :data:`MIN_ITEMS` items)."""


class Interval(NamedTuple):
    """An estimate with the low and high ends of its confidence interval."""

    estimate: float
    low: float
    high: float


class PairedDifference(NamedTuple):
    """``mean(a - b)`` over paired items, with CI, a two-sided p-value and a verdict.

    ``Benchmark.compare`` returns one filled by :func:`hr_core.stats.compare_paired`
    (its ``verdict`` in the one vocabulary, ``method`` named); :func:`paired_difference`
    fills it with the older verdicts of :data:`Verdict`."""

    diff: float
    ci_low: float
    ci_high: float
    p_value: float
    n_items: int
    verdict: str = TOO_FEW_ITEMS
    method: str = ""


# --- proportions ---

def clopper_pearson(successes: float, n: float, level: float = 0.95) -> Interval:
    """Clopper-Pearson's exact interval for a proportion; NaN when ``n == 0``.

    Never zero-width: ``0`` of ``n`` gives ``[0, 1 - (alpha/2) ** (1/n)]``. Coverage
    is at least ``level`` for every true proportion. ``successes`` and ``n`` may be
    fractional (an effective sample size, see :func:`clustered_mean_ci`).

    Example:
        >>> [round(x, 3) for x in clopper_pearson(10, 10)]
        [1.0, 0.692, 1.0]
    """
    check_level(level)
    if n <= 0:
        return Interval(_NAN, _NAN, _NAN)
    x = min(max(float(successes), 0.0), float(n))
    alpha = 1 - level
    low = 0.0 if x <= 0 else beta_ppf(alpha / 2, x, n - x + 1)
    high = 1.0 if x >= n else beta_ppf(1 - alpha / 2, x + 1, n - x)
    return Interval(x / n, low, high)


def wilson_interval(successes: float, n: int, level: float = 0.95) -> Interval:
    """Wilson score interval for a proportion; NaN when ``n == 0``.

    Kept for reference and large samples; hr's figures use :func:`clopper_pearson`
    (Wilson's coverage dips to ~90% near 0 and 1 with few items).

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


def clustered_mean_ci(
    item_means: Sequence[float] | np.ndarray, level: float = 0.95, trials: float | None = None
) -> Interval:
    """Mean of per-item proportions with Korn and Graubard's item-clustered interval.

    Runs of one item are not independent, so the item is the unit: the variance
    of the mean comes from the spread of the item means, turned into an effective
    sample size ``n_eff = p(1 - p) / var`` (scaled by ``(z / t_{n-1})^2`` for the
    few-items case and at most ``trials``, the number of runs behind the means),
    and the interval is Clopper-Pearson's for ``p * n_eff`` of ``n_eff``. At 0 or 1,
    or when every item has the same mean, ``n_eff`` is the number of items: the
    interval is never zero-width. Values in [0, 1]; NaN values are left out.

    Example:
        >>> [round(x, 3) for x in clustered_mean_ci([1.0, 1.0, 1.0, 1.0])]
        [1.0, 0.398, 1.0]
    """
    kept = np.asarray(item_means, dtype=np.float64).ravel()
    if np.isnan(kept.sum()):  # a NaN among them (else no copy)
        kept = kept[~np.isnan(kept)]
    n = len(kept)
    if n == 0:
        return Interval(_NAN, _NAN, _NAN)
    # the values added left to right (the float Python 3.11's sum(list) gives, which hr's
    # figures were made with; the same on every Python): cumsum adds in order, unlike
    # np.sum's pairwise sum, and makes no Python float per value; one buffer for both sums
    work = np.cumsum(kept)
    mean = float(work[-1]) / n
    cap = float(n if trials is None else max(trials, n))
    if n > 1:
        np.subtract(kept, mean, out=work)
        np.square(work, out=work)  # (kept - mean) ** 2
        var = float(np.cumsum(work, out=work)[-1]) / (n - 1) / n
    else:
        var = 0.0
    return effective_size_interval(mean, var, n, cap, level)


def effective_size_interval(mean: float, variance: float, n: int, cap: float,
                            level: float = 0.95) -> Interval:
    """Korn and Graubard's interval for a share ``mean`` whose estimator has variance
    ``variance`` from ``n`` units (items): Clopper-Pearson's for ``mean * n_eff`` of
    ``n_eff = mean(1 - mean) / variance * (z / t_{n-1})^2`` (at most ``cap``); ``n_eff``
    is ``n`` when the variance is 0 or the mean is 0 or 1 (never zero-width).

    Example:
        >>> [round(x, 3) for x in effective_size_interval(0.5, 0.25 / 10, 10, 10)]
        [0.5, 0.148, 0.852]
    """
    if variance <= 0 or mean <= 0 or mean >= 1 or n < 2:
        n_eff = float(n)
    else:
        n_eff = mean * (1 - mean) / variance * (z_for(level) / t_for(level, n - 1)) ** 2
        n_eff = min(n_eff, cap)
    # round so that equal inputs hit the quantile cache despite float noise
    _, low, high = clopper_pearson(round(mean * n_eff, 9), round(n_eff, 9), level)
    return Interval(mean, low, high)


def pooled_share_ci(successes: Sequence[float] | np.ndarray, totals: Sequence[int] | np.ndarray,
                    level: float = 0.95) -> Interval:
    """The pooled share ``sum(successes) / sum(totals)`` with an item-clustered interval
    centred on it (rows of one item are not independent).

    The ratio estimator's cluster variance (Cochran, *Sampling Techniques*, 3rd ed.,
    1977, eq. 6.13: ``sum((a_k - R m_k)^2) / (n (n - 1) mbar^2)`` over ``n`` items with
    ``a_k`` successes in ``m_k`` rows) gives an effective sample size as in
    :func:`clustered_mean_ci` (Korn and Graubard), and the interval is
    Clopper-Pearson's on it; with one row per item it is Clopper-Pearson's itself.
    The estimate is the pooled share, so the interval is around the figure reported.

    Example:
        >>> [round(x, 3) for x in pooled_share_ci([1, 1, 0], [1, 1, 1])]
        [0.667, 0.094, 0.992]
    """
    a_all = np.asarray(successes, dtype=np.float64).ravel()
    m_all = np.asarray(totals, dtype=np.int64).ravel()
    if len(a_all) != len(m_all):
        raise ValueError(f"successes and totals need equal lengths, got {len(a_all)} and "
                         f"{len(m_all)}")
    used = m_all > 0  # numpy per item, Python's own sums (the same figures)
    a_k, m_k = a_all[used], m_all[used]
    n = len(m_k)
    if not n:
        return Interval(_NAN, _NAN, _NAN)
    hits = _fsum(a_k)
    rows = int(m_k.sum())
    ratio = hits / rows
    if bool((m_k == 1).all()) and hits.is_integer():
        return clopper_pearson(hits, n, level)
    mbar = rows / n
    var = (_fsum((a_k - ratio * m_k) ** 2) / (n * (n - 1) * mbar * mbar)
           if n > 1 else 0.0)
    return effective_size_interval(ratio, var, n, float(rows), level)


def accuracy_interval(
    correct: Sequence[float] | np.ndarray, scored: Sequence[int] | np.ndarray,
    level: float = 0.95,
) -> Interval:
    """Accuracy over items (mean of each item's share of correct scored runs) with a CI.

    Clopper-Pearson when every item has one scored run and a whole success count;
    item-clustered (:func:`clustered_mean_ci`) otherwise. Items with no scored run
    are left out. Never zero-width with finitely many items.

    Example:
        >>> [round(x, 3) for x in accuracy_interval([3] * 10, [3] * 10)]
        [1.0, 0.692, 1.0]
    """
    hits = np.asarray(correct, dtype=np.float64).ravel()
    runs = np.asarray(scored, dtype=np.int64).ravel()
    if len(hits) != len(runs):
        raise ValueError(f"correct and scored need equal lengths, got {len(hits)} and "
                         f"{len(runs)}")
    keep = runs > 0  # vectorised: a Python loop per item was slow at 100k items
    hits, runs = hits[keep], runs[keep]
    if not len(runs):
        return Interval(_NAN, _NAN, _NAN)
    if bool((runs == 1).all()) and bool((hits == np.floor(hits)).all()):
        return clopper_pearson(float(hits.sum()), len(runs), level)  # whole counts: exact
    return clustered_mean_ci(hits / runs, level, trials=int(runs.sum()))


def win_rate(a_wins: int, b_wins: int, ties: int, level: float = 0.95) -> Interval:
    """Share of A's wins with ties counted as half, each judgement its own item.

    For several judgements per item use :func:`accuracy_interval` with per-item
    sums (``hr_core.judge.pairwise`` does).

    Example:
        >>> win_rate(6, 2, 2).estimate
        0.7
    """
    return accuracy_interval([1.0] * a_wins + [0.0] * b_wins + [0.5] * ties,
                             [1] * (a_wins + b_wins + ties), level)


# --- paired differences ---

def _sign_test_p(positive: int, negative: int) -> float:
    """Exact two-sided sign (McNemar) test: ``Binomial(positive + negative, 1/2)``.

    Summed exactly in integers up to 1000 discordant items; beyond, the tail
    ``P(X <= k)`` is ``I_{1/2}(m - k, k + 1)`` (to float precision, fast for any
    ``m``). Never 0.
    """
    m = positive + negative
    k = min(positive, negative)
    if m == 0 or 2 * k >= m:
        return 1.0
    if m <= 1000:
        tail = sum(math.comb(m, i) for i in range(k + 1))
        return max(min(1.0, 2 * tail / 2**m), _TINY)
    return max(min(1.0, 2 * betainc(float(m - k), float(k + 1), 0.5)), _TINY)


def no_spread_interval(value: float, n: int, level: float) -> tuple[float, float]:
    """Every item's difference equals ``value``: a distribution-free bound on the mean.

    The share of items at ``value`` is at least Clopper-Pearson's lower bound
    ``s = (alpha/2) ** (1/n)`` for ``n`` of ``n`` (in closed form); the rest lies
    anywhere in [-1, 1].
    """
    check_level(level)
    s = ((1 - level) / 2) ** (1 / n)
    return max(-1.0, value * s - (1 - s)), min(1.0, value * s + (1 - s))


def paired_difference(
    a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray, level: float = 0.95
) -> PairedDifference:
    """Paired difference ``mean(a_i - b_i)`` with a small-sample CI, p-value and verdict.

    ``a`` and ``b`` are per-item values in [0, 1] (accuracies) on the same items,
    in the same order. The CI is Student's t over items, clipped to [-1, 1]; when
    every item has the same difference it is the distribution-free bound of
    :func:`no_spread_interval` (never zero-width). The p-value is the exact
    McNemar (sign) test when every value is 0 or 1, Student's t otherwise (the
    exact sign test when the items have no spread); it is never 0 (values below
    the smallest float are reported as that bound). Below :data:`MIN_ITEMS` items
    the verdict is :data:`TOO_FEW_ITEMS`.

    Example:
        >>> got = paired_difference([1, 1], [0, 0])
        >>> round(got.ci_low, 3), got.ci_high, got.p_value, got.verdict
        (-0.684, 1.0, 0.5, 'too few items to tell')
    """
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    if len(x) != len(y):
        raise ValueError(f"paired values need equal lengths, got {len(x)} and {len(y)}")
    check_level(level)
    # vectorised (a 333k-item report took seconds in pure Python): sums are math.fsum's
    # correctly rounded ones and squares are products, so the result does not depend on
    # the items' order (tests/test_stats_vectorised.py checks it against the loop)
    diffs = x - y
    n = len(diffs)
    if n == 0:
        return PairedDifference(_NAN, _NAN, _NAN, _NAN, 0, TOO_FEW_ITEMS)
    mean = exact_sum(diffs) / n
    positive = int(np.count_nonzero(diffs > 0))
    negative = int(np.count_nonzero(diffs < 0))
    if n == 1:
        low, high = no_spread_interval(mean, 1, level)
        return PairedDifference(mean, low, high, _sign_test_p(positive, negative), 1,
                                TOO_FEW_ITEMS)
    centred = diffs - mean
    var = exact_sum(centred * centred) / (n - 1)
    binary = bool(np.all((x == 0.0) | (x == 1.0)) and np.all((y == 0.0) | (y == 1.0)))
    if var <= 0:
        low, high = no_spread_interval(mean, n, level)
        p = _sign_test_p(positive, negative)
    else:
        se = math.sqrt(var / n)
        half = t_for(level, n - 1) * se
        low, high = max(-1.0, mean - half), min(1.0, mean + half)
        p = (_sign_test_p(positive, negative) if binary
             else max(t_two_sided_p(mean / se, n - 1), _TINY))
    return PairedDifference(mean, low, high, p, n, _verdict(low, high, p, n, level))


def exact_sum(values: np.ndarray, counts: np.ndarray | None = None) -> float:
    """The correctly rounded sum (``math.fsum``'s) of ``values``, each counted ``counts``
    times when given (non-negative integers: the sum over items of which ``counts[i]`` have
    the value ``values[i]``, from the few distinct ones); a plain one when a value is not
    finite.

    With counts the sum is made exactly in integers (every float is an integer over a power
    of two) and rounded once by Python's integer division, correctly rounded as ``fsum``
    is, so the float is the one ``fsum`` gives over the items.

    Example:
        >>> exact_sum(np.array([0.1, 0.2]), np.array([3, 1])) == math.fsum([0.1] * 3 + [0.2])
        True
    """
    if counts is None:
        if np.isfinite(values).all():
            return _fsum(values)
        return float(sum(values.tolist()))
    used = np.asarray(counts, dtype=np.int64) > 0  # 0 x inf would be NaN
    kept, times = values[used].tolist(), np.asarray(counts, dtype=np.int64)[used].tolist()
    if not all(math.isfinite(v) for v in kept):
        return float(sum(v * c for v, c in zip(kept, times, strict=True)))
    ratios = [v.as_integer_ratio() for v in kept]  # denominators: powers of two
    shift = max((den.bit_length() - 1 for _, den in ratios), default=0)
    total = sum(c * (num << (shift - den.bit_length() + 1))
                for (num, den), c in zip(ratios, times, strict=True))
    return total / (1 << shift)


def _fsum(values: np.ndarray) -> float:
    """``math.fsum(values)``; whole numbers (counts of runs) whose magnitudes add up to
    less than 2**52 are added by numpy instead, exactly (every partial sum is a whole
    number a float holds), without a Python float per value."""
    if float(np.abs(values).sum()) < 2.0 ** 52 and bool((values == np.trunc(values)).all()):
        return float(values.sum()) + 0.0  # fsum's 0.0 for -0.0
    return math.fsum(values.tolist())


def _verdict(low: float, high: float, p: float, n: int, level: float) -> Verdict:
    if n < MIN_ITEMS:
        return TOO_FEW_ITEMS
    if p < 1 - level and low > 0:
        return "higher"
    if p < 1 - level and high < 0:
        return "lower"
    return "no clear difference"


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
