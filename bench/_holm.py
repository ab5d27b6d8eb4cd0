"""Holm's step-down correction, for ``bench/bench_sequential.py``'s comparison of
corrections only: hr's decisions do not use it (it left hr_core in
issue 33). Every verdict is the one comparison
(:func:`hr_core.stats.compare_paired`), Bonferroni-corrected there, so that an interval
and its decision are made at the same level (Holm corrects p-values only).

Testing every arm against the one that came out best makes one claim per arm;
with eight equal arms, some arm looks significantly worse far more often than
5% of the time. Holm (1979, "A simple sequentially rejective multiple test
procedure", Scand. J. Statist. 6:65-70) controls the family-wise error rate (the
chance of any false claim) at ``alpha`` for any dependence between the tests.

The family hr corrects over is every pair of arms (``k (k - 1) / 2`` p-values),
not only the ``k - 1`` comparisons with the best arm: the best arm is picked
after looking, so its comparisons are the most extreme pairs of the family,
and correcting over ``k - 1`` of them does not hold the error rate (measured
in ``bench/bench_sequential.py``; see docs/statistics.md).

Example:
    >>> [round(p, 3) for p in holm([0.01, 0.04, 0.03])]
    [0.03, 0.06, 0.06]
    >>> [round(p, 3) for p in holm([0.04, 0.001, 0.5])]  # R: p.adjust(..., "holm")
    [0.08, 0.003, 0.5]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["holm"]


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given (NaN stays NaN and is not counted).

    The adjusted p-value of the ``i``-th smallest of ``m`` is
    ``max_{j <= i} min(1, (m - j + 1) p_(j))``; a claim is significant at level
    ``alpha`` when its adjusted p-value is below ``alpha``.
    """
    finite = [(p, i) for i, p in enumerate(p_values) if not math.isnan(p)]
    m = len(finite)
    out = [math.nan] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(sorted(finite)):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out
