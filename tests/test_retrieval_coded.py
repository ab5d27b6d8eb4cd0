"""The retrieval figures from counts of a few codes (issue 36's write-phase target): the
exact weighted sum against math.fsum, compare_paired_counts against compare_paired, and
retrieval_figures' every figure, bit for bit, against the one interval and the one
comparison applied to each run's figure (figures_of)."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hr_core.stats.comparison import compare_paired, compare_paired_counts
from hr_core.stats.intervals import accuracy_interval, exact_sum
from hr_core.stats.retrieval import figures_of, retrieval_figures
from hr_core.stats.retrieval_runs import RunCodes, RunGroups

_FLOATS = st.floats(min_value=-1e200, max_value=1e200, allow_nan=False, allow_subnormal=True)


@given(st.lists(st.tuples(_FLOATS, st.integers(0, 1000)), max_size=40))
def test_exact_sum_with_counts_is_fsum_of_the_items(pairs: list[tuple[float, int]]) -> None:
    values = np.array([v for v, _ in pairs], dtype=np.float64)
    counts = np.array([c for _, c in pairs], dtype=np.int64)
    got = exact_sum(values, counts)
    expected = math.fsum(v for v, c in pairs for _ in range(c))
    assert got == expected and math.copysign(1.0, got) == math.copysign(1.0, expected)


def test_exact_sum_with_counts_by_hand() -> None:
    assert exact_sum(np.array([0.1, 0.2]), np.array([3, 1])) == math.fsum([0.1] * 3 + [0.2])
    # 1e16 + 1 + 1 - 1e16 = 2 exactly; added left to right, each 1 is lost
    assert exact_sum(np.array([1e16, 1.0, -1e16]), np.array([1, 2, 1])) == 2.0
    assert sum([1e16, 1.0, 1.0, -1e16]) == 0.0
    assert exact_sum(np.array([1e100, 1.0, -1e100]), np.array([1, 5, 1])) == 5.0
    assert exact_sum(np.array([math.inf, 1.0]), np.array([2, 0])) == math.inf
    assert math.isnan(exact_sum(np.array([math.nan, 1.0]), np.array([1, 1])))
    assert exact_sum(np.array([]), np.array([], dtype=np.int64)) == 0.0


_SHARES = st.sampled_from([0.0, 1.0, 0.5, 1 / 3, 2 / 3, 0.25, 0.1, 1 / 7])


@settings(max_examples=200)
@given(st.lists(st.tuples(_SHARES, _SHARES), min_size=0, max_size=60),
       st.sampled_from([1, 3]))
def test_compare_paired_counts_is_compare_paired(items: list[tuple[float, float]],
                                                 family: int) -> None:
    now = np.array([a for a, _ in items], dtype=np.float64)
    then = np.array([b for _, b in items], dtype=np.float64)
    diffs, counts = np.unique(now - then, return_counts=True)
    got = compare_paired_counts(diffs, counts, family_size=family)
    expected = compare_paired(now, then, family_size=family)
    assert _same(got, expected)


def test_compare_paired_counts_checks_its_input() -> None:
    with pytest.raises(ValueError, match="equal lengths"):
        compare_paired_counts([0.5], [1, 2])
    with pytest.raises(ValueError, match="negative"):
        compare_paired_counts([0.5], [-1])
    assert compare_paired_counts([0.5], [0]).decision == "too few items"


def _same(a: tuple, b: tuple) -> bool:
    def one(x: object, y: object) -> bool:
        if isinstance(x, float) and isinstance(y, float):
            return (math.isnan(x) and math.isnan(y)) or x == y
        return x == y
    return len(a) == len(b) and all(one(x, y) for x, y in zip(a, b, strict=True))


@st.composite
def _runs(draw: st.DrawFn) -> tuple[pd.DataFrame, tuple[int, ...]]:
    """One run per (arm, item), every run judged, at most one gold rank a run: the coded case."""
    arms = draw(st.integers(1, 3))
    items = draw(st.integers(1, 25))
    containment = draw(st.booleans())
    top = draw(st.sampled_from([3, 12]))
    rows = []
    for a in range(arms):
        for i in range(items):
            if a and i and draw(st.integers(0, 5)) == 0:
                continue  # an item a later arm does not have (the pairs: the items both have)
            rank = draw(st.integers(0, top))
            gold = None if containment else draw(st.integers(0, 3))
            rows.append({"arm": f"arm{a}", "item_index": i, "item_id": f"q{i}",
                         "gold_ranks": str(rank) if rank else "", "gold_n": gold})
    ks = draw(st.sampled_from([(1, 3, 5, 10), (2,), (1, 4)]))
    return pd.DataFrame(rows), ks


@settings(max_examples=120, deadline=None)
@given(_runs())
def test_retrieval_figures_coded_are_the_run_figures_summarised(
        drawn: tuple[pd.DataFrame, tuple[int, ...]]) -> None:
    runs, ks = drawn
    assert RunCodes.of(RunGroups(runs), ks) is not None  # the case under test
    summary, differences = retrieval_figures(runs, ks, figures_shown=["hit@2", "mrr", "ndcg@4",
                                                                      "recall@1"])
    gold = runs["gold_n"].to_numpy(dtype=np.float64, na_value=np.nan)
    per_arm = {arm: {name: pd.Series(values, index=part["item_id"].to_numpy())
                     for name, values in figures_of(list(part["gold_ranks"]),
                                                    gold[part.index.to_numpy()], ks).items()}
               for arm, part in runs.groupby("arm", sort=False)}
    expected_rows = 0
    for arm, figures in per_arm.items():
        for name, series in figures.items():
            values = series.to_numpy()
            kept = values[~np.isnan(values)]
            if not len(kept):
                continue
            expected_rows += 1
            metric, _, depth = name.partition("@")
            row = summary[(summary["arm"] == arm) & (summary["figure"] == metric)
                          & ((summary["k"] == int(depth)) if depth else summary["k"].isna())]
            assert len(row) == 1, name
            interval = accuracy_interval(kept, np.ones(len(kept), dtype=np.int64))
            got = tuple(float(row.iloc[0][c]) for c in ("value", "ci_low", "ci_high"))
            assert _same(got, tuple(interval)), (arm, name)
            assert int(row.iloc[0]["items"]) == len(kept) == int(row.iloc[0]["runs"])
    assert len(summary) == expected_rows
    arms = list(per_arm)
    family = max(len(arms) * (len(arms) - 1) // 2, 1)
    for (a, b), name in [(p, n) for p in combinations(arms, 2)
                         for n in ("hit@2", "mrr", "ndcg@4", "recall@1")]:
        if name not in per_arm[a]:
            continue
        shared = per_arm[a][name].index.intersection(per_arm[b][name].index, sort=False)
        then = per_arm[a][name][shared].to_numpy()
        now = per_arm[b][name][shared].to_numpy()
        both = ~(np.isnan(then) | np.isnan(now))
        row = differences[(differences["a"] == a) & (differences["b"] == b)
                          & (differences["figure"] == name)]
        if not both.any():
            assert row.empty
            continue
        compared = compare_paired(now[both], then[both], family_size=family)
        assert _same(tuple(row.iloc[0][["diff", "ci_low", "ci_high", "p_value", "items",
                                        "decision", "method"]]),
                     (compared.estimate, compared.low, compared.high, compared.p_value,
                      compared.n_items, compared.decision, compared.method)), (a, b, name)
