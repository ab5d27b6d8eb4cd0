"""Anytime-valid confidence sequences for paired accuracy differences.

A sequential comparison looks at the data after every batch and stops as soon
as the answer is clear. An ordinary interval checked after every batch is not
valid (its error rate grows with each look); a *confidence sequence* is: with
probability at least ``level`` it covers the true mean at every sample size at
once, so it may be monitored continuously and the run stopped at any time.

The method is the hedged betting confidence sequence of Waudby-Smith and Ramdas,
"Estimating means of bounded random variables by betting", JRSS-B 86(1), 2024
(section 4 and its "hedged capital" process, eq. 26-28), with the aGRAPA bets of
their section 5.1 and the predictable mean/variance estimates of their eq. 13:

- a paired difference ``d`` in [-1, 1] is mapped to ``y = (d + 1) / 2`` in [0, 1];
- for a candidate mean ``m`` two capital processes bet on ``y > m`` and ``y < m``,
  ``K+ = prod(1 + l+ (y - m))`` and ``K- = prod(1 - l- (y - m))``, with bets
  ``l`` fixed before each item is seen (they use only earlier items);
- the hedged capital ``max(K+, K-) / 2`` is a non-negative supermartingale for the
  true ``m``; by Ville's inequality it ever reaches ``1 / alpha`` with probability
  at most ``alpha``: the confidence sequence is every ``m`` whose capital has not.

Decisions read the same processes at three points: the difference is above 0
when ``K+`` at ``d = 0`` reached ``2 / alpha`` (below 0 for ``K-``), and within
``margin`` of 0 when both ``K+`` at ``d = -margin`` and ``K-`` at ``d = +margin``
did. Every claim is one side of the same level-``alpha`` sequence.

Example:
    >>> import numpy as np
    >>> seq = PairedSequence(alpha=0.05, margin=0.02)
    >>> seq.update(np.ones(40))               # arm a right, arm b wrong, 40 times
    >>> seq.decision()
    'better'
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final, Literal

import numpy as np

__all__ = ["PairedSequence", "SequentialDecision"]
# predictable_estimates, log_bets and first_decisions are public here (bench/ simulates
# with them) but not re-exported by hr_core: they are the method's parts, not its API.

SequentialDecision = Literal["better", "worse", "equivalent", "undecided"]
"""What a paired confidence sequence says of ``a - b`` so far: ``better`` (above 0),
``worse`` (below 0), ``equivalent`` (within ``±margin``), or ``undecided`` (keep going)."""

_C: Final = 0.5
"""The bets' truncation (Waudby-Smith & Ramdas use 1/2 or 3/4): ``l <= c / m``."""

_GRID: Final = 401
"""Candidate means for the reported interval: steps of 0.005 in ``d``."""


class PairedSequence:
    """A confidence sequence on the mean paired difference, fed batch by batch.

    Args:
        alpha: the error level (``1 - level``); every decision and the interval
            hold simultaneously over all sample sizes with probability ``1 - alpha``.
        margin: the equivalence margin (in accuracy points / 100): ``equivalent``
            means the sequence lies within ``(-margin, margin)``; 0 turns it off.

    Call :meth:`update` with each batch of per-item differences (values in [-1, 1],
    in the order the items were drawn), then read :meth:`decision` or
    :meth:`interval`.
    """

    def __init__(self, alpha: float = 0.05, margin: float = 0.0) -> None:
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), not {alpha!r}")
        if not 0 <= margin < 1:
            raise ValueError(f"margin must be in [0, 1), not {margin!r}")
        self.alpha = float(alpha)
        self.margin = float(margin)
        self.n = 0
        self.total = 0.0
        self._sum_y = 0.0
        self._sum_sq = 0.0  # sum of (y_i - mu_hat_i)^2, eq. 13's variance estimate
        self._grid = np.linspace(-1.0, 1.0, _GRID)
        self._log_up = np.zeros(_GRID)
        self._log_down = np.zeros(_GRID)
        points = (0.0, -self.margin, self.margin) if self.margin > 0 else (0.0,)
        self._points: dict[float, list[float]] = {d: [0.0, 0.0] for d in points}

    @property
    def mean(self) -> float:
        """The mean difference so far (NaN before any item)."""
        return self.total / self.n if self.n else math.nan

    def update(self, diffs: Sequence[float] | np.ndarray) -> None:
        """Add a batch of paired differences (``a_i - b_i``, each in [-1, 1])."""
        d = np.asarray(diffs, dtype=np.float64).ravel()
        if d.size == 0:
            return
        if not np.all(np.isfinite(d)) or d.min() < -1 or d.max() > 1:
            raise ValueError("paired differences must be finite values in [-1, 1]")
        y = (d + 1.0) / 2.0
        mu, var, sq = predictable_estimates(y, self.n, self._sum_y, self._sum_sq)
        for key, logs in self._points.items():
            up, down = log_bets(y, mu, var, key)
            logs[0] += float(up.sum())
            logs[1] += float(down.sum())
        for start in range(0, d.size, 256):  # the grid at once, 401 x 256 values at most
            part = slice(start, start + 256)
            up, down = log_bets(y[part], mu[part], var[part], self._grid[:, None])
            self._log_up += up.sum(axis=1)
            self._log_down += down.sum(axis=1)
        self.n += d.size
        self.total += float(d.sum())
        self._sum_y += float(y.sum())
        self._sum_sq += float(sq.sum())

    def _rejects(self, logs: float) -> bool:
        return logs >= math.log(2.0 / self.alpha)

    def decision(self) -> SequentialDecision:
        """``better``/``worse`` when the sequence excludes 0, ``equivalent`` when it lies
        within ``(-margin, margin)`` (``margin > 0`` only), else ``undecided``."""
        zero = self._points[0.0]
        if self._rejects(zero[0]):
            return "better"
        if self._rejects(zero[1]):
            return "worse"
        if self.margin > 0:
            low, high = self._points[-self.margin], self._points[self.margin]
            if self._rejects(low[0]) and self._rejects(high[1]):
                return "equivalent"
        return "undecided"

    def interval(self) -> tuple[float, float]:
        """The confidence sequence now, on the grid of differences (steps of 0.005)."""
        bound = math.log(2.0 / self.alpha)
        keep = (self._log_up < bound) & (self._log_down < bound)
        if not keep.any():  # the grid is too coarse to hold it: the mean is the best bet
            return (self.mean, self.mean)
        inside = self._grid[keep]
        step = self._grid[1] - self._grid[0]
        return (max(-1.0, float(inside.min() - step)), min(1.0, float(inside.max() + step)))


