"""The distributions behind hr's intervals and tests: normal and Student t quantiles, and the
regularised incomplete beta function (the Beta, binomial and t CDFs) with its inverse.

Pure Python (no SciPy): the incomplete beta by its continued fraction (Numerical Recipes 6.4).
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

__all__ = ["beta_ppf", "betainc", "check_level", "normal_p_value", "t_for", "t_two_sided_p",
           "z_for"]


def z_for(level: float = 0.95) -> float:
    """The two-sided normal quantile for a confidence level (1.959964 for 0.95)."""
    check_level(level)
    return NormalDist().inv_cdf(0.5 + level / 2)


def check_level(level: float) -> None:
    if not 0 < level < 1:
        raise ValueError(f"confidence level must be between 0 and 1, not {level!r}")


# --- the regularised incomplete beta function and its inverse (Numerical Recipes 6.4) ---

def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        step = d * c
        h *= step
        if abs(step - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function ``I_x(a, b)`` (the Beta(a, b) CDF)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


@lru_cache(maxsize=65536)
def beta_ppf(q: float, a: float, b: float) -> float:
    """The ``q`` quantile of Beta(a, b), by bisection on the CDF (to ~1e-12)."""
    low, high = 0.0, 1.0
    for _ in range(42):
        mid = (low + high) / 2
        if betainc(a, b, mid) < q:
            low = mid
        else:
            high = mid
    return (low + high) / 2


@lru_cache(maxsize=4096)
def t_for(level: float = 0.95, df: float = math.inf) -> float:
    """The two-sided Student t quantile (``z_for(level)`` when ``df`` is infinite).

    Example:
        >>> round(t_for(0.95, 4), 4)
        2.7764
    """
    check_level(level)
    if math.isinf(df):
        return z_for(level)
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, not {df!r}")
    # P(|T| > t) = I_{df / (df + t^2)}(df / 2, 1 / 2)
    x = beta_ppf(1 - level, df / 2, 0.5)
    return math.sqrt(df * (1 - x) / x)


def t_two_sided_p(t: float, df: float) -> float:
    return betainc(df / 2, 0.5, df / (df + t * t))


def normal_p_value(z_score: float) -> float:
    """Two-sided p-value of a standard normal statistic."""
    return math.erfc(abs(z_score) / math.sqrt(2))
