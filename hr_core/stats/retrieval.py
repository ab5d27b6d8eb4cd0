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

__all__ = ["CONTAINMENT", "GOLD", "KS", "METRICS", "figures_of", "retrieval_change",
           "retrieval_differences", "retrieval_summary", "run_figures"]

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


def figures_of(ranks: Sequence[str], n_gold: np.ndarray, ks: Sequence[int] = KS
               ) -> dict[str, np.ndarray]:
    """:func:`run_figures` of many runs at once: ``ranks`` their ``gold_ranks`` texts,
    ``n_gold`` their ``gold_n`` (NaN: answer containment); an array per figure.

    Example:
        >>> got = figures_of(["2 4", ""], np.array([3.0, 1.0]), ks=(3,))
        >>> got["hit@3"].tolist(), got["mrr"].tolist()
        ([1.0, 0.0], [0.5, 0.0])
    """
    n = len(ranks)
    parsed = [text.split() for text in ranks]
    lengths = np.fromiter(map(len, parsed), dtype=np.int64, count=n)
    flat = np.fromiter((int(r) for found in parsed for r in found), dtype=np.int64,
                       count=int(lengths.sum()))
    owner = np.repeat(np.arange(n, dtype=np.int64), lengths)
    width = int(flat.max()) + 1 if len(flat) else 1
    unique = np.unique(owner * width + flat)  # a context holding two gold passages: once
    d_owner, d_rank = unique // width, unique % width
    gains = 1.0 / np.log2(1.0 + d_rank)
    ideal_steps = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(2.0 + np.arange(max(ks))))])
    gold = np.asarray(n_gold, dtype=np.float64)
    known = ~np.isnan(gold)
    whole = np.where(known, gold, 0).astype(np.int64)
    figures: dict[str, np.ndarray] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for k in ks:
            found = np.bincount(owner[flat <= k], minlength=n).astype(np.float64)
            top = np.bincount(d_owner[d_rank <= k], minlength=n).astype(np.float64)
            figures[f"hit@{k}"] = (top > 0).astype(np.float64)
            figures[f"precision@{k}"] = top / k
            figures[f"recall@{k}"] = np.where(known, np.minimum(found / gold, 1.0), np.nan)
            dcg = np.bincount(d_owner[d_rank <= k], weights=gains[d_rank <= k], minlength=n)
            ideal = ideal_steps[np.minimum(whole, k)]
            figures[f"ndcg@{k}"] = np.where(known & (whole > 0), dcg / ideal, np.nan)
        first = np.full(n, np.inf)
        np.minimum.at(first, d_owner, d_rank.astype(np.float64))
        figures["mrr"] = np.where(np.isfinite(first), 1.0 / first, 0.0)
    return figures


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
    figures = pd.DataFrame(figures_of([str(t) for t in judged["gold_ranks"].tolist()],
                                      judged["gold_n"].to_numpy(dtype=np.float64), ks))
    figures.insert(0, "item", judged[item].to_numpy())
    figures.insert(0, "arm", judged["arm"].astype(str).to_numpy())
    return figures, relevance


def _item_values(runs: pd.DataFrame, ks: Sequence[int]
                 ) -> tuple[pd.DataFrame, pd.DataFrame, str] | None:
    """Per (arm, item): each figure's sum and count over the item's runs, and the
    relevance."""
    found = _per_run(runs, ks)
    if found is None:
        return None
    figures, relevance = found
    grouped = figures.groupby(["arm", "item"], sort=False)
    return grouped.sum(min_count=1), grouped.count(), relevance


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
    found = _item_values(runs, ks)
    if found is None:
        return pd.DataFrame(columns=list(_COLUMNS))
    sums, counts, relevance = found
    arms = sums.index.get_level_values("arm")
    rows: list[dict[str, Any]] = []
    for arm in pd.unique(arms):
        mine = arms == arm
        for metric, k in _names(ks):
            name = metric if k is None else f"{metric}@{k}"
            total, number = sums.loc[mine, name], counts.loc[mine, name]
            keep = (number > 0).to_numpy()
            if not keep.any():
                continue
            estimate, low, high = accuracy_interval(total.to_numpy()[keep],
                                                    number.to_numpy()[keep], level)
            rows.append({"arm": arm, "figure": metric, "k": k, "value": estimate,
                         "ci_low": low, "ci_high": high, "items": int(keep.sum()),
                         "runs": int(number.sum()), "relevance": relevance})
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
    found = _item_values(runs, ks)
    columns = ["a", "b", "figure", "diff", "ci_low", "ci_high", "p_value", "items",
               "decision", "method"]
    if found is None:
        return pd.DataFrame(columns=columns)
    sums, counts, _ = found
    means = sums / counts.where(counts > 0)
    arms = list(pd.unique(means.index.get_level_values("arm")))
    pairs = list(combinations(arms, 2))
    deepest = max(ks)
    names = list(figures_shown or (f"hit@{deepest}", f"recall@{deepest}", "mrr"))
    rows = []
    for a, b in pairs:
        for name in names:
            then = means.loc[a, name].dropna()
            now = means.loc[b, name].dropna()
            both = then.index.intersection(now.index)
            if not len(both):
                continue
            got = compare_paired(now[both].to_numpy(), then[both].to_numpy(), level=level,
                                 family_size=max(len(pairs), 1))
            rows.append({"a": a, "b": b, "figure": name, "diff": got.estimate,
                         "ci_low": got.low, "ci_high": got.high, "p_value": got.p_value,
                         "items": got.n_items, "decision": got.decision,
                         "method": got.method})
    return pd.DataFrame(rows, columns=columns)


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
    found_then = _item_values(then.drop(columns=["item_index"], errors="ignore"), ks)
    found_now = _item_values(now.drop(columns=["item_index"], errors="ignore"), ks)
    if found_then is None or found_now is None:
        return []
    deepest = max(ks)
    rows = []
    for name in (f"hit@{deepest}", f"recall@{deepest}", "mrr"):
        means = [(sums[name] / counts[name].where(counts[name] > 0)).dropna().droplevel("arm")
                 for sums, counts, _ in (found_then, found_now)]
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
