"""Statistics: known values, edge cases, and nominal coverage by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hr_core.stats import (
    MIN_ITEMS,
    TOO_FEW_ITEMS,
    accuracy_interval,
    clopper_pearson,
    clustered_mean_ci,
    cohen_kappa,
    paired_difference,
    t_for,
    wilson_interval,
    win_rate,
    z_for,
)


def test_z_for_95_percent() -> None:
    assert z_for(0.95) == pytest.approx(1.959964, abs=1e-6)


def test_z_for_rejects_a_level_outside_zero_one() -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        z_for(95)


def test_wilson_known_value() -> None:
    est, low, high = wilson_interval(8, 10)
    assert est == 0.8
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)


@pytest.mark.parametrize("successes", [0, 10])
def test_wilson_stays_inside_zero_one_at_the_edges(successes: int) -> None:
    _, low, high = wilson_interval(successes, 10)
    assert 0.0 <= low < high <= 1.0


def test_wilson_of_nothing_is_nan() -> None:
    assert all(math.isnan(x) for x in wilson_interval(0, 0))


def test_clopper_pearson_known_value() -> None:
    est, low, high = clopper_pearson(8, 10)
    assert est == 0.8
    assert (round(low, 4), round(high, 4)) == (0.4439, 0.9748)


def test_t_for_known_values() -> None:
    assert t_for(0.95, 4) == pytest.approx(2.776445, abs=1e-5)
    assert t_for(0.95, 29) == pytest.approx(2.045230, abs=1e-5)
    assert t_for(0.95) == z_for(0.95)


def test_accuracy_interval_is_exact_for_single_runs() -> None:
    assert accuracy_interval([1, 0, 1], [1, 1, 1]) == clopper_pearson(2, 3)


def test_accuracy_interval_clusters_by_item_for_several_runs() -> None:
    got = accuracy_interval([3, 0, 2], [3, 3, 2])
    assert got == clustered_mean_ci([1.0, 0.0, 1.0], trials=8)


def test_accuracy_interval_skips_items_without_scored_runs() -> None:
    assert accuracy_interval([0, 1], [0, 1]) == clopper_pearson(1, 1)


@pytest.mark.parametrize("runs", [1, 3])
@pytest.mark.parametrize("share", [0, 1])
def test_accuracy_interval_is_never_zero_width_at_the_edges(runs: int, share: int) -> None:
    """Before: ten items all correct with runs=3 gave [1, 1]."""
    est, low, high = accuracy_interval([share * runs] * 10, [runs] * 10)
    assert est == share
    assert 0.0 <= low < high <= 1.0
    assert high - low > 0.25  # ten items cannot pin an accuracy to within a quarter


def test_accuracy_interval_when_every_item_has_the_same_mean_is_not_zero_width() -> None:
    _, low, high = accuracy_interval([2] * 10, [3] * 10)
    assert low < 2 / 3 < high and high - low > 0.2


def test_paired_difference_of_identical_arms_is_zero_with_p_one() -> None:
    got = paired_difference([1, 0, 1], [1, 0, 1])
    assert (got.diff, got.p_value, got.n_items) == (0, 1.0, 3)
    assert got.ci_low < 0 < got.ci_high  # three tied items say little
    assert got.verdict == TOO_FEW_ITEMS


def test_paired_difference_over_two_items_is_bounded_and_tells_nothing() -> None:
    """Before: 2 items (1,1 vs 0,0) gave CI [1, 1] and p = 0."""
    got = paired_difference([1, 1], [0, 0])
    assert got.diff == 1.0
    assert -1.0 <= got.ci_low < got.ci_high == 1.0
    assert got.p_value == 0.5  # exact McNemar: both discordant pairs one way
    assert got.verdict == "too few items to tell"


def test_paired_difference_over_three_items_stays_within_minus_one_one() -> None:
    """Before: 3 items reached a CI high of 1.32."""
    got = paired_difference([1, 1, 1], [0, 0, 1])
    assert -1.0 <= got.ci_low <= got.ci_high <= 1.0
    assert got.p_value == 0.5
    assert got.verdict == TOO_FEW_ITEMS


def test_paired_difference_p_is_never_zero() -> None:
    unanimous = paired_difference([1] * 8, [0] * 8)
    assert unanimous.p_value == pytest.approx(2 ** -7)
    assert unanimous.verdict == "higher" and 0 < unanimous.ci_low < 1
    spread = paired_difference([2 / 3] * 8, [0.0] * 8)  # no spread, runs > 1
    assert spread.p_value == pytest.approx(2 ** -7)
    huge = paired_difference([1.0] * 5000 + [0.5] * 5000, [0.0] * 10000)
    assert 0 < huge.p_value < 1e-300


def test_paired_difference_uses_student_t_for_several_runs() -> None:
    a, b = [1, 2 / 3, 1, 1 / 3, 1, 1], [0, 1 / 3, 2 / 3, 0, 1, 1 / 3]
    got = paired_difference(a, b)
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    mean = sum(diffs) / 6
    se = math.sqrt(sum((d - mean) ** 2 for d in diffs) / 5 / 6)
    assert got.ci_low == pytest.approx(mean - t_for(0.95, 5) * se)
    assert got.ci_high == pytest.approx(mean + t_for(0.95, 5) * se)
    assert got.p_value == pytest.approx(_t_tail_by_integration(mean / se, 5), rel=1e-6)
    assert got.verdict == "higher"


def _t_tail_by_integration(t: float, df: int) -> float:
    """Two-sided p of Student's t by integrating its density (independent of hr_core)."""
    x = np.linspace(abs(t), 500.0, 1_000_001)
    density = (math.gamma((df + 1) / 2) / (math.sqrt(df * math.pi) * math.gamma(df / 2))
               * (1 + x * x / df) ** (-(df + 1) / 2))
    return float(2 * np.trapezoid(density, x))


