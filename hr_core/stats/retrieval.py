"""Retrieval figures per arm: hit@k, recall@k, precision@k, MRR and nDCG@k, each with
its interval, and paired differences between arms.

Computed from the runs table's ``gold_ranks`` and ``gold_n``
(:mod:`hr_core.scoring.relevance`): for one run whose gold passages were found at ranks
``r`` (one per gold passage found, from 1) out of ``n`` gold passages,

- hit@k: 1 when some ``r <= k`` (a gold passage among the first k), else 0;
- recall@k: ``|{r <= k}| / n`` (the share of the item's gold passages among the first k);
- precision@k: the distinct ranks ``<= k`` over ``k`` (relevant contexts among the first
  k; a context holding two gold passages counts once);
- MRR: ``1 / min(r)``, 0 when none was found (over every context the run kept);
- nDCG@k: binary gains, ``sum(1 / log2(1 + r))`` over the distinct ranks ``<= k``, over
  its ideal ``sum_{i <= min(n, k)} 1 / log2(1 + i)``.

The figures are over the items with gold passages and the runs that returned contexts.
Where no item of the run names a gold passage, relevance is answer containment (the DPR
convention: a context holding an accepted answer) and is named so (``relevance``
column); recall and nDCG are then undefined (nobody counted the relevant passages) and
left out. Each figure is the mean over items of each item's mean over its runs, with
:func:`~hr_core.stats.intervals.accuracy_interval`'s interval: Clopper-Pearson's for one
run of a 0/1 figure per item, item-clustered otherwise (runs > 1, or fractional values).
Differences between arms are :func:`~hr_core.stats.comparison.compare_paired` over the
items both arms have, Bonferroni-corrected over the arm pairs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from hr_core.stats.comparison import Comparison, compare_paired, compare_paired_counts
from hr_core.stats.intervals import (
    Interval,
    accuracy_interval,
    clopper_pearson,
    clustered_mean_ci,
    exact_sum,
)
from hr_core.stats.retrieval_runs import (
    CONTAINMENT,
    GOLD,
    METRICS,
    RunCodes,
    RunGroups,
    each_figure,
    figure_names,
    ranks_of,
)

__all__ = ["CONTAINMENT", "GOLD", "KS", "METRICS", "SUMMARY_COLUMNS", "figures_of",
           "retrieval_change", "retrieval_differences", "retrieval_figures",
           "retrieval_summary", "run_figures"]

KS = (1, 3, 5, 10)
"""The depths k reported by default."""

SUMMARY_COLUMNS = ("arm", "figure", "k", "value", "ci_low", "ci_high", "items", "runs",
                   "relevance")
"""The columns of :func:`retrieval_summary`."""
_COLUMNS = SUMMARY_COLUMNS


def run_figures(ranks: Sequence[int], n_gold: int | None, ks: Sequence[int] = KS
                ) -> dict[str, float]:
    """One run's figures by name (``hit@1``, ``recall@5``, ``mrr``, ...); recall and nDCG
    are NaN without ``n_gold`` (answer containment).

    Example:
        >>> got = run_figures([2, 4], 3, ks=(1, 3))
        >>> got["hit@1"], got["hit@3"], round(got["recall@3"], 3), got["mrr"]
        (0.0, 1.0, 0.333, 0.5)
        >>> round(got["precision@3"], 3), round(got["ndcg@3"], 3)
        (0.333, 0.296)
    """
    distinct = sorted(set(ranks))
    figures: dict[str, float] = {}
    for k in ks:
        found = sum(1 for r in ranks if r <= k)
        top = [r for r in distinct if r <= k]
        figures[f"hit@{k}"] = 1.0 if top else 0.0
        figures[f"precision@{k}"] = len(top) / k
        if n_gold:
            figures[f"recall@{k}"] = min(found / n_gold, 1.0)
            ideal = sum(1 / math.log2(1 + i) for i in range(1, min(n_gold, k) + 1))
            figures[f"ndcg@{k}"] = sum(1 / math.log2(1 + r) for r in top) / ideal
        else:
            figures[f"recall@{k}"] = figures[f"ndcg@{k}"] = math.nan
    figures["mrr"] = 1 / distinct[0] if distinct else 0.0
    return figures


def figures_of(ranks: Sequence[str] | pa.Array | pa.ChunkedArray, n_gold: np.ndarray,
               ks: Sequence[int] = KS) -> dict[str, np.ndarray]:
    """:func:`run_figures` of many runs at once: ``ranks`` their ``gold_ranks`` texts,
    ``n_gold`` their ``gold_n`` (NaN: answer containment); an array per figure.

    Example:
        >>> got = figures_of(["2 4", ""], np.array([3.0, 1.0]), ks=(3,))
        >>> got["hit@3"].tolist(), got["mrr"].tolist()
        ([1.0, 0.0], [0.5, 0.0])
    """
    flat, owner = ranks_of(ranks)
    return dict(each_figure(flat, owner, n_gold, len(ranks), ks))


def retrieval_figures(runs: pd.DataFrame, ks: Sequence[int] = KS, level: float = 0.95,
                      figures_shown: Sequence[str] | None = None
                      ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`retrieval_summary` and :func:`retrieval_differences` in one pass over the
    runs (each figure computed, summarised and let go in turn)."""
    summary_rows: dict[tuple[int, int], dict[str, Any]] = {}
    difference_rows: list[dict[str, Any]] = []
    if "gold_ranks" not in runs.columns or not runs["gold_ranks"].notna().any():
        return (_summary_frame([]), pd.DataFrame(columns=_DIFFERENCE_COLUMNS))
    groups = RunGroups(runs)
    deepest = max(ks)
    shown = list(figures_shown or (f"hit@{deepest}", f"recall@{deepest}", "mrr"))
    order = {name: i for i, name in enumerate(
        metric if k is None else f"{metric}@{k}" for metric, k in figure_names(ks))}
    pairs = list(combinations(range(len(groups.arms)), 2))
    family = max(len(pairs), 1)
    coded = RunCodes.of(groups, ks)
    compared: dict[str, _Compare] = {}
    for name, intervals, compare in (_summed(groups, ks, level) if coded is None
                                     else _coded(coded, level)):
        metric, _, depth = name.partition("@")
        for a, arm in enumerate(groups.arms):
            found = intervals(a)
            if found is None:
                continue
            (estimate, low, high), items, made = found
            summary_rows[(a, order[name])] = {
                "arm": arm, "figure": metric, "k": int(depth) if depth else None,
                "value": estimate, "ci_low": low, "ci_high": high, "items": items,
                "runs": made, "relevance": groups.relevance}
        if name in shown:
            compared[name] = compare
    for a, b in pairs:
        for name in shown:
            compare_arms = compared.get(name)
            got = None if compare_arms is None else compare_arms(a, b, level, family)
            if got is None:
                continue
            difference_rows.append({
                "a": groups.arms[a], "b": groups.arms[b], "figure": name, "diff": got.estimate,
                "ci_low": got.low, "ci_high": got.high, "p_value": got.p_value,
                "items": got.n_items, "decision": got.decision, "method": got.method})
    return (_summary_frame([summary_rows[key] for key in sorted(summary_rows)]),
            pd.DataFrame(difference_rows, columns=_DIFFERENCE_COLUMNS))


