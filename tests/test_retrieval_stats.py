"""Retrieval figures (issue 36 item 3): hand-computed values, their intervals through the
one interval function, paired differences through the one comparison, and properties."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hr_core.stats import accuracy_interval, compare_paired
from hr_core.stats.retrieval import (
    CONTAINMENT,
    GOLD,
    figures_of,
    retrieval_differences,
    retrieval_summary,
    run_figures,
)


def test_one_runs_figures_by_hand() -> None:
    # gold passages g1, g2, g3; g1 found at rank 3, g2 at rank 1, g3 not found
    got = run_figures([1, 3], 3, ks=(1, 2, 5))
    assert got["hit@1"] == 1.0 and got["hit@2"] == 1.0
    assert got["recall@1"] == pytest.approx(1 / 3) and got["recall@5"] == pytest.approx(2 / 3)
    assert got["precision@1"] == 1.0 and got["precision@2"] == 0.5
    assert got["precision@5"] == pytest.approx(2 / 5)
    assert got["mrr"] == 1.0
    # nDCG@5: (1/log2(2) + 1/log2(4)) / (1/log2(2) + 1/log2(3) + 1/log2(4)) = 1.5 / 2.1309
    assert got["ndcg@5"] == pytest.approx(1.5 / (1 + 1 / math.log2(3) + 0.5))
    assert got["ndcg@1"] == 1.0
    missed = run_figures([], 2, ks=(10,))
    assert missed == {"hit@10": 0.0, "precision@10": 0.0, "recall@10": 0.0, "ndcg@10": 0.0,
                      "mrr": 0.0}


def test_one_context_holding_two_gold_passages_counts_once_for_precision_and_ndcg() -> None:
    got = run_figures([1, 1], 2, ks=(1,))
    assert got["recall@1"] == 1.0 and got["precision@1"] == 1.0 and got["ndcg@1"] == 1.0


def test_answer_containment_leaves_recall_and_ndcg_undefined() -> None:
    got = run_figures([2], None, ks=(3,))
    assert got["hit@3"] == 1.0 and got["mrr"] == 0.5
    assert math.isnan(got["recall@3"]) and math.isnan(got["ndcg@3"])


def _runs(rows: list[tuple[str, str, str | None, float | None]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["arm", "item_id", "gold_ranks", "gold_n"])


def test_the_summary_is_the_mean_over_items_with_the_one_interval() -> None:
    runs = _runs([("a", "q1", "1", 1), ("a", "q2", "3", 1), ("a", "q3", "", 1),
                  ("a", "q4", None, None), ("b", "q1", None, None)])  # no contexts: left out
    summary = retrieval_summary(runs, ks=(1, 3)).set_index(["arm", "figure", "k"])
    hit1 = summary.loc[("a", "hit", 1)]
    assert hit1["value"] == pytest.approx(1 / 3) and hit1["items"] == 3
    assert (hit1["ci_low"], hit1["ci_high"]) == pytest.approx(
        tuple(accuracy_interval([1, 0, 0], [1, 1, 1]))[1:])
    mrr = summary.xs("mrr", level="figure")
    assert float(mrr["value"].iloc[0]) == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert set(summary["relevance"]) == {GOLD}
    assert "b" not in summary.index.get_level_values("arm")


def test_runs_of_one_item_are_one_cluster() -> None:
    runs = _runs([("a", "q1", "1", 1), ("a", "q1", "", 1), ("a", "q2", "1", 1),
                  ("a", "q2", "1", 1), ("a", "q3", "", 1), ("a", "q3", "", 1)])
    row = retrieval_summary(runs, ks=(1,)).iloc[0]
    assert row["value"] == pytest.approx(0.5) and row["items"] == 3 and row["runs"] == 6
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(
        tuple(accuracy_interval([1, 2, 0], [2, 2, 2]))[1:])


def test_without_any_gold_passage_relevance_is_answer_containment_named_so() -> None:
    runs = _runs([("a", "q1", "2", None), ("a", "q2", "", None)])
    summary = retrieval_summary(runs, ks=(1, 3))
    assert set(summary["relevance"]) == {CONTAINMENT}
    assert set(summary["figure"]) == {"hit", "precision", "mrr"}  # no recall, no nDCG


def test_no_contexts_gives_an_empty_summary() -> None:
    assert retrieval_summary(pd.DataFrame({"arm": ["a"], "item_id": ["q1"]})).empty
    assert retrieval_summary(_runs([("a", "q1", None, None)])).empty


def test_differences_are_the_one_paired_comparison_corrected_over_pairs() -> None:
    items = [f"q{i}" for i in range(10)]
    runs = _runs([("a", q, "1" if i < 3 else "", 1) for i, q in enumerate(items)]
                 + [("b", q, "1" if i < 9 else "", 1) for i, q in enumerate(items)]
                 + [("c", q, "2", 1) for q in items])
    diffs = retrieval_differences(runs, ks=(1,)).set_index(["a", "b", "figure"])
    row = diffs.loc[("a", "b", "hit@1")]
    expected = compare_paired([1] * 9 + [0], [1] * 3 + [0] * 7, family_size=3)
    assert (row["diff"], row["ci_low"], row["ci_high"]) == pytest.approx(
        (expected.estimate, expected.low, expected.high))
    assert row["decision"] == expected.decision == "better"
    assert "Bonferroni over 3" in row["method"]
    assert diffs.loc[("a", "c", "mrr")]["diff"] == pytest.approx(0.5 - 0.3)


rank_lists = st.lists(st.integers(min_value=1, max_value=60), max_size=8)


@given(rank_lists, st.integers(min_value=1, max_value=8))
def test_figures_stay_in_range_and_hit_grows_with_k(ranks: list[int], extra: int) -> None:
    n_gold = max(len(ranks), 1) + extra - 1
    ks = (1, 2, 3, 5, 10, 20, 50)
    got = run_figures(sorted(ranks), n_gold, ks)
    hits = [got[f"hit@{k}"] for k in ks]
    recalls = [got[f"recall@{k}"] for k in ks]
    assert hits == sorted(hits) and recalls == sorted(recalls)
    assert all(0 <= r <= 1 for r in recalls)
    assert 0 <= got["mrr"] <= 1
    assert all(0 <= got[f"{m}@{k}"] <= 1 + 1e-12 for m in ("precision", "ndcg") for k in ks)
    assert all(got[f"hit@{k}"] >= got[f"recall@{k}"] for k in ks)


@given(st.lists(st.tuples(rank_lists, st.one_of(st.none(), st.integers(1, 8))), max_size=12))
def test_the_figures_of_many_runs_are_each_runs_figures(
        runs: list[tuple[list[int], int | None]]) -> None:
    ks = (1, 3, 10)
    runs = [(ranks[:n] if n else ranks, n) for ranks, n in runs]  # one rank per gold passage
    texts = [" ".join(map(str, sorted(ranks))) for ranks, _ in runs]
    gold = np.array([math.nan if n is None else n for _, n in runs], dtype=float)
    together = figures_of(texts, gold, ks)
    for index, (ranks, n) in enumerate(runs):
        alone = run_figures(sorted(ranks), n, ks)
        for name, value in alone.items():
            got = together[name][index]
            assert (math.isnan(got) and math.isnan(value)) or got == pytest.approx(value)


def test_the_spec_names_the_depths_and_a_run_reads_them_from_its_manifest() -> None:
    from pydantic import ValidationError

    from hr_core.analysis.benchmark import Benchmark
    from hr_core.run.spec import BenchmarkSpec

    spec = BenchmarkSpec.model_validate({"name": "r", "reference": "ref.jsonl",
                                         "arms": {"a": "builtins:str"},
                                         "retrieval_k": [5, 1, 5]})
    assert spec.retrieval_k == [1, 5]
    with pytest.raises(ValidationError, match="retrieval_k needs depths from 1 to 50"):
        BenchmarkSpec.model_validate({"name": "r", "reference": "ref.jsonl",
                                      "arms": {"a": "builtins:str"}, "retrieval_k": [0]})
    runs = _runs([("a", "q1", "2", 1)])
    bench = Benchmark(runs.assign(run=1), {"retrieval_k": [2]})
    assert bench.retrieval_k == (2,)
    assert bench.retrieval_summary()["k"].dropna().tolist() == [2, 2, 2, 2]
    assert Benchmark(runs.assign(run=1), {}).retrieval_k == (1, 3, 5, 10)