def predictable_estimates(y: np.ndarray, n_before: int = 0, sum_before: float = 0.0,
               sq_before: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The predictable mean and variance before each item (eq. 13), along the last axis.

    ``mu_i = (1/2 + sum_{j<i} y_j) / i`` and ``var_i = (1/4 + sum_{j<i} (y_j - mu_{j+1})^2) / i``
    (items numbered from 1, after ``n_before`` earlier ones); also returns the squares.
    """
    k = np.arange(n_before + 1, n_before + y.shape[-1] + 1, dtype=np.float64)
    through = sum_before + np.cumsum(y, axis=-1)
    before = through - y
    mu = (0.5 + before) / k
    sq = (y - (0.5 + through) / (k + 1)) ** 2
    var = (0.25 + sq_before + np.cumsum(sq, axis=-1) - sq) / k
    return mu, var, sq


def log_bets(y: np.ndarray, mu: np.ndarray, var: np.ndarray,
             difference: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each item's log capital factor betting up and down at the mean ``difference``.

    The aGRAPA bets (Waudby-Smith & Ramdas, section 5.1): ``(mu - m) / (var + (mu - m)^2)``
    from the predictable estimates, on the side it favours, truncated at ``c / m`` (up)
    and ``c / (1 - m)`` (down) so that every factor stays positive; ``m`` is the
    candidate mean of ``y = (d + 1) / 2``. Shapes broadcast (items on the last axis; an
    array of differences of shape ``(G, 1)`` gives ``(G, n)``).
    """
    m = (np.asarray(difference, dtype=np.float64) + 1.0) / 2.0
    gap = mu - m
    raw = gap / (var + gap * gap)
    up = np.minimum(np.clip(raw, 0.0, None), _C / np.maximum(m, 1e-12))
    down = np.minimum(np.clip(-raw, 0.0, None), _C / np.maximum(1.0 - m, 1e-12))
    centred = y - m
    return np.log1p(up * centred), np.log1p(-down * centred)


def first_decisions(d: np.ndarray, alpha: float, margin: float = 0.0, batch: int = 20,
                    min_items: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """Many sequences at once (rows of ``d``, items in drawn order): the items used and
    the first decision (1 better, -1 worse, 2 equivalent, 0 none by the end), looked
    at after every batch from ``min_items`` on, as sequential mode looks.

    The same sums :meth:`PairedSequence.update` accumulates, vectorised over rows.
    """
    y = (np.asarray(d, dtype=np.float64) + 1.0) / 2.0
    mu, var, _ = predictable_estimates(y)
    bound = math.log(2.0 / alpha)
    up0, down0 = (np.cumsum(x, axis=-1) for x in log_bets(y, mu, var, 0.0))
    n = y.shape[-1]
    looks = np.array([k for k in range(batch, n + 1, batch) if k >= min_items] or [n]) - 1
    code = np.where(up0[..., looks] >= bound, 1, np.where(down0[..., looks] >= bound, -1, 0))
    if margin > 0:
        low_up = np.cumsum(log_bets(y, mu, var, -margin)[0], axis=-1)[..., looks]
        high_down = np.cumsum(log_bets(y, mu, var, margin)[1], axis=-1)[..., looks]
        code = np.where((code == 0) & (low_up >= bound) & (high_down >= bound), 2, code)
    decided = code != 0
    first = np.where(decided.any(axis=-1), decided.argmax(axis=-1), len(looks) - 1)
    used = looks[first] + 1
    decision = np.take_along_axis(code, first[..., None], axis=-1)[..., 0]
    return used, decision
