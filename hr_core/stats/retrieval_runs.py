"""The runs behind the retrieval figures: each run's gold ranks parsed, each figure per run
(one figure at a time), and the judged runs grouped by (arm, item), or coded when a
figure's value of a run is one of a few (``RunCodes``); ``hr_core.stats.retrieval``
summarises them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["CONTAINMENT", "GOLD", "METRICS", "RunCodes", "RunGroups", "each_figure",
           "figure_names", "ranks_of"]

METRICS = ("hit", "recall", "precision", "mrr", "ndcg")
"""The figures, in the order pages list them (``mrr`` has no k)."""

GOLD = "gold passages"
CONTAINMENT = "answer containment (DPR)"
"""The two kinds of relevance a figure can be computed on (its ``relevance`` column)."""


def figure_names(ks: Sequence[int]) -> list[tuple[str, int | None]]:
    return [(m, None) if m == "mrr" else (m, k) for m in METRICS
            for k in ((None,) if m == "mrr" else ks)]


def ranks_of(ranks: Sequence[str] | pa.Array | pa.ChunkedArray
              ) -> tuple[np.ndarray, np.ndarray]:
    """Every rank of ``gold_ranks`` texts as integers and the position of its run, parsed
    by Arrow (no Python object per run: issue 36's write-phase target)."""
    texts = (ranks if isinstance(ranks, (pa.Array, pa.ChunkedArray))
             else pa.array(ranks, type=pa.string()))
    if not (pa.types.is_string(texts.type) or pa.types.is_large_string(texts.type)):
        texts = texts.cast(pa.string())
    if texts.null_count:
        texts = texts.fill_null("")
    found = pc.greater(pc.binary_length(texts), 0)  # chunk by chunk: no copy of the texts
    kept = pc.filter(texts, found)
    if not pc.any(pc.match_substring(kept, " ")).as_py():  # at most one rank a run
        values = kept.cast(pa.int64()).to_numpy(zero_copy_only=False)
        owner = np.flatnonzero(found.to_numpy(zero_copy_only=False))
        return values.astype(np.int64), owner.astype(np.int64)
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    parts = pc.split_pattern(texts, " ")
    flat = pc.list_flatten(parts)
    keep = pc.not_equal(flat, "")
    values = pc.filter(flat, keep).cast(pa.int64()).to_numpy(zero_copy_only=False)
    owner = pc.filter(pc.list_parent_indices(parts), keep).to_numpy(zero_copy_only=False)
    return values.astype(np.int64), owner.astype(np.int64)


def each_figure(flat: np.ndarray, owner: np.ndarray, n_gold: np.ndarray, n: int,
                 ks: Sequence[int]) -> Iterator[tuple[str, np.ndarray]]:
    """Each figure's array over ``n`` runs, one at a time (``flat``/``owner``: every rank
    found and its run, :func:`ranks_of`), in :func:`figure_names` order: a caller reducing
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
        for metric, k in figure_names(ks):
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


def _texts(ranks: pd.Series) -> pa.Array | pa.ChunkedArray:
    """The ``gold_ranks`` texts as Arrow strings (pandas' own, not copied, when it has them)."""
    try:
        texts = pa.array(ranks, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        texts = None
    if texts is None or not (pa.types.is_string(texts.type)
                             or pa.types.is_large_string(texts.type)):
        return pa.array(ranks, type=pa.string(), from_pandas=True)
    return texts


def _appearance_codes(values: np.ndarray) -> tuple[np.ndarray, pd.Index]:
    """``pd.factorize(values, sort=False)``: each value's code in the order values first
    appear, and the values so ordered; item positions that start with every one in
    order (``item_index`` of a plan: 0, 1, 2, ... then again) are their own codes, found
    without hashing 400k values."""
    if values.dtype.kind in "iu" and len(values):
        size = int(values.max()) + 1
        if (size <= len(values) and int(values.min()) >= 0
                and np.array_equal(values[:size], np.arange(size))):
            return values.astype(np.intp), pd.Index(values[:size])
    codes, uniques = pd.factorize(values, sort=False)
    return codes, pd.Index(uniques)


class RunGroups:
    """The judged runs of a runs table grouped by (arm, item), arms in the order they first
    appear: each figure is summed per group and each arm's groups are a slice."""

    def __init__(self, runs: pd.DataFrame, by_id: bool = False) -> None:
        ranks = runs["gold_ranks"]
        judged = ranks.notna().to_numpy()
        gold = runs["gold_n"].to_numpy(dtype=np.float64, na_value=np.nan)
        self.relevance = GOLD if bool((judged & ~np.isnan(gold)).any()) else CONTAINMENT
        if self.relevance == GOLD:
            judged = judged & ~np.isnan(gold)
        every = bool(judged.all())  # the usual case: no copy of the columns
        self.gold = gold if every else gold[judged]
        self.texts = _texts(ranks if every else ranks[judged])
        codes, arms = pd.factorize(runs["arm"] if every else runs["arm"][judged], sort=False)
        self.arms = [str(a) for a in arms]
        item = "item_id" if by_id or "item_index" not in runs.columns else "item_index"
        item_codes, self.items = _appearance_codes(
            runs[item].to_numpy() if every else runs[item].to_numpy()[judged])
        width = max(len(self.items), 1)
        combined = codes.astype(np.int64) * width + item_codes
        if _increasing(combined):  # one run per (arm, item) in plan order: no sort needed
            self.inverse = np.arange(len(combined))
            self.item_of = item_codes.astype(np.int64)  # each group's item code
            group_arms = codes
            self.runs = np.ones(len(combined), dtype=np.int64)
            # one run per (arm, item), in table order (plan order: arms, then items):
            # each figure's array is its sums as it is
            self.in_order = True
        else:
            keys, self.inverse = np.unique(combined, return_inverse=True)
            self.inverse = self.inverse.ravel()
            self.item_of = keys % width
            group_arms = keys // width
            self.runs = np.bincount(self.inverse, minlength=len(keys))
            self.in_order = len(keys) == len(self.inverse) and bool(
                (self.inverse == np.arange(len(keys))).all())
        self.bounds = np.searchsorted(group_arms, np.arange(len(self.arms) + 1))
        self._pairs: dict[tuple[int, int], tuple[np.ndarray | slice, np.ndarray | slice]] = {}
        self._ranks: tuple[np.ndarray, np.ndarray] | None = None

    def ranks(self) -> tuple[np.ndarray, np.ndarray]:
        """Every gold rank found and its run (:func:`ranks_of`; parsed once)."""
        if self._ranks is None:
            self._ranks = ranks_of(self.texts)
        return self._ranks

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
        flat, owner = self.ranks()
        for name, values in each_figure(flat, owner, self.gold, len(self.gold), ks):
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


MAX_CODES = 512
"""The most codes :class:`RunCodes` uses (ranks up to the deepest found x whole gold
counts); beyond, the figures are summed per run (:meth:`RunGroups.each_sum`)."""


class RunCodes:
    """The judged runs of a :class:`RunGroups` as codes, in the usual case (one run per
    (arm, item) in table order, at most one gold passage found per run, ``gold_n`` a
    small whole number or unknown): a run's code is its rank found (0: none) and its
    ``gold_n``, and a figure's value of a run is its table's at the code, the very float
    :func:`each_figure` gives the run (the table is :func:`each_figure` of one run per
    code, and its every step is per run). Each arm's figure is then counts of a few
    codes, not 100k values (issue 36's write-phase target).

    Example:
        >>> runs = pd.DataFrame({"arm": ["a"] * 3, "item_id": ["q1", "q2", "q3"],
        ...                      "gold_ranks": ["2", "", "2"], "gold_n": [1, 1, 1]})
        >>> coded = RunCodes.of(RunGroups(runs), ks=(1, 3))
        >>> mrr = dict(coded.tables)["mrr"]
        >>> mrr[coded.codes].tolist(), coded.counts[0][coded.codes].tolist()
        ([0.5, 0.0, 0.5], [2, 1, 2])
    """

    def __init__(self, groups: RunGroups, codes: np.ndarray, size: int,
                 tables: list[tuple[str, np.ndarray]]) -> None:
        self.groups = groups
        self.codes = codes
        """Each judged run's code, in the table's order (each arm a slice, ``bounds``)."""
        self.size = size
        self.tables = tables
        """Each figure's value per code, in :func:`figure_names` order."""
        bounds = groups.bounds
        self.counts = np.stack([np.bincount(codes[bounds[a]:bounds[a + 1]], minlength=size)
                                for a in range(len(groups.arms))]) if len(groups.arms) else (
            np.zeros((0, size), dtype=np.int64))
        """Each arm's runs per code."""
        self._joint: dict[tuple[int, int], np.ndarray] = {}

    @classmethod
    def of(cls, groups: RunGroups, ks: Sequence[int]) -> RunCodes | None:
        """The runs' codes, ``None`` outside the usual case."""
        if not groups.in_order:
            return None
        flat, owner = groups.ranks()
        n = len(groups.gold)
        if not _increasing(owner) or (len(flat) and (flat.min() < 1 or flat.max() >= MAX_CODES)):
            return None  # two gold passages found in a run, or odd ranks
        gold = groups.gold
        if groups.relevance == CONTAINMENT:  # every judged run's gold_n unknown
            gold_values, gold_codes = np.array([np.nan]), np.zeros(n, dtype=np.int64)
        else:  # every one known (RunGroups keeps those runs): small whole numbers?
            with np.errstate(invalid="ignore"):
                gold_codes = gold.astype(np.int64)
            low, high = (int(gold_codes.min()), int(gold_codes.max())) if n else (0, 0)
            if (low < 0 or high >= MAX_CODES or not bool((gold_codes == gold).all())
                    or (low == 0 and bool(np.signbit(gold).any()))):
                return None
            gold_values = np.arange(high + 1, dtype=np.float64)
        ranks = np.zeros(n, dtype=np.int64)
        ranks[owner] = flat
        width = len(gold_values)
        size = (int(ranks.max(initial=0)) + 1) * width
        if size > MAX_CODES:
            return None
        # one run per code: the rank code // width (0: none), gold_n gold_values[code % width]
        rep_rank = np.arange(size) // width
        rep_owner = np.flatnonzero(rep_rank > 0)
        tables = list(each_figure(rep_rank[rep_owner], rep_owner,
                                  gold_values[np.arange(size) % width], size, ks))
        return cls(groups, ranks * width + gold_codes, size, tables)

    def arm_codes(self, a: int) -> np.ndarray:
        """Arm ``a``'s runs' codes, in order."""
        return self.codes[self.groups.bounds[a]:self.groups.bounds[a + 1]]

    def joint(self, a: int, b: int) -> np.ndarray:
        """The items both arms have, counted by (arm ``a``'s code, arm ``b``'s code)."""
        found = self._joint.get((a, b))
        if found is None:
            at_a, at_b = self.groups.pair(a, b)
            pairs = self.arm_codes(a)[at_a] * self.size + self.arm_codes(b)[at_b]
            found = self._joint[(a, b)] = np.bincount(
                pairs, minlength=self.size * self.size).reshape(self.size, self.size)
        return found
