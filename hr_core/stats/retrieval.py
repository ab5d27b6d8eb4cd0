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
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from hr_core.stats.comparison import compare_paired
from hr_core.stats.intervals import accuracy_interval

__all__ = ["CONTAINMENT", "GOLD", "KS", "METRICS", "retrieval_differences",
           "retrieval_summary", "run_figures"]

KS = (1, 3, 5, 10)
"""The depths k reported by default."""

METRICS = ("hit", "recall", "precision", "mrr", "ndcg")
"""The figures, in the order pages list them (``mrr`` has no k)."""

GOLD = "gold passages"
CONTAINMENT = "answer containment (DPR)"
"""The two kinds of relevance a figure can be computed on (its ``relevance`` column)."""

_COLUMNS = ("arm", "figure", "k", "value", "ci_low", "ci_high", "items", "runs", "relevance")


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


def _names(ks: Sequence[int]) -> list[tuple[str, int | None]]:
    return [(m, None) if m == "mrr" else (m, k) for m in METRICS
            for k in ((None,) if m == "mrr" else ks)]


def _per_run(runs: pd.DataFrame, ks: Sequence[int]) -> tuple[pd.DataFrame, str] | None:
    """One row per judged run (``arm``, ``item``, a column per figure) and the relevance;
    ``None`` when no run returned contexts."""
    if "gold_ranks" not in runs.columns:
        return None
    judged = runs[runs["gold_ranks"].notna()]
    if not len(judged):
        return None
    counts = judged["gold_n"]
    relevance = GOLD if bool(counts.notna().any()) else CONTAINMENT
    if relevance == GOLD:
        judged = judged[counts.notna()]
    item = "item_index" if "item_index" in judged.columns else "item_id"
    rows = []
    for text, n in zip(judged["gold_ranks"].tolist(), judged["gold_n"].tolist(), strict=True):
        ranks = [int(r) for r in str(text).split()]
        rows.append(run_figures(ranks, None if n is None or math.isnan(n) else int(n), ks))
    figures = pd.DataFrame(rows, index=judged.index)
    figures.insert(0, "item", judged[item].to_numpy())
    figures.insert(0, "arm", judged["arm"].astype(str).to_numpy())
    return figures, relevance


def _item_means(figures: pd.DataFrame, arm: str, name: str) -> pd.Series:
    part = figures.loc[figures["arm"] == arm, ["item", name]]
    return part.groupby("item", sort=True)[name].mean()


def retrieval_summary(runs: pd.DataFrame, ks: Sequence[int] = KS,
                      level: float = 0.95) -> pd.DataFrame:
    """Per arm and figure: its value over items with its interval (empty frame when no
    run returned contexts).

    ``runs``: the runs table's ``arm``, ``item_index`` (or ``item_id``), ``gold_ranks``
    and ``gold_n``. Columns: ``arm, figure, k, value, ci_low, ci_high, items, runs,
    relevance`` (``k`` missing for ``mrr``).

    Example:
        >>> runs = pd.DataFrame({"arm": ["a"] * 2, "item_id": ["q1", "q2"],
        ...                      "gold_ranks": ["1", ""], "gold_n": [1, 1]})
        >>> row = retrieval_summary(runs, ks=(1,)).iloc[0]
        >>> row["figure"], float(row["value"]), round(float(row["ci_low"]), 3), row["relevance"]
        ('hit', 0.5, 0.013, 'gold passages')
    """
    found = _per_run(runs, ks)
    if found is None:
        return pd.DataFrame(columns=list(_COLUMNS))
    figures, relevance = found
    rows: list[dict[str, Any]] = []
    for arm in pd.unique(figures["arm"]):
        mine = figures[figures["arm"] == arm]
        for metric, k in _names(ks):
            name = metric if k is None else f"{metric}@{k}"
            values = mine[["item", name]].dropna()
            if not len(values):
                continue
            grouped = values.groupby("item", sort=False)[name]
            estimate, low, high = accuracy_interval(grouped.sum().to_numpy(),
                                                    grouped.count().to_numpy(), level)
            rows.append({"arm": arm, "figure": metric, "k": k, "value": estimate,
                         "ci_low": low, "ci_high": high, "items": int(grouped.ngroups),
                         "runs": len(values), "relevance": relevance})
    frame = pd.DataFrame(rows, columns=list(_COLUMNS))
    frame["k"] = frame["k"].astype("Int64")
    return frame


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
    found = _per_run(runs, ks)
    columns = ["a", "b", "figure", "diff", "ci_low", "ci_high", "p_value", "items",
               "decision", "method"]
    if found is None:
        return pd.DataFrame(columns=columns)
    figures, _ = found
    arms = list(pd.unique(figures["arm"]))
    pairs = list(combinations(arms, 2))
    deepest = max(ks)
    names = list(figures_shown or (f"hit@{deepest}", f"recall@{deepest}", "mrr"))
    rows = []
    for a, b in pairs:
        for name in names:
            then, now = _item_means(figures, a, name), _item_means(figures, b, name)
            both = then.dropna().index.intersection(now.dropna().index)
            if not len(both):
                continue
            got = compare_paired(np.asarray(now[both]), np.asarray(then[both]), level=level,
                                 family_size=max(len(pairs), 1))
            rows.append({"a": a, "b": b, "figure": name, "diff": got.estimate,
                         "ci_low": got.low, "ci_high": got.high, "p_value": got.p_value,
                         "items": got.n_items, "decision": got.decision,
                         "method": got.method})
    return pd.DataFrame(rows, columns=columns)