_Intervals = Callable[[int], "tuple[Interval, int, int] | None"]
"""Arm ``a``'s interval of a figure, its items and its runs (``None``: no run)."""
_Compare = Callable[[int, int, float, int], "Comparison | None"]
"""Arms ``a`` and ``b``'s paired comparison of a figure at a level over a family
(``None``: no item both have)."""


def _summed(groups: RunGroups, ks: Sequence[int], level: float
            ) -> Iterator[tuple[str, _Intervals, _Compare]]:
    """Each figure from its sums and runs per (arm, item) (:meth:`RunGroups.each_sum`)."""
    for name, sums, counts in groups.each_sum(ks):

        def intervals(a: int, sums: np.ndarray = sums, counts: np.ndarray = counts
                      ) -> tuple[Interval, int, int] | None:
            part = slice(groups.bounds[a], groups.bounds[a + 1])
            number = counts[part]
            keep = number > 0
            if not keep.any():
                return None
            return (accuracy_interval(sums[part][keep], number[keep], level),
                    int(keep.sum()), int(number.sum()))

        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(counts > 0, sums / counts, np.nan)

        def compare(a: int, b: int, level: float, family: int, means: np.ndarray = means
                    ) -> Comparison | None:
            then, now = _aligned(groups, means, a, b)
            if not len(then):
                return None
            return compare_paired(now, then, level=level, family_size=family)

        yield name, intervals, compare


