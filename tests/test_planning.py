"""The sample-size planner."""

from __future__ import annotations

import pytest

from hr_core.stats.sample_size import detectable_difference, paired_power, plan_sample_size


def test_planner_steps_from_the_normal_formula_to_the_exact_tests_power() -> None:
    # normal: (1.959964 + 0.841621)^2 * (0.25 - 0.05^2) / 0.05^2 = 777.05 -> 778; the exact
    # McNemar test hr runs has less power there, so more items are needed
    n = plan_sample_size(0.05, discordance=0.25)
    assert n > 778
    assert paired_power(n, 0.05, 0.25) >= 0.8 > paired_power(n - 1, 0.05, 0.25)
    assert detectable_difference(n, discordance=0.25) == pytest.approx(0.05, abs=1e-3)


def test_exact_power_is_a_sum_over_the_discordant_counts() -> None:
    """n = 10, q = 1 (every item discordant): the sign test at 0.05 rejects at 9 or 10
    of 10 (two-sided p 0.021), so the power for a share 0.8 favouring a is
    P(Bin(10, 0.8) >= 9) = 0.3758."""
    assert paired_power(10, 0.6, 1.0) == pytest.approx(0.375809638, rel=1e-6)


def test_planner_refuses_impossible_rates() -> None:
    with pytest.raises(ValueError, match="discordance of at least"):
        plan_sample_size(0.3, discordance=0.05)
    with pytest.raises(ValueError, match="cannot be detected"):
        plan_sample_size(0.0, discordance=0.2)


def _runs(correct_by_arm: dict[str, list[bool]]):
    import pandas as pd

    rows = [{"arm": arm, "item_id": f"q{i}", "run": 1, "correct": ok,
             "failure_kind": None if ok else "wrong", "error": None}
            for arm, values in correct_by_arm.items() for i, ok in enumerate(values)]
    runs = pd.DataFrame(rows)
    runs["correct"] = runs["correct"].astype("boolean")
    return runs


def test_the_verdict_holds_significantly_worse_to_bonferroni_over_the_pairs() -> None:
    """b loses 6 of 40 items to a: worse alone, but with the interval made at level
    1 - 0.05/3 (Bonferroni over the 3 pairs of 3 arms) it covers zero: no claim, and the
    interval shown is that one (the Holm step that corrected the p-value alone is gone)."""
    import pandas as pd

    from hr_core.analysis.verdict import verdict

    a = [True] * 40
    b = [False] * 6 + [True] * 34
    runs = _runs({"a": a, "b": b, "c": a})
    summary = pd.DataFrame({"arm": ["a", "c", "b"], "accuracy": [1.0, 1.0, 34 / 40],
                            "ci_low": [0.9, 0.9, 0.7], "ci_high": [1.0, 1.0, 0.95],
                            "runs": [40, 40, 40]})
    got = verdict(runs, summary)
    row = {r.arm: r for r in got.rows}["b"]
    assert 0.05 / 3 <= row.p_value < 0.05
    assert row.diff_low < 0 < row.diff_high
    assert row.paired_verdict == "no detectable change" and not row.significant
    assert got.pairs == 3 and "Bonferroni over all 3 pairs" in got.correction
    two = verdict(_runs({"a": a, "b": b}), summary[summary.arm != "c"])
    assert {r.arm: r for r in two.rows}["b"].significant  # one pair: nothing to correct
    assert "Significantly worse: b" in two.headline()
