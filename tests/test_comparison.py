"""The one comparison (``hr_core.stats.compare_paired``): one method, so the interval and
the decision never disagree (issue 32)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hr_core.stats import (
    DECISIONS,
    MIN_ITEMS,
    compare_estimate,
    compare_paired,
    decision_from_legacy,
)


def test_hand_computed_twenty_items_four_broke_none_fixed() -> None:
    # d = -1 on 4 items, 0 on 16: mean -0.20, sd 0.4104, se 0.09177, t_{0.975,19} = 2.093;
    # half-width 2.093 * 0.09177 + 1/20 = 0.2421 -> [-0.442, 0.042]; p = 2 T19.sf(1.634)
    got = compare_paired([0] * 4 + [1] * 16, [1] * 20)
    assert got.estimate == pytest.approx(-0.2)
    assert got.low == pytest.approx(-0.4421, abs=5e-4)
    assert got.high == pytest.approx(0.0421, abs=5e-4)
    assert got.p_value == pytest.approx(0.1186, abs=2e-3)
    assert got.decision == "no detectable change"
    assert got.method == "paired t with continuity correction"
    assert got.n_items == 20 and got.family_size == 1 and got.level == pytest.approx(0.95)


def test_eight_broke_of_twenty_is_worse() -> None:
    got = compare_paired([0] * 8 + [1] * 12, [1] * 20)
    assert got.high < 0 and got.p_value < 0.05 and got.decision == "worse"
    mirror = compare_paired([1] * 20, [0] * 8 + [1] * 12)
    assert mirror.low > 0 and mirror.decision == "better"


def test_bonferroni_widens_the_interval_and_names_itself() -> None:
    now, then = [0] * 8 + [1] * 12, [1] * 20
    one = compare_paired(now, then)
    four = compare_paired(now, then, family_size=4)
    assert four.level == pytest.approx(1 - 0.05 / 4)
    assert four.low < one.low and four.high > one.high
    assert four.method == "paired t with continuity correction, Bonferroni over 4"
    assert four.p_value == pytest.approx(one.p_value)  # compared with alpha / 4, not scaled


def test_no_spread_uses_the_distribution_free_bound() -> None:
    got = compare_paired([1] * 10, [0] * 10)
    s = 0.025 ** (1 / 10)
    assert (got.low, got.high) == pytest.approx((s - (1 - s), 1.0))
    assert got.p_value == pytest.approx(2 * 0.5 ** 10)
    assert got.decision == "better" and "no spread" in got.method
    same = compare_paired([1] * 10, [1] * 10)
    assert same.p_value == 1.0 and same.decision == "no detectable change"


def test_too_few_items_and_empty() -> None:
    assert compare_paired([1] * 5, [0] * 5).decision == "too few items"
    empty = compare_paired([], [])
    assert empty.decision == "too few items" and math.isnan(empty.low)


def test_equivalence_margin() -> None:
    rng = np.random.default_rng(1)
    now = rng.random(400)
    then = np.clip(now + rng.normal(0, 0.01, 400), 0, 1)
    assert compare_paired(now, then).decision == "no detectable change"
    assert compare_paired(now, then, equivalence_margin=0.05).decision == "equivalent"


def test_bad_arguments_are_errors() -> None:
    with pytest.raises(ValueError, match="equal lengths"):
        compare_paired([1, 0], [1])
    with pytest.raises(ValueError, match="family_size"):
        compare_paired([1], [0], family_size=0)


def test_estimate_path_matches_the_paired_path() -> None:
    now, then = [0] * 6 + [1] * 30, [1] * 33 + [0] * 3
    paired = compare_paired(now, then)
    d = np.asarray(now, float) - np.asarray(then, float)
    est = compare_estimate(float(d.mean()), float(d.std(ddof=1) / 6), 36, continuity=1 / 36,
                           bounds=(-1.0, 1.0))
    assert (est.low, est.high, est.p_value) == pytest.approx(
        (paired.low, paired.high, paired.p_value))
    assert est.decision == paired.decision


def test_legacy_verdicts_read_as_todays() -> None:
    assert [decision_from_legacy(v) for v in
            ("higher", "lower", "no clear difference", "too few items to tell")] == [
        "better", "worse", "no detectable change", "too few items"]
    assert decision_from_legacy("better") == "better"
    assert set(DECISIONS) >= {"better", "worse", "equivalent", "undecided"}


@st.composite
def paired_tables(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int]:
    n = draw(st.integers(1, 300))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    kind = draw(st.sampled_from(["binary", "fraction", "runs"]))
    p_now, p_then = draw(st.floats(0, 1)), draw(st.floats(0, 1))
    if kind == "binary":
        now, then = rng.random(n) < p_now, rng.random(n) < p_then
    elif kind == "fraction":
        now, then = rng.random(n) * p_now, rng.random(n) * p_then
    else:  # shares over 1-5 runs
        runs = int(rng.integers(1, 6))
        now = rng.binomial(runs, p_now, n) / runs
        then = rng.binomial(runs, p_then, n) / runs
    return np.asarray(now, float), np.asarray(then, float), draw(st.integers(1, 8))


@settings(max_examples=400, deadline=None)
@given(paired_tables())
def test_interval_and_decision_never_disagree(table: tuple[np.ndarray, np.ndarray, int]) -> None:
    now, then, family = table
    got = compare_paired(now, then, family_size=family)
    alpha = 0.05 / family
    assert got.level == pytest.approx(1 - alpha)
    excludes = got.low > 0 or got.high < 0
    assert (got.p_value < alpha) == excludes
    assert got.low <= got.estimate <= got.high
    if len(now) < MIN_ITEMS:
        assert got.decision == "too few items"
    else:
        assert (got.decision in ("better", "worse")) == excludes
        assert got.decision != "better" or got.low > 0
        assert got.decision != "worse" or got.high < 0
