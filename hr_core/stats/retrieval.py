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
from collections.abc import Iterator, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from hr_core.stats.comparison import compare_paired
from hr_core.stats.intervals import accuracy_interval

__all__ = ["CONTAINMENT", "GOLD", "KS", "METRICS", "SUMMARY_COLUMNS", "figures_of",
           "retrieval_change", "retrieval_differences", "retrieval_figures",
           "retrieval_summary", "run_figures"]

KS = (1, 3, 5, 10)
"""The depths k reported by default."""

METRICS = ("hit", "recall", "precision", "mrr", "ndcg")
"""The figures, in the order pages list them (``mrr`` has no k)."""

GOLD = "gold passages"
CONTAINMENT = "answer containment (DPR)"
"""The two kinds of relevance a figure can be computed on (its ``relevance`` column)."""

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


def _names(ks: Sequence[int]) -> list[tuple[str, int | None]]:
    return [(m, None) if m == "mrr" else (m, k) for m in METRICS
            for k in ((None,) if m == "mrr" else ks)]


def _ranks_of(ranks: Sequence[str] | pa.Array | pa.ChunkedArray
              ) -> tuple[np.ndarray, np.ndarray]:
    """Every rank of ``gold_ranks`` texts as integers and the position of its run, parsed
    by Arrow (no Python object per run: issue 36's write-phase target)."""
    if isinstance(ranks, pa.ChunkedArray):
        ranks = ranks.combine_chunks()
    texts = ranks if isinstance(ranks, pa.Array) else pa.array(ranks, type=pa.string())
    texts = texts.cast(pa.string()).fill_null("")
    if not pc.any(pc.match_substring(texts, " ")).as_py():  # at most one rank a run
        found = pc.not_equal(texts, "")
        values = pc.filter(texts, found).cast(pa.int64()).to_numpy(zero_copy_only=False)
        owner = np.flatnonzero(found.to_numpy(zero_copy_only=False))
        return values.astype(np.int64), owner.astype(np.int64)
    parts = pc.split_pattern(texts, " ")
    flat = pc.list_flatten(parts)
    keep = pc.not_equal(flat, "")
    values = pc.filter(flat, keep).cast(pa.int64()).to_numpy(zero_copy_only=False)
    owner = pc.filter(pc.list_parent_indices(parts), keep).to_numpy(zero_copy_only=False)
    return values.astype(np.int64), owner.astype(np.int64)


def _each_figure(flat: np.ndarray, owner: np.ndarray, n_gold: np.ndarray, n: int,
                 ks: Sequence[int]) -> Iterator[tuple[str, np.ndarray]]:
    """Each figure's array over ``n`` runs, one at a time (``flat``/``owner``: every rank
    found and its run, :func:`_ranks_of`), in :func:`_names` order: a caller reducing
    each in turn holds one, not all 17 (issue 36's memory target)."""
    width = int(flat.max()) + 1 if len(flat) else 1
    unique = _unique_sorted(owner * width + flat)  # a context holding two gold passages: once
    d_owner, d_rank = unique // width, unique % width
    gains = 1.0 / np.log2(1.0 + d_rank)
    ideal_steps = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(2.0 + np.arange(max(ks))))])
    gold = np.asarray(n_gold, dtype=np.float64)
    known = ~np.isnan(gold)
    whole = np.where(known, gold, 0).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        for metric, k in _names(ks):
            if metric == "mrr":
                first = np.full(n, np.inf)
                np.minimum.at(first, d_owner, d_rank.astype(np.float64))
                yield "mrr", np.where(np.isfinite(first), 1.0 / first, 0.0)
                continue
            assert k is not None
            if metric == "hit":
                yield f"hit@{k}", (np.bincount(d_owner[d_rank <= k], minlength=n) > 0
                                   ).astype(np.float64)
            elif metric == "precision":
                yield f"precision@{k}", np.bincount(d_owner[d_rank <= k], minlength=n) / k
            elif metric == "recall":
                found = np.bincount(owner[flat <= k], minlength=n).astype(np.float64)
                yield f"recall@{k}", np.where(known, np.minimum(found / gold, 1.0), np.nan)
            else:
                top = d_rank <= k
                dcg = np.bincount(d_owner[top], weights=gains[top], minlength=n)
                ideal = ideal_steps[np.minimum(whole, k)]
                yield f"ndcg@{k}", np.where(known & (whole > 0), dcg / ideal, np.nan)


