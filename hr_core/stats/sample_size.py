"""How many items a paired comparison needs, and the smallest difference it can see.

For two arms scored on the same items, the paired difference ``d_i = a_i - b_i``
has mean ``delta`` and variance ``w^2 = q - delta^2``, where ``q = mean(d_i^2)``
is the discordance (with one run per item, the share of items the arms disagree
on, ``p10 + p01``: McNemar's cells). At two-sided level ``alpha`` and power
``1 - beta``, the normal approximation to the paired test (Connor, "Sample size
for testing differences in proportions for the paired-sample design",
Biometrics 43:207-211, 1987; Miller, "Adding Error Bars to Evals", 2024, sec. 4)
needs

    n = (z_{1-alpha/2} + z_{1-beta})^2 * w^2 / delta^2

items, and with ``n`` items the smallest detectable difference solves the same
equation for ``delta``: ``delta = (z_a + z_b) sqrt(q / (n + (z_a + z_b)^2))``.
hr starts from these and steps to the **exact** power of the test it runs (the
exact McNemar test, :func:`paired_power`), which is lower at small ``n``: the
normal formula overstated it by up to 13.6 points at 50 items.
``bench/bench_sequential.py`` checks the power against a simulation of that test
from 50 to 2,000 items.

Example:
    >>> plan_sample_size(0.05, discordance=0.25)  # the normal formula says 778
    817
    >>> round(detectable_difference(817, discordance=0.25), 3)
    0.05
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

__all__ = ["detectable_difference", "plan_sample_size"]
# paired_power, plan_pair and PairPlan serve hr plan and bench/ (public here, not re-exported)

_NORMAL = NormalDist()
_EXACT_UP_TO = 1000
"""Above this many items the normal approximation replaces the exact power (its error
there is under 3 points, and the exact sum costs O(n^2))."""


def _z(level: float, power: float) -> float:
    if not 0 < level < 1 or not 0 < power < 1:
        raise ValueError(f"level and power must be in (0, 1), not {level!r}, {power!r}")
    return _NORMAL.inv_cdf(1 - (1 - level) / 2) + _NORMAL.inv_cdf(power)


def _check(discordance: float, difference: float) -> None:
    if not 0 <= discordance <= 1:
        raise ValueError(f"discordance must be in [0, 1], not {discordance!r}")
    if difference * difference > discordance + 1e-12:
        raise ValueError(f"a difference of {difference!r} needs a discordance of at least "
                         f"{difference * difference!r}, not {discordance!r}")


def plan_sample_size(difference: float, discordance: float, power: float = 0.8,
                     level: float = 0.95) -> int:
    """Items needed to detect a paired difference of ``difference`` (e.g. 0.05 = 5 points).

    Args:
        difference: the true difference to detect, in accuracy (0-1), non-zero.
        discordance: ``mean((a_i - b_i)^2)``; with one run per item the share of
            items where exactly one arm is right (``p10 + p01``).
        power, level: the chance of detecting it, and the test's confidence level.
    """
    if difference == 0:
        raise ValueError("a difference of 0 cannot be detected: give the smallest one that matters")
    _check(discordance, difference)
    variance = discordance - difference * difference
    normal = max(2, math.ceil(_z(level, power) ** 2 * variance / difference ** 2))
    if normal > _EXACT_UP_TO:
        return normal
    # the exact test is more conservative than the normal formula: step up to its power
    target, d = power, abs(difference)
    low, high = 1, normal
    while paired_power(high, d, discordance, level) < target:
        low, high = high, high * 2
        if high > 20000:
            return high
    while high - low > 1:
        middle = (low + high) // 2
        if paired_power(middle, d, discordance, level) >= target:
            high = middle
        else:
            low = middle
    return high


def detectable_difference(n_items: int, discordance: float, power: float = 0.8,
                          level: float = 0.95) -> float:
    """The smallest paired difference ``n_items`` items detect with this power (the exact
    test's, found by bisection from the normal formula's; the normal formula above
    1,000 items)."""
    if n_items < 1:
        return math.nan
    _check(discordance, 0.0)
    z = _z(level, power)
    normal = z * math.sqrt(discordance / (n_items + z * z))
    if n_items > _EXACT_UP_TO or discordance <= 0:
        return normal
    low, high = normal, min(math.sqrt(discordance), 2 * normal)
    if paired_power(n_items, high, discordance, level) < power:
        return high  # not even this: as good as undetectable with these items
    if paired_power(n_items, low, discordance, level) >= power:
        return low
    for _ in range(9):  # to ~0.1 point: a display figure
        middle = (low + high) / 2
        if paired_power(n_items, middle, discordance, level) >= power:
            high = middle
        else:
            low = middle
    return high


def paired_power(n_items: int, difference: float, discordance: float,
                 level: float = 0.95) -> float:
    """The power of the test hr runs on one run per item, the exact McNemar (sign) test,
    to call ``a`` higher than ``b`` when ``a - b`` is ``difference`` (exact).

    The discordant items number ``m ~ Binomial(n, q)``; of them, those where ``a`` was
    right are ``Binomial(m, (q + d) / (2 q))``; the test rejects when that count reaches
    the smallest ``k`` whose two-sided exact p-value is below ``1 - level``. Above
    1,000 items the normal approximation is used (within 3 points of the exact power there).
    """
    _check(discordance, difference)
    if n_items < 1 or discordance <= 0:
        return 0.0
    if n_items > _EXACT_UP_TO:
        sd = math.sqrt(max(discordance - difference * difference, 1e-12))
        return _NORMAL.cdf(difference * math.sqrt(n_items) / sd
                           - _NORMAL.inv_cdf(1 - (1 - level) / 2))
    favour = min(1.0, max(0.0, (discordance + difference) / (2 * discordance)))
    discordant = _binomial_pmf(n_items, discordance)
    m = np.nonzero(discordant >= 1e-15)[0]  # the discordant counts that weigh at all
    size = min(_EXACT_UP_TO, 1 << int(m.max()).bit_length()) if m.size else 1
    k = _critical_counts(1 - level, size)[m]  # the test rejects when a's wins reach k
    m, k = m[(m > 0) & (k <= m)], k[(m > 0) & (k <= m)]
    if m.size == 0 or favour <= 0:
        return 0.0
    if favour >= 1:
        return min(1.0, float(discordant[m].sum()))
    # P(Binomial(m, favour) >= k) for every such m at once: a (len(m), max(m)+1) table
    wins = np.arange(int(m.max()) + 1)[None, :]
    rows, first = m[:, None], k[:, None]
    table = _log_factorials(n_items)
    logs = (table[rows] - table[wins] - table[np.clip(rows - wins, 0, None)]
            + wins * math.log(favour) + (rows - wins) * math.log1p(-favour))
    tails = np.where((wins >= first) & (wins <= rows), np.exp(logs), 0.0).sum(axis=1)
    return min(1.0, float((discordant[m] * tails).sum()))


@lru_cache(maxsize=32)
def _critical_counts(alpha: float, top: int) -> np.ndarray:
    """For ``m = 0..top`` discordant items, the smallest count ``k > m / 2`` of one arm's
    wins whose two-sided exact sign-test p-value is below ``alpha`` (``m + 1`` when none
    is): it depends on ``m`` and ``alpha`` only, so it is computed once per process."""
    table = _log_factorials(top)
    m, k = np.arange(top + 1)[:, None], np.arange(top + 1)[None, :]
    half = np.where(k <= m, np.exp(table[m] - table[k] - table[np.clip(m - k, 0, None)]
                                   - m * math.log(2.0)), 0.0)  # P(X = k), X ~ Bin(m, 1/2)
    upper = np.cumsum(half[:, ::-1], axis=1)[:, ::-1]  # P(X >= k)
    rejects = (np.minimum(1.0, 2 * upper) < alpha) & (2 * k > m) & (k <= m)
    counts = np.where(rejects.any(axis=1), rejects.argmax(axis=1), np.arange(top + 1) + 1)
    counts.setflags(write=False)
    return counts


def _binomial_pmf(n: int, p: float) -> np.ndarray:
    """``P(X = k)`` for ``k = 0..n`` of ``Binomial(n, p)``, from log-factorials (no SciPy)."""
    if p <= 0 or p >= 1:
        out = np.zeros(n + 1)
        out[0 if p <= 0 else n] = 1.0
        return out
    table = _log_factorials(n)
    k = np.arange(n + 1, dtype=np.float64)
    logs = (table[n] - table[: n + 1] - table[n::-1]
            + k * math.log(p) + (n - k) * math.log1p(-p))
    return np.exp(logs)


def _log_factorials(n: int) -> np.ndarray:
    """``log(k!)`` for ``k = 0..n`` (cached: the planner asks for many ``n``)."""
    global _LOG_FACTORIALS
    if len(_LOG_FACTORIALS) <= n:
        size = max(n + 1, 2 * len(_LOG_FACTORIALS))
        _LOG_FACTORIALS = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, size)))))
    return _LOG_FACTORIALS


_LOG_FACTORIALS = np.zeros(1)


class PairPlan(NamedTuple):
    """A pair of arms' planning figures from their per-item accuracies."""

    arm: str
    baseline: str
    n_items: int
    difference: float
    discordance: float
    detectable: float
    items_needed: int | None


def plan_pair(arm: str, baseline: str, a: np.ndarray, b: np.ndarray, target: float,
              power: float = 0.8, level: float = 0.95) -> PairPlan:
    """Planning figures of ``arm - baseline`` from per-item accuracies on common items:
    the observed difference and discordance, the smallest difference these items
    detect, and the items needed for a difference of ``target``."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    n = int(d.size)
    if n == 0:
        return PairPlan(arm, baseline, 0, math.nan, math.nan, math.nan, None)
    q = float(np.mean(d * d))
    # a discordance of 0 (the arms never disagree) says nothing: plan with one disagreement
    q_plan = max(q, target * target + 1.0 / n)
    needed = plan_sample_size(target, min(1.0, q_plan), power, level)
    return PairPlan(arm, baseline, n, float(d.mean()), q,
                    detectable_difference(n, q_plan, power, level), needed)
