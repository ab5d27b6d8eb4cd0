"""PPI++ (hr_core.stats.ppi): hand-computed values from ppi_py's formulas, the classical
interval at lam = 0, the share interval, and coverage under a biased judge."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hr_core.stats import clopper_pearson, effective_size_interval, z_for
from hr_core.stats.ppi import ppi_lambda, ppi_mean_ci

Y = [1, 0, 1, 1, 0, 1]
F = [1, 0, 0, 1, 1, 1]
F_UNLABELLED = [1, 1, 0, 1, 0, 1, 1, 1, 0, 1]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _pvar(values: list[float]) -> float:
    """Population variance (numpy's std(ddof=0) squared, as ppi_py's standard error)."""
    m = _mean(values)
    return sum((v - m) ** 2 for v in values) / len(values)


def test_lambda_is_ppi_py_power_tuning_written_out() -> None:
    # ppi_py _calc_lam_glm (d = 1, unit weights): sum((y-ybar)(f-fbar)) / n over
    # (1 + n/N) * var(f on all n + N units, ddof=1), clipped to [0, 1]
    n, big_n = len(Y), len(F_UNLABELLED)
    ybar, fbar = _mean(Y), _mean(F)
    cov = sum((y - ybar) * (f - fbar) for y, f in zip(Y, F, strict=True)) / n
    every = F + F_UNLABELLED
    var = sum((f - _mean(every)) ** 2 for f in every) / (len(every) - 1)
    expected = cov / ((1 + n / big_n) * var)
    assert 0 < expected < 1
    assert ppi_lambda(Y, F, F_UNLABELLED) == pytest.approx(expected, rel=1e-12)
    # by hand: ybar = fbar = 2/3, cov = (1 + 4 - 2 + 1 - 2 + 1) / 9 / 6 = 1/18;
    # 11 of the 16 verdicts are 1: var = 16/15 * 11/16 * 5/16
    assert expected == pytest.approx((1 / 18) / ((1 + 6 / 10) * (11 * 5 / 256 * 16 / 15)))


def test_tuned_estimate_and_interval_are_ppi_py_mean_ci() -> None:
    lam = ppi_lambda(Y, F, F_UNLABELLED)
    estimate = lam * _mean(F_UNLABELLED) + _mean([y - lam * f for y, f in zip(Y, F,
                                                                              strict=True)])
    se = math.sqrt(_pvar([lam * f for f in F_UNLABELLED]) / len(F_UNLABELLED)
                   + _pvar([y - lam * f for y, f in zip(Y, F, strict=True)]) / len(Y))
    est = ppi_mean_ci(Y, F, F_UNLABELLED)
    assert est.lam == pytest.approx(lam)
    assert est.estimate == pytest.approx(estimate, rel=1e-12)
    assert est.se == pytest.approx(se, rel=1e-12)
    z = 1.959963984540054
    assert (est.low, est.high) == pytest.approx((estimate - z * se, estimate + z * se))
    assert (est.labelled, est.judged) == (6, 10)


def test_plain_ppi_at_lam_one() -> None:
    est = ppi_mean_ci(Y, F, F_UNLABELLED, lam=1.0)
    rectifier = _mean([y - f for y, f in zip(Y, F, strict=True)])
    assert est.estimate == pytest.approx(_mean(F_UNLABELLED) + rectifier)  # 0.7 + 0
    assert est.estimate == pytest.approx(0.7)
    se = math.sqrt(_pvar(F_UNLABELLED) / 10 + _pvar([y - f for y, f in zip(Y, F,
                                                                            strict=True)]) / 6)
    assert est.se == pytest.approx(se)


def test_lam_zero_is_the_classical_mean_interval() -> None:
    est = ppi_mean_ci(Y, F, F_UNLABELLED, lam=0.0)
    half = z_for(0.95) * math.sqrt(_pvar(Y) / len(Y))
    assert est.estimate == pytest.approx(_mean(Y))
    assert (est.low, est.high) == pytest.approx((_mean(Y) - half, _mean(Y) + half))
    assert tuple(est.labels_only) == pytest.approx((est.estimate, est.low, est.high))


def test_no_judged_only_units_is_the_labels_alone() -> None:
    est = ppi_mean_ci(Y, F, [])
    assert est.lam == 0.0
    assert est.estimate == pytest.approx(_mean(Y))


def test_a_judge_that_says_the_opposite_gets_no_weight() -> None:
    flipped = [1 - f for f in Y]
    assert ppi_lambda(Y, flipped, [0, 1, 0, 1]) == 0.0  # negative covariance, clipped


def test_a_perfect_judge_narrows_the_interval() -> None:
    rng = np.random.default_rng(5)
    truth = (rng.random(2000) < 0.7).astype(float)
    est = ppi_mean_ci(truth[:200], truth[:200], truth[200:])
    assert est.lam > 0.85
    assert est.high - est.low < 0.5 * (est.labels_only.high - est.labels_only.low)


def test_share_method_is_korn_graubard_on_the_ppi_variance() -> None:
    est = ppi_mean_ci(Y, F, F_UNLABELLED, method="share")
    normal = ppi_mean_ci(Y, F, F_UNLABELLED)
    expected = effective_size_interval(normal.estimate, normal.se ** 2, 6, 16)
    assert (est.estimate, est.low, est.high) == pytest.approx(tuple(expected))
    assert 0.0 <= est.low < est.estimate < est.high <= 1.0


def test_share_labels_alone_of_all_correct_is_never_zero_width() -> None:
    est = ppi_mean_ci([1] * 10, [1] * 10, [1] * 30, method="share")
    assert est.se == 0.0
    assert est.estimate == 1.0
    assert (est.low, est.high) == pytest.approx(tuple(clopper_pearson(10, 10))[1:])


def test_normal_interval_with_no_spread_falls_back_to_clopper_pearson() -> None:
    est = ppi_mean_ci([1] * 10, [1] * 10, [1] * 30)
    assert est.low < 1.0 and est.high == 1.0


def test_bounds_clip_the_interval() -> None:
    est = ppi_mean_ci([1, 1, 1, 0], [1, 1, 1, 0], [1, 1, 1, 1], bounds=(0.0, 1.0))
    assert est.high <= 1.0 and est.labels_only.high <= 1.0


def test_mismatched_lengths_and_bad_lam_are_refused() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        ppi_mean_ci([1, 0], [1], [1])
    with pytest.raises(ValueError, match="lam must be between 0 and 1"):
        ppi_mean_ci([1, 0], [1, 0], [1], lam=1.5)
    with pytest.raises(ValueError, match="finite"):
        ppi_mean_ci([1, float("nan")], [1, 0], [1])


def test_coverage_under_a_biased_judge() -> None:
    """Sensitivity 0.9, specificity 0.7, 1,000 items, 150 labelled: the share interval
    covers the true accuracy in at least 93% of 400 seeded benchmarks (bench/bench_ppi.py
    runs 2,000 per setting); the judge alone almost never does at p = 0.9."""
    rng = np.random.default_rng(11)
    p, covered, judge_covered = 0.9, 0, 0
    for _ in range(400):
        truth = (rng.random(1000) < p).astype(float)
        verdicts = (rng.random(1000) < np.where(truth == 1, 0.9, 0.3)).astype(float)
        order = rng.permutation(1000)
        est = ppi_mean_ci(truth[order[:150]], verdicts[order[:150]], verdicts[order[150:]],
                          method="share")
        covered += est.low <= p <= est.high
        _, low, high = clopper_pearson(float(verdicts.sum()), 1000)
        judge_covered += low <= p <= high
    assert covered / 400 >= 0.93
    assert judge_covered / 400 <= 0.05
