"""How many human labels a target interval width needs, with PPI++ and without it.

The corrected accuracy (:mod:`hr_core.stats.ppi`) labels ``n`` of a run's ``N`` judged
units (items) at random. Its variance (Angelopoulos, Bates, Fannjiang, Jordan and Zrnic,
"Prediction-powered inference", Science 382, 2023; with the tuned weight of Angelopoulos,
Duchi and Zrnic, "PPI++", arXiv:2311.01453, 2023) is::

    se^2(n) = lam^2 var(f) / (N - n) + var(y - lam f) / n,
    lam     = cov(y, f) / ((1 + n / (N - n)) var(f))   (clipped to [0, 1])

with ``y`` people's value of a unit (1 correct, 0 not; an item's share of correct runs)
and ``f`` the judge's. A ``level`` interval ``estimate +- z se`` has width ``2 z se``, so
a target width ``w`` needs the smallest ``n`` with ``2 z se(n) <= w``; the labels alone
(``lam = 0``) need ``n = z^2 var(y) / (w / 2)^2``. With many judged units the PPI++
count is the labels-alone one times ``1 - rho^2`` (``rho`` the correlation of ``y`` and
``f``): the judge saves the share of the labels' variance it explains. Given the
accuracy expected (``mean``), the width is that of the interval hr shows for an accuracy
(the effective-size Clopper-Pearson interval of :func:`hr_core.stats.ppi.ppi_mean_ci`,
``method="share"``), found by bisection: a few labels more than the normal formula's.

For a judge known by its sensitivity and specificity on 0/1 units of accuracy ``p``
(:func:`judge_moments`): ``var(y) = p(1 - p)``, ``q = p sens + (1 - p)(1 - spec)`` the
share it calls correct, ``var(f) = q(1 - q)``, ``cov = p(1 - p)(sens + spec - 1)``. A
run's true accuracy is the judge's corrected for its errors (Rogan and Gladen,
"Estimating prevalence from the results of a screening test", Am. J. Epidemiology 107,
1978): ``p = (q + spec - 1) / (sens + spec - 1)`` (:func:`true_share`).

Example:
    >>> var_y, var_f, cov = judge_moments(0.75, 0.9, 0.7)
    >>> plan = labels_for_width(0.1, var_y, var_f, cov, judged=2000)
    >>> plan.labels_only, plan.labels_ppi
    (289, 195)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from hr_core.stats.distributions import z_for
from hr_core.stats.intervals import effective_size_interval

__all__ = ["LabelPlan", "judge_moments", "labels_for_width", "ppi_se", "true_share"]


class LabelPlan(NamedTuple):
    """The labels a target width needs.

    Attributes:
        width: the target width of the interval (a share: 0.1 is 10 points).
        level: its confidence level.
        judged: the units the judge decided (``N``).
        labels_only: labelled units the labels alone need; ``None`` when more than
            ``judged`` (the width cannot be had from this run's items).
        labels_ppi: labelled units PPI++ needs; ``None`` likewise.
        lam: the judge's weight at ``labels_ppi`` (0 when ``None``).
        correlation: of people's values and the judge's (``rho``).
    """

    width: float
    level: float
    judged: int
    labels_only: int | None
    labels_ppi: int | None
    lam: float
    correlation: float


def judge_moments(accuracy: float, sensitivity: float, specificity: float
                  ) -> tuple[float, float, float]:
    """``(var(y), var(f), cov(y, f))`` of 0/1 units of true accuracy ``accuracy`` judged
    with ``sensitivity`` (P(judge correct | correct)) and ``specificity``.

    Example:
        >>> [round(x, 6) for x in judge_moments(0.75, 0.9, 0.7)]
        [0.1875, 0.1875, 0.1125]
    """
    for name, value in (("accuracy", accuracy), ("sensitivity", sensitivity),
                        ("specificity", specificity)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must be between 0 and 1, not {value!r}")
    p = accuracy
    q = p * sensitivity + (1 - p) * (1 - specificity)
    return p * (1 - p), q * (1 - q), p * (1 - p) * (sensitivity + specificity - 1)


def true_share(judged_share: float, sensitivity: float, specificity: float) -> float:
    """The true share under a judge's errors (Rogan-Gladen), clipped to [0, 1]; the
    judge's own share when it is no better than chance (``sens + spec <= 1``).

    Example:
        >>> round(true_share(0.75, 0.9, 0.7), 6)  # q = 0.75 * 0.9 + 0.25 * 0.3
        0.75
    """
    informed = sensitivity + specificity - 1
    if informed <= 0:
        return judged_share
    return min(max((judged_share + specificity - 1) / informed, 0.0), 1.0)


def ppi_se(labelled: int | np.ndarray, judged: int, var_y: float, var_f: float,
           cov: float) -> tuple[np.ndarray, np.ndarray]:
    """PPI++'s standard error and tuned weight with ``labelled`` of ``judged`` units
    labelled (arrays over ``labelled``; ``lam = 0`` where every unit is labelled)."""
    n = np.asarray(labelled, dtype=np.float64)
    rest = judged - n
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where((rest > 0) & (var_f > 0), cov / ((1 + n / rest) * var_f), 0.0)
        lam = np.clip(lam, 0.0, 1.0)
        judged_part = np.where(rest > 0, lam * lam * var_f / rest, 0.0)
        variance = judged_part + (var_y - 2 * lam * cov + lam * lam * var_f) / n
    return np.sqrt(np.maximum(variance, 0.0)), lam


def labels_for_width(width: float, var_y: float, var_f: float, cov: float, *, judged: int,
                     level: float = 0.95, mean: float | None = None) -> LabelPlan:
    """The labels an interval of ``width`` needs, with PPI++ and from the labels alone.

    Args:
        width: the target width (``high - low``), a share in (0, 1].
        var_y, var_f, cov: people's values' variance, the judge's, and their covariance
            over the units (population moments, as PPI++'s standard error uses).
        judged: the units the judge decided (every item of the arm).
        level: the interval's confidence level.
        mean: the accuracy expected: the widths are then those of the interval hr shows
            for an accuracy (``method="share"`` of :func:`hr_core.stats.ppi.ppi_mean_ci`:
            Korn and Graubard's effective size, then Clopper-Pearson, a little wider
            than the normal one at small ``n``); ``None``: the normal interval's.
    """
    if not 0.0 < width <= 1.0:
        raise ValueError(f"the width must be in (0, 1], not {width!r}")
    if judged < 2:
        raise ValueError(f"judged must be at least 2, not {judged!r}")
    z = z_for(level)
    half = width / (2 * z)
    counts = np.arange(2, judged + 1)
    se, lam = ppi_se(counts, judged, var_y, var_f, cov)
    rho = cov / math.sqrt(var_y * var_f) if var_y > 0 and var_f > 0 else 0.0
    if mean is None:
        alone = max(2, math.ceil(var_y / (half * half) - 1e-9))
        labels_only = alone if alone <= judged else None
        enough = np.flatnonzero(se <= half * (1 + 1e-9))
        first = int(counts[enough[0]]) if len(enough) else None
    else:
        def shown_ppi(n: int) -> float:
            _, low, high = effective_size_interval(mean, float(se[n - 2]) ** 2, n, judged,
                                                   level)
            return high - low

        def shown_alone(n: int) -> float:
            _, low, high = effective_size_interval(mean, var_y / n, n, n, level)
            return high - low

        labels_only, first = _first(shown_alone, width, judged), _first(shown_ppi, width,
                                                                         judged)
    return LabelPlan(width, level, judged, labels_only, first,
                     0.0 if first is None else float(lam[first - 2]), rho)


def _first(width_at: Callable[[int], float], width: float, judged: int) -> int | None:
    """The fewest ``n`` in ``[2, judged]`` whose width is at most ``width`` (widths fall
    as ``n`` grows: a bisection), ``None`` when even ``judged`` is too few."""
    if width_at(judged) > width * (1 + 1e-9):
        return None
    low, high = 2, judged  # width_at(high) fits
    while low < high:
        middle = (low + high) // 2
        if width_at(middle) <= width * (1 + 1e-9):
            high = middle
        else:
            low = middle + 1
    return high
