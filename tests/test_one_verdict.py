"""Issue 32's property across the outputs: the report's verdict, the regression check and the
slice comparisons never show an interval on one side of zero with a decision on the other
(each calls ``hr_core.stats.compare_paired``; ``tests/test_comparison.py`` checks it alone
and ``tests/test_diff.py`` ``hr diff``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from hr_core.analysis.regression import compare_runs
from hr_core.analysis.verdict import verdict
from hr_core.stats import MIN_ITEMS
from hr_core.stats.slice_compare import slice_comparisons


@st.composite
def run_tables(draw: st.DrawFn) -> tuple[pd.DataFrame, pd.DataFrame]:
    arms = draw(st.integers(1, 8))
    items = draw(st.integers(1, 120))
    runs = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    accuracy = rng.random(arms)
    shift = draw(st.floats(-0.5, 0.5))

    def table(offset: float) -> pd.DataFrame:
        p = np.clip(accuracy + offset, 0, 1)
        correct = rng.random((arms, items, runs)) < p[:, None, None]
        frame = pd.DataFrame({
            "arm": np.repeat([f"arm{i}" for i in range(arms)], items * runs),
            "item_id": np.tile(np.repeat([f"q{i}" for i in range(items)], runs), arms),
            "run": np.tile(np.arange(1, runs + 1), arms * items),
            "correct": pd.array(correct.ravel(), dtype="boolean"),
        })
        frame["failure_kind"] = np.where(correct.ravel(), None, "wrong")
        frame["error"] = None
        return frame

    return table(0.0), table(shift)


def _sides_agree(low: float, high: float, decision: str, n_items: int) -> bool:
    excludes = low > 0 or high < 0
    if n_items < MIN_ITEMS:
        return decision in ("too few items", "")
    return (decision in ("better", "worse")) == excludes and (
        decision != "better" or low > 0) and (decision != "worse" or high < 0)


@settings(max_examples=60, deadline=None)
@given(run_tables())
def test_no_output_shows_an_interval_and_a_decision_that_disagree(
        tables: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    then, now = tables
    summary = now.groupby("arm", sort=False)["correct"].mean().rename("accuracy").reset_index()
    summary = summary.assign(ci_low=0.0, ci_high=1.0, runs=len(now) // len(summary))
    found = verdict(now, summary)
    for row in found.rows:
        if row.arm != found.best:
            assert _sides_agree(row.diff_low, row.diff_high, row.paired_verdict, row.n_items)
            assert (row.p_value < 1 - found.level) == (row.diff_low > 0 or row.diff_high < 0)
    report = compare_runs(now, then)
    for arm in report.arms:
        assert arm.ci_low is not None and arm.ci_high is not None
        assert _sides_agree(arm.ci_low, arm.ci_high, arm.decision, arm.n_items)
        if arm.status == "regression":
            assert arm.ci_high < 0
        if arm.status == "improvement":
            assert arm.ci_low > 0
    table = now.assign(share=now["correct"].astype(float)).pivot_table(
        index="item_id", columns="arm", values="share", aggfunc="mean", sort=False)
    half = np.arange(len(table)) % 2 == 0
    rows = slice_comparisons(table, {"k": [("a", np.flatnonzero(half)),
                                           ("b", np.flatnonzero(~half))]}, found.best)
    for row in rows.to_dict("records"):
        if row["verdict"]:
            assert _sides_agree(row["diff_low"], row["diff_high"], row["verdict"],
                                row["paired"])
