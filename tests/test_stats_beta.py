"""The Beta quantile behind every Clopper-Pearson interval: the Newton-guided bisection
gives the plain 42-step bisection's result bit for bit, with far fewer CDF evaluations."""

from __future__ import annotations

import random

import numpy as np
import pytest

from hr_core.stats import distributions
from hr_core.stats.distributions import beta_ppf, betainc
from hr_core.stats.intervals import clopper_pearson, clustered_mean_ci, effective_size_interval


def _plain_bisection(q: float, a: float, b: float) -> float:
    """The quantile as hr computed it before (every step evaluates the CDF)."""
    low, high = 0.0, 1.0
    for _ in range(42):
        mid = (low + high) / 2
        if betainc(a, b, mid) < q:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def _cases() -> list[tuple[float, float, float]]:
    """Clopper-Pearson's Beta parameters (whole and fractional successes, 0 and n) for
    1 to 400,000 runs at the usual levels, and arbitrary ones."""
    rng = random.Random(7)
    cases: list[tuple[float, float, float]] = []
    for n in (1, 2, 3, 10, 100, 1000, 10_000, 100_000, 400_000):
        for _ in range(8):
            x = min(max(rng.choice([0, 1, n - 1, n, rng.randint(0, n),
                                    round(rng.uniform(0, n), 9)]), 0.0), float(n))
            for q in (0.025, 0.975, 0.005, 0.995):
                if x > 0:
                    cases.append((q, x, n - x + 1))
                if x < n:
                    cases.append((q, x + 1, n - x))
    cases += [(rng.random(), rng.uniform(0.01, 50), rng.uniform(0.01, 50)) for _ in range(300)]
    return [*cases, (0.025, 0.01, 1e5), (0.975, 1e5, 0.01), (1e-9, 2, 3), (0.5, 0.5, 0.5)]


def test_beta_ppf_is_the_plain_bisection_bit_for_bit() -> None:
    cases = _cases()
    got = [beta_ppf.__wrapped__(*case) for case in cases]
    assert got == [_plain_bisection(*case) for case in cases]


def test_beta_ppf_hand_computed() -> None:
    # Beta(1, 1) is uniform: its q quantile is q (to the bisection's 2**-42)
    assert beta_ppf.__wrapped__(0.3, 1.0, 1.0) == pytest.approx(0.3, abs=1e-12)
    # Beta(a, 1): CDF x**a, quantile q**(1/a)
    assert beta_ppf.__wrapped__(0.025, 5.0, 1.0) == pytest.approx(0.025 ** 0.2, abs=1e-12)
    # Clopper-Pearson of 0 of 10: the upper bound is 1 - (alpha / 2) ** (1 / n)
    assert clopper_pearson(0, 10).high == pytest.approx(1 - 0.025 ** 0.1, abs=1e-12)


def test_beta_ppf_evaluates_the_cdf_far_fewer_times_at_100k(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def counted(a: float, b: float, x: float) -> float:
        calls.append(x)
        return betainc(a, b, x)

    monkeypatch.setattr(distributions, "betainc", counted)
    beta_ppf.__wrapped__(0.025, 30_655.0, 69_346.0)
    assert len(calls) <= 20  # the plain bisection: 42


def test_clustered_interval_sums_left_to_right() -> None:
    rng = random.Random(3)
    means = [rng.choice([0.0, 1.0, rng.random(), 1 / 3]) for _ in range(20_000)]
    total = 0.0
    for value in means:  # the order of additions the figures were made with
        total += value
    mean = total / len(means)
    spread = 0.0
    for value in means:
        spread += (value - mean) ** 2
    var = spread / (len(means) - 1) / len(means)
    assert clustered_mean_ci(means) == effective_size_interval(mean, var, len(means),
                                                               float(len(means)))
    assert clustered_mean_ci(np.asarray(means)) == clustered_mean_ci(means)


def test_beta_ppf_starts_newton_close_at_100k(monkeypatch: pytest.MonkeyPatch) -> None:
    # Numerical Recipes' first guess and Newton's last step taken unevaluated: 27 CDF
    # evaluations for these four quantiles (32 from the normal approximation)
    cases = [(0.025, 30_655.0, 69_346.0), (0.975, 30_656.0, 69_345.0),
             (0.025, 5_935.0, 94_066.0), (0.975, 60_282.0, 39_719.0)]
    expected = [_plain_bisection(*case) for case in cases]
    calls = []

    def counted(a: float, b: float, x: float) -> float:
        calls.append(x)
        return betainc(a, b, x)

    monkeypatch.setattr(distributions, "betainc", counted)
    assert [beta_ppf.__wrapped__(*case) for case in cases] == expected
    assert len(calls) <= 27
