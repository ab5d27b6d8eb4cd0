"""Fleiss' kappa and Krippendorff's alpha (hr_core.stats.agreement) against published
and hand-computed examples."""

from __future__ import annotations

import math

import pytest

from hr_core.stats.agreement import fleiss_kappa, fleiss_kappa_counts, krippendorff_alpha

_ = None
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", 4 observers x 12 units
KRIPPENDORFF = list(zip([1, 2, 3, 3, 2, 1, 4, 1, 2, _, _, _],
                        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _, 3],
                        [_, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _],
                        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _], strict=True))


def test_fleiss_published_example() -> None:
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0],
             [2, 2, 8, 1, 1], [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2],
             [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    found = fleiss_kappa_counts(table)
    assert found.units == 10 and found.raters == 14
    assert found.observed == pytest.approx(0.37802, abs=1e-5)
    assert found.chance == pytest.approx((20**2 + 28**2 + 39**2 + 21**2 + 32**2) / 140**2)
    assert found.kappa == pytest.approx(0.20993, abs=1e-5)


def test_fleiss_by_hand() -> None:
    # 3 raters: P_i = 1, 1/3, 1 -> P = 7/9; shares a 4/9, b 5/9 -> Pe = 41/81
    found = fleiss_kappa([["a", "a", "a"], ["a", "b", "b"], ["b", "b", "b"],
                          ["a", None, "a"]])
    assert found.units == 3  # the unit with a missing rating is left out
    assert found.kappa == pytest.approx((7 / 9 - 41 / 81) / (1 - 41 / 81))
    assert found.kappa == pytest.approx(0.55)


def test_fleiss_edges() -> None:
    assert fleiss_kappa([["a", "a"], ["a", "a"]]).kappa != fleiss_kappa(
        [["a", "a"], ["b", "b"]]).kappa  # one category: undefined (NaN); two: 1
    assert math.isnan(fleiss_kappa([["a", "a"], ["a", "a"]]).kappa)
    assert fleiss_kappa([["a", "a"], ["b", "b"]]).kappa == 1.0
    assert math.isnan(fleiss_kappa([]).kappa)
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa_counts([[1, 1], [3, 0]])


def test_krippendorff_published_example() -> None:
    assert krippendorff_alpha(KRIPPENDORFF) == pytest.approx(0.743, abs=5e-4)


def test_krippendorff_by_hand() -> None:
    # 2 raters, 4 units: (a,a) (a,b) (b,b) (b,b): o_ab = o_ba = 1, n_a = 3, n_b = 5, n = 8
    # alpha = 1 - (n - 1) * 2 / (2 * 3 * 5) = 1 - 7 * 2 / 30
    found = krippendorff_alpha([("a", "a"), ("a", "b"), ("b", "b"), ("b", "b"), ("a", None)])
    assert found == pytest.approx(1 - 14 / 30)
    assert krippendorff_alpha([("a", "a"), ("b", "b")]) == 1.0
    assert math.isnan(krippendorff_alpha([("a", None)]))
    assert math.isnan(krippendorff_alpha([("a", "a"), ("a", "a")]))


def test_alpha_and_kappa_near_zero_at_chance() -> None:
    import numpy as np  # only this test draws random ratings

    rng = np.random.default_rng(3)
    rows = [tuple(rng.integers(0, 2, size=3).tolist()) for _ in range(4000)]
    assert abs(krippendorff_alpha(rows)) < 0.05
    assert abs(fleiss_kappa(rows).kappa) < 0.05
