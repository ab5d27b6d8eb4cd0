"""Statistics: known values, edge cases, and nominal coverage by simulation."""

from __future__ import annotations

import math
import random

import pytest

from hr_core.stats import (
    accuracy_interval,
    clustered_mean_ci,
    cohen_kappa,
    paired_difference,
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


def test_accuracy_interval_uses_wilson_for_single_runs() -> None:
    assert accuracy_interval([1, 0, 1], [1, 1, 1]) == wilson_interval(2, 3)


def test_accuracy_interval_clusters_by_item_for_several_runs() -> None:
    got = accuracy_interval([3, 0, 2], [3, 3, 2])
    assert got == clustered_mean_ci([1.0, 0.0, 1.0])


def test_accuracy_interval_skips_items_without_scored_runs() -> None:
    assert accuracy_interval([0, 1], [0, 1]) == wilson_interval(1, 1)


def test_paired_difference_of_identical_arms_is_zero_with_p_one() -> None:
    got = paired_difference([1, 0, 1], [1, 0, 1])
    assert (got.diff, got.ci_low, got.ci_high, got.p_value, got.n_items) == (0, 0, 0, 1.0, 3)


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


def _covers(interval: tuple[float, float, float], truth: float) -> bool:
    return interval[1] <= truth <= interval[2]


def test_wilson_covers_the_truth_at_nominal_rate() -> None:
    rng = random.Random(20261129)
    hits = 0
    trials = 2000
    for _ in range(trials):
        p = rng.uniform(0.05, 0.95)
        n = rng.randint(30, 200)
        k = sum(rng.random() < p for _ in range(n))
        hits += _covers(wilson_interval(k, n), p)
    assert hits / trials >= 0.93


def test_clustered_ci_covers_the_truth_with_correlated_runs() -> None:
    """Items differ in difficulty, runs of one item are correlated: cluster by item."""
    rng = random.Random(7)
    hits = 0
    trials = 600
    for _ in range(trials):
        n_items, runs = 80, 5
        difficulties = [rng.betavariate(2, 2) for _ in range(n_items)]
        truth = 0.5  # mean of Beta(2, 2)
        correct = [sum(rng.random() < d for _ in range(runs)) for d in difficulties]
        hits += _covers(accuracy_interval(correct, [runs] * n_items), truth)
    assert hits / trials >= 0.93


def test_paired_difference_covers_the_truth() -> None:
    rng = random.Random(11)
    hits = 0
    trials = 800
    for _ in range(trials):
        n = 100
        a = [float(rng.random() < 0.7) for _ in range(n)]
        b = [float(rng.random() < 0.6) for _ in range(n)]
        got = paired_difference(a, b)
        hits += got.ci_low <= 0.1 <= got.ci_high
    assert hits / trials >= 0.93
