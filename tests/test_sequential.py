"""The anytime-valid paired confidence sequence (hr_core.stats.sequential)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hr_core.stats.sequential import PairedSequence, first_decisions


def _plain_log_capital(diffs: list[float], difference: float) -> tuple[float, float]:
    """Waudby-Smith & Ramdas' hedged capital at one mean, written out item by item:
    eq. 13's predictable estimates, aGRAPA bets split by side, truncated at c/m, c = 1/2."""
    m = (difference + 1) / 2
    up = down = 0.0
    total, squares = 0.0, 0.0
    for i, d in enumerate(diffs, start=1):
        y = (d + 1) / 2
        mu = (0.5 + total) / i
        var = (0.25 + squares) / i
        raw = (mu - m) / (var + (mu - m) ** 2)
        bet_up = min(max(raw, 0.0), 0.5 / m)
        bet_down = min(max(-raw, 0.0), 0.5 / (1 - m))
        up += math.log(1 + bet_up * (y - m))
        down += math.log(1 - bet_down * (y - m))
        total += y
        squares += (y - (0.5 + total) / (i + 1)) ** 2
    return up, down


def test_capital_equals_the_papers_item_by_item_definition() -> None:
    rng = np.random.default_rng(7)
    diffs = rng.choice([-1.0, 0.0, 0.5, 1.0], size=97).tolist()
    seq = PairedSequence(alpha=0.05, margin=0.03)
    for start in range(0, 97, 13):  # batches of uneven size give the same sums
        seq.update(diffs[start:start + 13])
    for point, logs in seq._points.items():
        assert logs == pytest.approx(list(_plain_log_capital(diffs, point)), rel=1e-9)


def test_incremental_and_vectorised_decisions_agree() -> None:
    rng = np.random.default_rng(3)
    d = rng.choice([-1.0, 0.0, 1.0], p=[0.1, 0.75, 0.15], size=(40, 600))
    used, decision = first_decisions(d, 0.05, margin=0.02, batch=20, min_items=30)
    codes = {"better": 1, "worse": -1, "equivalent": 2, "undecided": 0}
    for row in range(40):
        seq = PairedSequence(alpha=0.05, margin=0.02)
        got = 0
        for start in range(0, 600, 20):
            seq.update(d[row, start:start + 20])
            if seq.n >= 30 and seq.decision() != "undecided":
                got = codes[seq.decision()]
                break
        assert (seq.n, got) == (int(used[row]), int(decision[row]))


def test_a_clear_difference_is_found_and_the_interval_is_on_its_side() -> None:
    seq = PairedSequence(alpha=0.05)
    seq.update(np.ones(40))
    assert seq.decision() == "better"
    low, high = seq.interval()
    assert 0 < low < high <= 1
    worse = PairedSequence(alpha=0.05)
    worse.update(-np.ones(40))
    assert worse.decision() == "worse"


def test_equal_arms_rarely_declare_a_difference_under_continuous_monitoring() -> None:
    """Ville's inequality: at level 0.95 at most 5% of sequences ever cross (fixed seed)."""
    rng = np.random.default_rng(11)
    d = rng.choice([-1.0, 0.0, 1.0], p=[0.15, 0.7, 0.15], size=(400, 1000))
    _, decision = first_decisions(d, 0.05, batch=10, min_items=10)
    assert np.isin(decision, (1, -1)).mean() <= 0.05


def test_equivalence_needs_the_whole_sequence_inside_the_margin() -> None:
    seq = PairedSequence(alpha=0.05, margin=0.05)
    seq.update(np.zeros(3000))  # the arms always agree
    assert seq.decision() == "equivalent"
    assert PairedSequence(alpha=0.05).decision() == "undecided"  # no margin: never


@pytest.mark.parametrize("bad", [[1.5], [float("nan")], [-2.0]])
def test_values_outside_minus_one_to_one_are_refused(bad: list[float]) -> None:
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        PairedSequence().update(bad)