def _coded(coded: RunCodes, level: float) -> Iterator[tuple[str, _Intervals, _Compare]]:
    """Each figure from the counts of each arm's run codes (:class:`RunCodes`): the
    intervals and comparisons :func:`_summed` gives, from the few values a figure takes."""
    for name, table in coded.tables:
        valid = ~np.isnan(table)
        if not (coded.counts[:, valid] > 0).any():
            continue  # no run has this figure (recall and nDCG without gold passages)
        whole = valid & (table == np.floor(table))

        def intervals(a: int, table: np.ndarray = table, valid: np.ndarray = valid,
                      whole: np.ndarray = whole) -> tuple[Interval, int, int] | None:
            times = coded.counts[a]
            used = (times > 0) & valid
            n = int(times[used].sum())
            if not n:
                return None
            if whole[used].all():  # one run per item, whole values: accuracy_interval's
                found = clopper_pearson(exact_sum(table[used], times[used]), n, level)
            else:
                found = clustered_mean_ci(table[coded.arm_codes(a)], level, trials=n)
            return found, n, n

        def compare(a: int, b: int, level: float, family: int, table: np.ndarray = table,
                    valid: np.ndarray = valid) -> Comparison | None:
            both = coded.joint(a, b)[np.ix_(valid, valid)]
            at_a, at_b = np.nonzero(both)
            if not len(at_a):
                return None
            values = table[valid]
            return compare_paired_counts(values[at_b] - values[at_a], both[at_a, at_b],
                                         level=level, family_size=family)

        yield name, intervals, compare


def _aligned(groups: RunGroups, means: np.ndarray, a: int, b: int
             ) -> tuple[np.ndarray, np.ndarray]:
    """Arms ``a`` and ``b``'s item means over the items both have a value for."""
    part_a = slice(groups.bounds[a], groups.bounds[a + 1])
    part_b = slice(groups.bounds[b], groups.bounds[b + 1])
    at_a, at_b = groups.pair(a, b)
    then, now = means[part_a][at_a], means[part_b][at_b]
    both = ~(np.isnan(then) | np.isnan(now))
    return then[both], now[both]


_DIFFERENCE_COLUMNS = ["a", "b", "figure", "diff", "ci_low", "ci_high", "p_value", "items",
                       "decision", "method"]


def _summary_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=list(_COLUMNS))
    frame["k"] = frame["k"].astype("Int64")
    return frame


def retrieval_summary(runs: pd.DataFrame, ks: Sequence[int] = KS,
                      level: float = 0.95) -> pd.DataFrame:
    """Per arm and figure: its value over items with its interval (empty frame when no
    run returned contexts).

    ``runs``: the runs table's ``arm``, ``item_index`` (or ``item_id``), ``gold_ranks``
    and ``gold_n``. Columns: ``arm, figure, k, value, ci_low, ci_high, items, runs,
    relevance`` (``k`` missing for ``mrr``). :func:`retrieval_figures` gives it with
    the differences in one pass.

    Example:
        >>> runs = pd.DataFrame({"arm": ["a"] * 2, "item_id": ["q1", "q2"],
        ...                      "gold_ranks": ["1", ""], "gold_n": [1, 1]})
        >>> row = retrieval_summary(runs, ks=(1,)).iloc[0]
        >>> row["figure"], float(row["value"]), round(float(row["ci_low"]), 3), row["relevance"]
        ('hit', 0.5, 0.013, 'gold passages')
    """
    return retrieval_figures(runs, ks, level)[0]