def test_paired_difference_verdict_needs_enough_items() -> None:
    assert MIN_ITEMS == 6
    assert paired_difference([1] * 5, [0] * 5).verdict == TOO_FEW_ITEMS
    assert paired_difference([0] * 6, [1] * 6).verdict == "lower"
    assert paired_difference([1, 0] * 10, [0, 1] * 10).verdict == "no clear difference"


def test_paired_difference_detects_a_clear_gap() -> None:
    got = paired_difference([1] * 40 + [0] * 10, [0] * 40 + [0] * 10)
    assert got.diff == pytest.approx(0.8)
    assert got.ci_low > 0.6 and got.p_value < 1e-6


def test_paired_difference_needs_equal_lengths() -> None:
    with pytest.raises(ValueError, match="equal lengths"):
        paired_difference([1, 0], [1])


def test_cohen_kappa_known_values() -> None:
    assert cohen_kappa([("a", "a"), ("b", "b")]) == 1.0
    assert round(cohen_kappa([("a", "a"), ("b", "b"), ("a", "b"), ("b", "b")]), 3) == 0.5
    assert math.isnan(cohen_kappa([("a", "a"), ("a", "a")]))
    assert math.isnan(cohen_kappa([]))


def test_win_rate_counts_ties_as_half() -> None:
    assert win_rate(6, 2, 2).estimate == 0.7


def test_win_rate_is_never_zero_width() -> None:
    assert win_rate(0, 10, 0)[1:] == clopper_pearson(0, 10)[1:]
    _, low, high = win_rate(10, 0, 0)
    assert low < 1 == high


# --- coverage by simulation (fixed seeds; numpy draws, each distinct sample computed once) ---
#
# Items differ in difficulty (Beta with mean ``accuracy`` and concentration 2, so
# some items are nearly always right and others nearly always wrong), runs of one
# item are correlated through it. 2000 replications: a method with 95% coverage
# falls below 93% with probability under 0.01%.

_REPS = 2000
_SIZES = (5, 10, 20, 50)


def _item_probabilities(rng: np.random.Generator, accuracy: float, n: int) -> np.ndarray:
    return rng.beta(accuracy * 2.0, (1 - accuracy) * 2.0, size=(_REPS, n))


def _coverage(samples: np.ndarray, truth: float, interval, spread=None) -> float:  # type: ignore[no-untyped-def]
    """Share of replications (rows of ``samples``) whose interval covers ``truth``.

    The intervals depend on the items only through the sum and the sum of squares
    of ``spread`` (the item values; default ``samples``), so each distinct pair is
    computed once.
    """
    values = samples if spread is None else spread
    keys = np.stack([values.sum(axis=1), (values * values).sum(axis=1)], axis=1)
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    hit = np.array([interval(samples[i])[0] <= truth + 1e-12
                    and truth - 1e-12 <= interval(samples[i])[1] for i in first])
    return float(hit[inverse.ravel()].mean())


