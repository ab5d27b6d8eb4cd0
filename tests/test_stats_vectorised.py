"""The vectorised paired differences equal the straightforward item-by-item computation.

``hr_core.stats.paired_difference`` and ``hr_core.analysis.outcomes.paired_differences``
work on numpy arrays and one grouping of the runs table (issue 14: a 1M-run report).
Here they are checked against the loops they replaced, on random data.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hr_core.analysis.outcomes import OUTCOMES, outcome_counts, paired_differences
from hr_core.stats import MIN_ITEMS, TOO_FEW_ITEMS, compare_paired, paired_difference, t_for
from hr_core.stats.accuracy import item_accuracy
from hr_core.stats.distributions import t_two_sided_p
from hr_core.stats.intervals import _sign_test_p, no_spread_interval


def _loop_paired_difference(a: list[float], b: list[float], level: float = 0.95) -> tuple:
    """The pure-Python computation hr used before (one item at a time)."""
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    if n == 0:
        return (math.nan, math.nan, math.nan, math.nan, 0, TOO_FEW_ITEMS)
    mean = sum(diffs) / n
    positive = sum(1 for d in diffs if d > 0)
    negative = sum(1 for d in diffs if d < 0)
    if n == 1:
        low, high = no_spread_interval(mean, 1, level)
        return (mean, low, high, _sign_test_p(positive, negative), 1, TOO_FEW_ITEMS)
    var = sum((d - mean) ** 2 for d in diffs) / (n - 1)
    binary = all(v in (0.0, 1.0) for v in (*a, *b))
    if var <= 0:
        low, high = no_spread_interval(mean, n, level)
        p = _sign_test_p(positive, negative)
    else:
        se = math.sqrt(var / n)
        half = t_for(level, n - 1) * se
        low, high = max(-1.0, mean - half), min(1.0, mean + half)
        p = _sign_test_p(positive, negative) if binary else max(
            t_two_sided_p(mean / se, n - 1), 2.2250738585072014e-308)
    if n < MIN_ITEMS:
        verdict = TOO_FEW_ITEMS
    elif p < 1 - level and low > 0:
        verdict = "higher"
    elif p < 1 - level and high < 0:
        verdict = "lower"
    else:
        verdict = "no clear difference"
    return (mean, low, high, p, n, verdict)


def _same(got: tuple, want: tuple) -> None:
    """Equal counts and verdict; floats equal to the last few bits (the vectorised sums
    are correctly rounded, the loop's accumulate rounding errors)."""
    assert got[4] == want[4]
    assert got[5] == want[5]
    for g, w in zip(got[:4], want[:4], strict=True):
        if math.isnan(w):
            assert math.isnan(g)
        else:
            assert g == pytest.approx(w, rel=1e-12, abs=1e-15)


_share = st.sampled_from([0.0, 1.0, 0.5, 1 / 3, 2 / 3, 0.25, 0.75])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_share | st.floats(0, 1), _share), max_size=60))
def test_paired_difference_equals_the_item_loop(pairs: list[tuple[float, float]]) -> None:
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    want = _loop_paired_difference(a, b)
    _same(tuple(paired_difference(a, b)), want)
    _same(tuple(paired_difference(np.array(a), np.array(b))), want)


@pytest.mark.parametrize("n", [0, 1, 5, 6, 40, 1000, 20_000])
def test_paired_difference_on_many_random_items(n: int) -> None:
    rng = np.random.default_rng(n)
    for binary in (True, False):
        if binary:
            a, b = rng.integers(0, 2, n).astype(float), rng.integers(0, 2, n).astype(float)
        else:
            a, b = rng.integers(0, 4, n) / 3, rng.random(n)
        _same(tuple(paired_difference(a, b)), _loop_paired_difference(a.tolist(), b.tolist()))


def _loop_paired_differences(runs: pd.DataFrame) -> list[tuple]:
    """The per-arm loop ``paired_differences`` replaced: item_accuracy per arm, common items."""
    arms = list(dict.fromkeys(runs["arm"]))
    per_arm = {arm: item_accuracy(runs, arm) for arm in arms}
    baseline = max(arms, key=lambda a: per_arm[a].mean() if len(per_arm[a]) else -1.0)
    rows = []
    for arm in arms:
        if arm != baseline:
            common = per_arm[arm].index.intersection(per_arm[baseline].index)
            got = compare_paired(per_arm[arm].loc[common].tolist(),
                                 per_arm[baseline].loc[common].tolist())
            rows.append((arm, baseline, (got.estimate, got.low, got.high, got.p_value,
                                         got.n_items, got.decision)))
    return rows


@pytest.mark.parametrize("seed", range(6))
def test_paired_differences_equal_the_per_arm_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    items, arms, runs_per_item = int(rng.integers(1, 400)), int(rng.integers(2, 5)), 3
    n = items * arms * runs_per_item
    correct = pd.array(rng.random(n) < rng.random(), dtype="boolean")
    correct[rng.random(n) < 0.1] = pd.NA  # unscored runs
    kinds = np.where(rng.random(n) < 0.05, "budget_stop", None)  # runs never made
    runs = pd.DataFrame({
        "arm": np.repeat([f"arm{i}" for i in range(arms)], items * runs_per_item),
        "item_id": np.tile(np.repeat([f"q{i}" for i in range(items)], runs_per_item), arms),
        "correct": correct, "failure_kind": kinds,
    }).sample(frac=1.0, random_state=seed).reset_index(drop=True)  # any row order
    got = paired_differences(runs)
    want = _loop_paired_differences(runs)
    assert [(r.arm, r.baseline) for r in got] == [(a, b) for a, b, _ in want]
    for row, (_, _, expected) in zip(got, want, strict=True):
        _same((row.diff, row.ci_low, row.ci_high, row.p_value, row.n_items, row.verdict),
              expected)


def _strings_outcome_counts(runs: pd.DataFrame) -> pd.DataFrame:
    """The string-category version ``outcome_counts`` replaced."""
    arms = list(dict.fromkeys(runs["arm"]))
    kind = runs["failure_kind"]
    correct = runs["correct"].astype("boolean")
    has_kind = (kind.notna() & (kind.astype(object) != "")).to_numpy(dtype=bool)
    categories = np.where(
        has_kind, kind.astype(object).to_numpy(),
        np.where(correct.isna(), "unscored",
                 np.where(correct.fillna(False).to_numpy(dtype=bool), "correct", "wrong")))
    counts = (pd.DataFrame({"arm": runs["arm"].to_numpy(), "outcome": categories})
              .groupby(["arm", "outcome"]).size().unstack(fill_value=0))
    return counts.reindex(index=arms, columns=list(OUTCOMES), fill_value=0).astype(int)


@pytest.mark.parametrize("seed", range(4))
def test_outcome_counts_equal_the_string_categories(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 2000
    correct = pd.array(rng.random(n) < 0.6, dtype="boolean")
    correct[rng.random(n) < 0.1] = pd.NA
    kinds = rng.choice(np.array([None, None, None, "", "wrong", "budget_stop", "not a kind",
                                 *OUTCOMES[1:3]], dtype=object), n)
    runs = pd.DataFrame({"arm": rng.choice(["b", "a", "c"], n), "correct": correct,
                         "failure_kind": kinds})
    pd.testing.assert_frame_equal(outcome_counts(runs), _strings_outcome_counts(runs),
                                  check_names=False)
