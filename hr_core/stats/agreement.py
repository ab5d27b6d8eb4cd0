"""Agreement among several raters (a jury's judges): Fleiss' kappa and Krippendorff's alpha.

Both take one row per unit (an item a jury judged) holding each rater's category, with
``None`` for a rater who gave none (a judge without a verdict):

- :func:`fleiss_kappa` (J. L. Fleiss, "Measuring nominal scale agreement among many
  raters", Psychological Bulletin 76(5), 1971): ``(P - Pe) / (1 - Pe)`` with ``P`` the
  mean over units of the share of agreeing rater pairs and ``Pe`` the sum of the squared
  category shares. It needs the same number of ratings on every unit: units with a
  missing rating are left out (``FleissKappa.units`` says how many were used).
- :func:`krippendorff_alpha` (K. Krippendorff, *Content Analysis*, 2004, and
  "Computing Krippendorff's alpha-reliability", 2011), nominal: ``1 - (n - 1)
  sum_{c != k} o_ck / sum_{c != k} n_c n_k`` over the coincidence matrix ``o`` of the
  pairable values (units with at least two ratings; missing ratings are allowed).

Both are 1 for perfect agreement, about 0 for agreement at chance and NaN when undefined
(no pairable unit, or one category only).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from typing import NamedTuple

__all__ = ["FleissKappa", "fleiss_kappa", "fleiss_kappa_counts", "krippendorff_alpha"]

_NAN = float("nan")


class FleissKappa(NamedTuple):
    """Fleiss' kappa with what it rests on: ``observed`` (``P``), ``chance`` (``Pe``),
    the units used (every rating present) and the raters per unit."""

    kappa: float
    observed: float
    chance: float
    units: int
    raters: int


def fleiss_kappa_counts(counts: Sequence[Sequence[int]]) -> FleissKappa:
    """Fleiss' kappa from a table of counts: one row per unit, one column per category,
    each row summing to the same number of raters ``m >= 2``.

    Example (Fleiss' worked example as Wikipedia gives it: 10 units, 14 raters, 5
    categories; ``P = 0.378``, ``Pe = 0.213``, kappa 0.210):
        >>> table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0],
        ...          [2, 2, 8, 1, 1], [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2],
        ...          [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
        >>> found = fleiss_kappa_counts(table)
        >>> round(found.observed, 3), round(found.chance, 3), round(found.kappa, 3)
        (0.378, 0.213, 0.21)
    """
    rows = [[int(c) for c in row] for row in counts]
    if not rows:
        return FleissKappa(_NAN, _NAN, _NAN, 0, 0)
    m = sum(rows[0])
    if m < 2 or any(sum(row) != m for row in rows) or any(c < 0 for r in rows for c in r):
        raise ValueError("every unit needs the same number (at least 2) of ratings, each "
                         "count non-negative")
    units = len(rows)
    observed = sum((sum(c * c for c in row) - m) / (m * (m - 1)) for row in rows) / units
    totals = [sum(col) for col in zip(*rows, strict=True)]
    chance = sum((t / (units * m)) ** 2 for t in totals)
    kappa = _NAN if chance >= 1 else (observed - chance) / (1 - chance)
    return FleissKappa(kappa, observed, chance, units, m)


def fleiss_kappa(ratings: Sequence[Sequence[Hashable | None]]) -> FleissKappa:
    """Fleiss' kappa of raters' categories, one row per unit (``None``: no rating; such
    units are left out, Fleiss' kappa needing every rating).

    Example:
        >>> round(fleiss_kappa([["a", "a", "a"], ["a", "b", "b"], ["b", "b", "b"],
        ...                     ["a", "a", None]]).kappa, 4)
        0.55
    """
    complete = [list(row) for row in ratings if row and all(v is not None for v in row)]
    if not complete:
        return FleissKappa(_NAN, _NAN, _NAN, 0, 0)
    widths = {len(row) for row in complete}
    if len(widths) != 1:
        raise ValueError(f"every unit needs the same number of raters, not {sorted(widths)}")
    categories = sorted({v for row in complete for v in row}, key=repr)
    table = [[Counter(row)[c] for c in categories] for row in complete]
    return fleiss_kappa_counts(table)


def krippendorff_alpha(ratings: Sequence[Sequence[Hashable | None]]) -> float:
    """Krippendorff's alpha (nominal) of raters' categories, one row per unit, ``None``
    where a rater gave none; units with fewer than two ratings are not pairable.

    Example (Krippendorff 2011, the 4 observers by 12 units with missing values;
    nominal alpha 0.743):
        >>> _ = None
        >>> a = [1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _]
        >>> b = [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3]
        >>> c = [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _]
        >>> d = [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _]
        >>> round(krippendorff_alpha(list(zip(a, b, c, d))), 3)
        0.743
    """
    pairs: defaultdict[tuple[Hashable, Hashable], float] = defaultdict(float)
    for row in ratings:
        values = [v for v in row if v is not None]
        m = len(values)
        if m < 2:
            continue
        counts = Counter(values)
        for c, nc in counts.items():
            for k, nk in counts.items():
                pairs[(c, k)] += (nc * (nc - 1) if c == k else nc * nk) / (m - 1)
    margins: defaultdict[Hashable, float] = defaultdict(float)
    for (c, _), value in pairs.items():
        margins[c] += value
    n = math.fsum(margins.values())
    if n <= 1:
        return _NAN
    disagree = math.fsum(v for (c, k), v in pairs.items() if c != k)
    expected = math.fsum(margins[c] * margins[k] for c in margins for k in margins if c != k)
    if expected <= 0:
        return _NAN
    return 1 - (n - 1) * disagree / expected
