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
``bench/bench_sequential.py`` checks the power against a simulation of the
test hr runs (exact McNemar) from 50 to 2,000 items.

Example:
    >>> plan_sample_size(0.05, discordance=0.25)
    778
    >>> round(detectable_difference(778, discordance=0.25), 4)
    0.05
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

__all__ = ["detectable_difference", "plan_sample_size"]
# paired_power, plan_pair and PairPlan serve hr plan and bench/ (public here, not re-exported)

_NORMAL = NormalDist()


def _z(level: float, power: float) -> float:
    if not 0 < level < 1 or not 0 < power < 1:
        raise ValueError(f"level and power must be in (0, 1), not {level!r}, {power!r}")
    return _NORMAL.inv_cdf(1 - (1 - level) / 2) + _NORMAL.inv_cdf(power)


def _check(discordance: float, difference: float) -> None:
    if not 0 <= discordance <= 1:
        raise ValueError(f"discordance must be in [0, 1], not {discordance!r}")
    if difference * difference > discordance:
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
    return max(2, math.ceil(_z(level, power) ** 2 * variance / difference ** 2))


def detectable_difference(n_items: int, discordance: float, power: float = 0.8,
                          level: float = 0.95) -> float:
    """The smallest paired difference ``n_items`` items detect with this power."""
    if n_items < 1:
        return math.nan
    _check(discordance, 0.0)
    z = _z(level, power)
    return z * math.sqrt(discordance / (n_items + z * z))


def paired_power(n_items: int, difference: float, discordance: float,
                 level: float = 0.95) -> float:
    """The paired test's power at ``n_items`` (normal approximation, both tails)."""
    _check(discordance, difference)
    sd = math.sqrt(max(discordance - difference * difference, 1e-12))
    shift = abs(difference) * math.sqrt(n_items) / sd
    z = _NORMAL.inv_cdf(1 - (1 - level) / 2)
    return _NORMAL.cdf(shift - z) + _NORMAL.cdf(-shift - z)


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
