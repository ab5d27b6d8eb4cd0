"""Prediction-powered inference (PPI++) for a mean: many judge verdicts, a few human labels.

A judge's verdicts on every unit (an item's share of correct runs, say) are cheap and
biased; people's labels on a uniformly random sample of ``n`` units are costly and
right. PPI++ (A. N. Angelopoulos, J. C. Duchi and T. Zrnic, "PPI++: Efficient
prediction-powered inference", arXiv:2311.01453, 2023; after Angelopoulos, Bates,
Fannjiang, Jordan and Zrnic, "Prediction-powered inference", Science 382, 2023)
estimates the mean of the labels as::

    theta = lam * mean(f over the N judged-only units) + mean(y - lam * f over the n labelled)

which is unbiased for every ``lam`` and every judge (the second term corrects the
first's bias), with the normal interval ``theta +- z * se``,
``se^2 = lam^2 var(f_unlabelled) / N + var(y - lam f) / n``. The weight ``lam`` is
tuned to the data (power tuning): ``cov(y, f) / ((1 + n / N) var(f))``, clipped to
[0, 1], so a useless judge gets ``lam = 0`` (the labels alone, the classical interval)
and a good one ``lam`` near 1. The formulas are ``ppi_py``'s ``ppi_mean_ci`` with
``lam=None`` (``_calc_lam_glm``, ``clip=True``): population variances (``ddof=0``) in
the standard error, the sample variance (``ddof=1``) of all verdicts in ``lam``.

The labelled and judged-only units are disjoint and each is a random sample of the same
population (the labelled ones drawn uniformly at random), so the interval covers the
population mean whatever the judge's bias. For a share (an accuracy) near 0 or 1 the
normal interval covers too little with a hundred labels (91% at an accuracy of 0.9 in
``bench/bench_ppi.py``); ``method="share"`` makes it as hr's clustered accuracy does
(Korn and Graubard's effective sample size, then Clopper-Pearson). Values may be any
numbers (a paired difference of two arms' accuracies is in [-1, 1]); a unit that is an
item with several runs makes the item the cluster.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, NamedTuple

import numpy as np

from hr_core.stats.distributions import normal_p_value, z_for
from hr_core.stats.intervals import Interval, clopper_pearson, effective_size_interval

__all__ = ["PPIEstimate", "PPIMethod", "ppi_lambda", "ppi_mean_ci"]

PPIMethod = Literal["normal", "share"]
"""How the interval is made from the estimate and its standard error: ``normal``
(``ppi_py``'s, ``estimate +- z se``) or ``share`` (a share in [0, 1]: Korn and Graubard's
effective sample size ``est(1 - est) / se^2``, then Clopper-Pearson, as hr's clustered
accuracy; asymmetric near 0 and 1, where the normal interval covers too little)."""

_NAN = float("nan")


class PPIEstimate(NamedTuple):
    """A prediction-powered estimate of a mean with its interval.

    Attributes:
        estimate: the PPI++ point estimate.
        low, high: its confidence interval (normal).
        se: its standard error.
        lam: the weight given to the judge (0: the labels alone; 1: plain PPI).
        labelled: the units with a human label (``n``).
        judged: the units with only the judge's verdict (``N``).
        labels_only: the classical interval from the ``n`` labels alone (``lam = 0``).
        p_value: two-sided, of the estimate against 0 (for a paired difference).
    """

    estimate: float
    low: float
    high: float
    se: float
    lam: float
    labelled: int
    judged: int
    labels_only: Interval
    p_value: float


def _vector(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=np.float64).ravel()
    if not np.isfinite(array).all():
        raise ValueError(f"{name}: every value must be a finite number")
    return array


def _inputs(labels: Sequence[float] | np.ndarray, predicted: Sequence[float] | np.ndarray,
            predicted_unlabelled: Sequence[float] | np.ndarray
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three vectors of a PPI estimate, checked: the labelled units' labels and verdicts
    (the same length) and the verdicts on the other units."""
    y = _vector(labels, "labels")
    f = _vector(predicted, "predicted")
    if len(f) != len(y):
        raise ValueError(f"labels and predicted differ in length ({len(y)} and {len(f)})")
    return y, f, _vector(predicted_unlabelled, "predicted_unlabelled")