def retrieval_differences(runs: pd.DataFrame, ks: Sequence[int] = KS, level: float = 0.95,
                          figures_shown: Sequence[str] | None = None) -> pd.DataFrame:
    """Paired differences ``b - a`` between every pair of arms (in the order they first
    appear) for each figure (default: hit@ and recall@ the largest k, and MRR), over the
    items both have; the comparison's estimate, interval, p-value and decision, at
    ``level`` Bonferroni-corrected over the pairs.

    Example:
        >>> runs = pd.DataFrame({"arm": ["a"] * 8 + ["b"] * 8,
        ...                      "item_id": [f"q{i}" for i in range(8)] * 2,
        ...                      "gold_ranks": [""] * 8 + ["1"] * 8, "gold_n": [1] * 16})
        >>> row = retrieval_differences(runs, ks=(1,)).iloc[0]
        >>> row["a"], row["b"], row["figure"], float(row["diff"]), row["decision"]
        ('a', 'b', 'hit@1', 1.0, 'better')
    """
    return retrieval_figures(runs, ks, level, figures_shown)[1]


def _item_means(runs: pd.DataFrame, ks: Sequence[int], names: Sequence[str]
                ) -> dict[str, pd.Series] | None:
    """One arm's item means (by ``item_id``) of the figures ``names``; ``None`` without
    contexts."""
    if "gold_ranks" not in runs.columns or not runs["gold_ranks"].notna().any():
        return None
    groups = RunGroups(runs, by_id=True)
    found = {}
    for name, sums, counts in groups.each_sum(ks):
        if name in names:
            with np.errstate(invalid="ignore", divide="ignore"):
                means = np.where(counts > 0, sums / counts, np.nan)
            found[name] = pd.Series(means, index=groups.items[groups.item_of]).dropna()
    return found


def retrieval_change(then: pd.DataFrame, now: pd.DataFrame, ks: Sequence[int] = KS,
                     level: float = 0.95, family_size: int = 1) -> list[dict[str, Any]]:
    """One arm's retrieval then and now (two runs' tables of that arm, items by
    ``item_id``): hit@ and recall@ the deepest k and MRR, each then, now and the paired
    ``now - then`` over the items both have (``compare_paired``, Bonferroni over
    ``family_size``); ``[]`` when either run has no contexts.

    Example:
        >>> then = pd.DataFrame({"arm": "a", "item_id": [f"q{i}" for i in range(8)],
        ...                      "gold_ranks": [""] * 8, "gold_n": 1})
        >>> row = retrieval_change(then, then.assign(gold_ranks="1"), ks=(1,))[0]
        >>> row["figure"], row["then"], row["now"], row["decision"]
        ('hit@1', 0.0, 1.0, 'better')
    """
    deepest = max(ks)
    names = (f"hit@{deepest}", f"recall@{deepest}", "mrr")
    found_then = _item_means(then, ks, names)
    found_now = _item_means(now, ks, names)
    if found_then is None or found_now is None:
        return []
    rows = []
    for name in names:
        if name not in found_then or name not in found_now:
            continue
        means = [found_then[name], found_now[name]]
        both = means[0].index.intersection(means[1].index)
        if not len(both):
            continue
        got = compare_paired(means[1][both].to_numpy(), means[0][both].to_numpy(),
                             level=level, family_size=family_size)
        rows.append({"figure": name, "then": float(means[0].mean()),
                     "now": float(means[1].mean()), "diff": got.estimate, "ci_low": got.low,
                     "ci_high": got.high, "p_value": got.p_value, "n_items": got.n_items,
                     "decision": got.decision, "method": got.method})
    return rows