@pytest.mark.parametrize("runs", [1, 3])
@pytest.mark.parametrize("accuracy", [0.03, 0.5, 0.97])
@pytest.mark.parametrize("n", _SIZES)
def test_accuracy_interval_covers_the_truth(n: int, accuracy: float, runs: int) -> None:
    rng = np.random.default_rng([n, int(accuracy * 100), runs])
    correct = rng.binomial(runs, _item_probabilities(rng, accuracy, n))

    def interval(row: np.ndarray) -> tuple[float, float]:
        got = accuracy_interval(row.tolist(), [runs] * n)
        return got.low, got.high

    assert _coverage(correct, accuracy, interval) >= 0.93


@pytest.mark.parametrize("runs", [1, 3])
@pytest.mark.parametrize(
    ("acc_a", "acc_b", "shared"),
    [(0.03, 0.03, 0.8), (0.5, 0.5, 0.0), (0.5, 0.5, 0.8), (0.97, 0.97, 0.8), (0.6, 0.4, 0.5)],
)
@pytest.mark.parametrize("n", _SIZES)
def test_paired_difference_covers_the_truth(
    n: int, acc_a: float, acc_b: float, shared: float, runs: int
) -> None:
    """``shared``: the share of items where arm b answers exactly as arm a (ties)."""
    rng = np.random.default_rng([n, int(acc_a * 100), int(acc_b * 100), int(shared * 10), runs])
    a = rng.binomial(runs, _item_probabilities(rng, acc_a, n))
    b = rng.binomial(runs, _item_probabilities(rng, acc_b, n))
    b = np.where(rng.random((_REPS, n)) < shared, a, b)
    truth = (1 - shared) * (acc_a - acc_b)
    pairs = a * (runs + 1) + b  # one number per item keeps the pairing through the sort

    def interval(row: np.ndarray) -> tuple[float, float]:
        got = paired_difference((row // (runs + 1) / runs).tolist(),
                                (row % (runs + 1) / runs).tolist())
        return got.ci_low, got.ci_high

    assert _coverage(pairs, truth, interval, spread=a - b) >= 0.93


@pytest.mark.parametrize("runs", [1, 3])
@pytest.mark.parametrize("win", [0.03, 0.5, 0.97])
@pytest.mark.parametrize("n", _SIZES)
def test_clustered_win_rate_covers_the_truth(n: int, win: float, runs: int) -> None:
    """Judgements of one item share its difficulty; one in ten is a tie (half a win)."""
    rng = np.random.default_rng([n, int(win * 100), runs, 7])
    p = _item_probabilities(rng, win, n)
    draws = rng.random((_REPS, n, runs))
    ties = rng.random((_REPS, n, runs)) < 0.1
    halves = np.where(ties, 1, np.where(draws < p[..., None], 2, 0)).sum(axis=2)
    truth = 0.9 * win + 0.05

    def interval(row: np.ndarray) -> tuple[float, float]:
        got = accuracy_interval((row / 2).tolist(), [runs] * n)
        return got.low, got.high

    assert _coverage(halves, truth, interval) >= 0.93


def test_the_sign_test_past_two_thousand_discordant_items_is_the_normal_approximation() -> None:
    import math

    from hr_core.stats.intervals import _sign_test_p

    def exact(a: int, b: int) -> float:
        m = a + b
        return min(1.0, 2 * sum(math.comb(m, i) for i in range(min(a, b) + 1)) / 2**m)

    for a, b in [(1050, 951), (1010, 991), (1100, 901)]:
        assert abs(_sign_test_p(a, b) - exact(a, b)) < 1e-3
    # 10,000 items: 2**m used to overflow a float (OverflowError in the summary)
    assert 0.0 < _sign_test_p(6000, 4000) < 1e-80
    assert _sign_test_p(5000, 5000) == 1.0


def test_the_exact_mcnemar_p_stays_exact_for_many_discordant_items() -> None:
    from fractions import Fraction

    from hr_core.stats.intervals import _sign_test_p

    m, k = 1201, 560  # beyond the integer sum: the incomplete beta path
    exact = Fraction(2 * sum(math.comb(m, i) for i in range(k + 1)), 2**m)
    assert _sign_test_p(m - k, k) == pytest.approx(float(exact), rel=1e-9)
    assert 0 < _sign_test_p(400_000, 0) < 1e-300  # underflow: reported as the bound