def ppi_lambda(labels: Sequence[float] | np.ndarray, predicted: Sequence[float] | np.ndarray,
               predicted_unlabelled: Sequence[float] | np.ndarray) -> float:
    """PPI++'s power-tuned weight on the judge, clipped to [0, 1].

    ``sum((y - ybar)(f - fbar)) / n`` over the labelled units, divided by
    ``(1 + n / N)`` times the sample variance (``ddof=1``) of the verdicts on all
    ``n + N`` units; 0 when there are no judged-only units or the verdicts do not vary.

    Example:
        >>> round(ppi_lambda([1, 0, 1, 1], [1, 0, 0, 1], [1, 1, 0, 1, 0, 1, 1, 1]), 5)
        0.34375
    """
    y, f, unl = _inputs(labels, predicted, predicted_unlabelled)
    n, big_n = len(y), len(unl)
    if n < 2 or big_n == 0:
        return 0.0
    covariance = float(np.dot(y - y.mean(), f - f.mean())) / n
    spread = float(np.var(np.concatenate([f, unl]), ddof=1))
    if spread <= 0:
        return 0.0
    return min(max(covariance / ((1 + n / big_n) * spread), 0.0), 1.0)


def ppi_mean_ci(labels: Sequence[float] | np.ndarray, predicted: Sequence[float] | np.ndarray,
                predicted_unlabelled: Sequence[float] | np.ndarray, *, level: float = 0.95,
                lam: float | None = None, bounds: tuple[float, float] | None = None,
                method: PPIMethod = "normal") -> PPIEstimate:
    """The PPI++ estimate of the labels' mean with its ``level`` interval.

    Args:
        labels: people's values ``y`` on the ``n`` labelled units (1 correct, 0 not,
            or an item's share of correct runs, or a paired difference).
        predicted: the judge's values ``f`` on the same units, in the same order.
        predicted_unlabelled: the judge's values on the ``N`` other units.
        level: the confidence level.
        lam: the judge's weight; ``None`` tunes it (:func:`ppi_lambda`), ``0`` gives
            the classical interval of the labels alone, ``1`` plain PPI.
        bounds: the values the mean can take (``(0, 1)`` for an accuracy): both
            intervals are clipped to them (coverage is kept).
        method: ``normal`` or ``share`` (:data:`PPIMethod`); both intervals (PPI++
            and the labels alone) are made by it.

    When the standard error is 0 (no spread left, e.g. every label and verdict 1), the
    interval is Clopper-Pearson's of the labels alone for 0/1 labels, never zero-width.

    Example:
        >>> est = ppi_mean_ci([1, 0, 1, 1], [1, 0, 0, 1], [1, 1, 0, 1, 0, 1, 1, 1])
        >>> round(est.estimate, 4), round(est.lam, 5), round(est.se, 4)
        (0.8359, 0.34375, 0.1885)
    """
    y, f, unl = _inputs(labels, predicted, predicted_unlabelled)
    n, big_n = len(y), len(unl)
    if lam is None:
        lam = ppi_lambda(y, f, unl)
    elif not 0.0 <= lam <= 1.0 or math.isnan(lam):
        raise ValueError(f"lam must be between 0 and 1, not {lam!r}")
    z = z_for(level)
    if n == 0:
        empty = Interval(_NAN, _NAN, _NAN)
        return PPIEstimate(_NAN, _NAN, _NAN, _NAN, lam, 0, big_n, empty, _NAN)
    mean_y = float(y.mean())
    se_labels = float(y.std()) / math.sqrt(n)
    if method == "share":
        labels_only = effective_size_interval(mean_y, se_labels ** 2, n, n, level)
    else:
        labels_only = _clip(Interval(mean_y, mean_y - z * se_labels,
                                     mean_y + z * se_labels), bounds)
    if big_n == 0:
        lam = 0.0
    imputed = lam * float(unl.mean()) if big_n else 0.0
    residual = y - lam * f
    estimate = imputed + float(residual.mean())
    variance = (lam * lam * float(unl.var()) / big_n if big_n else 0.0) + float(
        residual.var()) / n
    se = math.sqrt(variance)
    p_value = normal_p_value(estimate / se) if se > 0 else (1.0 if estimate == 0 else 0.0)
    if method == "share":
        share = min(max(estimate, 0.0), 1.0)
        _, low, high = effective_size_interval(share, variance, n, n + big_n, level)
        return PPIEstimate(share, low, high, se, lam, n, big_n, labels_only, p_value)
    if se > 0:
        low, high = estimate - z * se, estimate + z * se
    elif np.isin(y, (0.0, 1.0)).all():
        _, low, high = clopper_pearson(float(y.sum()), n, level)
        low, high = min(low, estimate), max(high, estimate)
    else:
        low = high = estimate
    _, low, high = _clip(Interval(estimate, low, high), bounds)
    return PPIEstimate(estimate, low, high, se, lam, n, big_n, labels_only, p_value)


def _clip(interval: Interval, bounds: tuple[float, float] | None) -> Interval:
    if bounds is None:
        return interval
    low, high = bounds
    return Interval(interval.estimate, min(max(interval.low, low), high),
                    max(min(interval.high, high), low))