def _increasing(values: np.ndarray) -> bool:
    """Whether the values are strictly increasing (then they are their own ``np.unique``)."""
    return bool((values[1:] > values[:-1]).all())


def _unique_sorted(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)``, without its sort when they already are sorted and unique
    (one gold passage found per run at most, the usual case)."""
    return values if _increasing(values) else np.unique(values)


def figures_of(ranks: Sequence[str] | pa.Array | pa.ChunkedArray, n_gold: np.ndarray,
               ks: Sequence[int] = KS) -> dict[str, np.ndarray]:
    """:func:`run_figures` of many runs at once: ``ranks`` their ``gold_ranks`` texts,
    ``n_gold`` their ``gold_n`` (NaN: answer containment); an array per figure.

    Example:
        >>> got = figures_of(["2 4", ""], np.array([3.0, 1.0]), ks=(3,))
        >>> got["hit@3"].tolist(), got["mrr"].tolist()
        ([1.0, 0.0], [0.5, 0.0])
    """
    flat, owner = _ranks_of(ranks)
    return dict(_each_figure(flat, owner, n_gold, len(ranks), ks))


class _Groups:
    """The judged runs of a runs table grouped by (arm, item), arms in the order they first
    appear: each figure is summed per group and each arm's groups are a slice."""

    def __init__(self, runs: pd.DataFrame, by_id: bool = False) -> None:
        ranks = runs["gold_ranks"]
        judged = ranks.notna().to_numpy()
        gold = runs["gold_n"].to_numpy(dtype=np.float64, na_value=np.nan)
        self.relevance = GOLD if bool((judged & ~np.isnan(gold)).any()) else CONTAINMENT
        if self.relevance == GOLD:
            judged = judged & ~np.isnan(gold)
        self.gold = gold[judged]
        self.texts = pa.array(ranks[judged], type=pa.string(), from_pandas=True)
        codes, arms = pd.factorize(runs["arm"][judged], sort=False)
        self.arms = [str(a) for a in arms]
        item = "item_id" if by_id or "item_index" not in runs.columns else "item_index"
        item_codes, self.items = pd.factorize(runs[item][judged], sort=False)
        width = max(len(self.items), 1)
        combined = codes.astype(np.int64) * width + item_codes
        if _increasing(combined):  # one run per (arm, item) in plan order: no sort needed
            keys, self.inverse = combined, np.arange(len(combined))
        else:
            keys, self.inverse = np.unique(combined, return_inverse=True)
            self.inverse = self.inverse.ravel()
        self.item_of = keys % width  # each group's item code
        self.bounds = np.searchsorted(keys // width, np.arange(len(self.arms) + 1))
        self.runs = np.bincount(self.inverse, minlength=len(keys))
        # one run per (arm, item), in table order (plan order: arms, then items): each
        # figure's array is its sums as it is
        self.in_order = len(keys) == len(self.inverse) and bool(
            (self.inverse == np.arange(len(keys))).all())
        self._pairs: dict[tuple[int, int], tuple[np.ndarray | slice, np.ndarray | slice]] = {}

    def pair(self, a: int, b: int) -> tuple[np.ndarray | slice, np.ndarray | slice]:
        """Where arms ``a`` and ``b``'s groups of the items both have are, in each arm's
        slice (computed once per pair)."""
        found = self._pairs.get((a, b))
        if found is None:
            items_a = self.item_of[self.bounds[a]:self.bounds[a + 1]]
            items_b = self.item_of[self.bounds[b]:self.bounds[b + 1]]
            if np.array_equal(items_a, items_b):  # the same items (the usual case)
                found = (slice(None), slice(None))
            else:
                _, at_a, at_b = np.intersect1d(items_a, items_b, assume_unique=True,
                                               return_indices=True)
                found = (at_a, at_b)
            self._pairs[(a, b)] = found
        return found

    def each_sum(self, ks: Sequence[int]) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
        """Each figure's sum and count of runs per group, one figure at a time."""
        flat, owner = _ranks_of(self.texts)
        for name, values in _each_figure(flat, owner, self.gold, len(self.gold), ks):
            missing = np.isnan(values)
            if missing.all():
                continue
            if self.in_order:
                counts = (~missing).astype(np.int64) if missing.any() else self.runs
                yield name, np.where(missing, 0.0, values), counts
                continue
            if missing.any():
                sums = np.bincount(self.inverse, weights=np.where(missing, 0.0, values),
                                   minlength=len(self.runs))
                counts = np.bincount(self.inverse, weights=~missing, minlength=len(self.runs))
            else:
                sums = np.bincount(self.inverse, weights=values, minlength=len(self.runs))
                counts = self.runs
            yield name, sums, counts.astype(np.int64)


def retrieval_figures(runs: pd.DataFrame, ks: Sequence[int] = KS, level: float = 0.95,
                      figures_shown: Sequence[str] | None = None
                      ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`retrieval_summary` and :func:`retrieval_differences` in one pass over the
    runs (each figure computed, summarised and let go in turn)."""
    summary_rows: dict[tuple[int, int], dict[str, Any]] = {}
    difference_rows: list[dict[str, Any]] = []
    if "gold_ranks" not in runs.columns or not runs["gold_ranks"].notna().any():
        return (_summary_frame([]), pd.DataFrame(columns=_DIFFERENCE_COLUMNS))
    groups = _Groups(runs)
    deepest = max(ks)
    shown = list(figures_shown or (f"hit@{deepest}", f"recall@{deepest}", "mrr"))
    order = {name: i for i, name in enumerate(
        metric if k is None else f"{metric}@{k}" for metric, k in _names(ks))}
    pairs = list(combinations(range(len(groups.arms)), 2))
    kept: dict[str, np.ndarray] = {}
    for name, sums, counts in groups.each_sum(ks):
        metric, _, depth = name.partition("@")
        for a, arm in enumerate(groups.arms):
            part = slice(groups.bounds[a], groups.bounds[a + 1])
            number = counts[part]
            keep = number > 0
            if not keep.any():
                continue
            estimate, low, high = accuracy_interval(sums[part][keep], number[keep], level)
            summary_rows[(a, order[name])] = {
                "arm": arm, "figure": metric, "k": int(depth) if depth else None,
                "value": estimate, "ci_low": low, "ci_high": high, "items": int(keep.sum()),
                "runs": int(number.sum()), "relevance": groups.relevance}
        if name in shown:
            with np.errstate(invalid="ignore", divide="ignore"):
                kept[name] = np.where(counts > 0, sums / counts, np.nan)
    for a, b in pairs:
        for name in shown:
            means = kept.get(name)
            if means is None:
                continue
            then, now = _aligned(groups, means, a, b)
            if not len(then):
                continue
            got = compare_paired(now, then, level=level, family_size=max(len(pairs), 1))
            difference_rows.append({
                "a": groups.arms[a], "b": groups.arms[b], "figure": name, "diff": got.estimate,
                "ci_low": got.low, "ci_high": got.high, "p_value": got.p_value,
                "items": got.n_items, "decision": got.decision, "method": got.method})
    return (_summary_frame([summary_rows[key] for key in sorted(summary_rows)]),
            pd.DataFrame(difference_rows, columns=_DIFFERENCE_COLUMNS))


def _aligned(groups: _Groups, means: np.ndarray, a: int, b: int
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
    groups = _Groups(runs, by_id=True)
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
