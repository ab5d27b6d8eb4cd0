"""A finished run's retrieval figures and why its failed answers failed, as methods of the
``Benchmark`` (:class:`RetrievalFigures`, a part of
:class:`hr_core.analysis.benchmark.Benchmark`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pandas as pd

from hr_core.analysis.attribution import attribution_summary
from hr_core.stats import MIN_ITEMS, TOO_FEW_ITEMS
from hr_core.stats.accuracy import ITEM_INDEX
from hr_core.stats.retrieval import (
    KS,
    SUMMARY_COLUMNS,
    retrieval_figures,
    retrieval_summary,
)
from hr_core.stats.slices import MAX_SLICE_VALUES, MISSING_SLICE, check_slices, slice_values
from hr_core.store.manifest import RunManifest

__all__ = ["SLICE_RETRIEVAL_COLUMNS", "RetrievalFigures"]

SLICE_RETRIEVAL_COLUMNS = ("slice", "slice_value", "note", *SUMMARY_COLUMNS)
"""The columns of :meth:`RetrievalFigures.retrieval_slices`."""


class RetrievalFigures:
    """The retrieval part of a ``Benchmark``: figures computed once from its runs table."""

    _memo: dict[str, Any]
    _runs: pd.DataFrame | None
    _file: Any
    manifest: RunManifest

    if TYPE_CHECKING:
        @property
        def runs(self) -> pd.DataFrame: ...

        def columns(self, names: Iterable[str]) -> pd.DataFrame: ...

        @property
        def reference(self) -> Any: ...

    def retrieval_summary(self) -> pd.DataFrame:
        """Each arm's retrieval figures (hit@k, recall@k, precision@k, MRR, nDCG@k) with
        their intervals, over the items with gold passages and the runs that returned
        contexts (:func:`hr_core.stats.retrieval.retrieval_summary`; k: the spec's
        ``retrieval_k``); empty when no run returned contexts. Computed once, with the
        differences."""
        return self._retrieval()[0]

    def retrieval_differences(self) -> pd.DataFrame:
        """Paired differences of the retrieval figures between arms
        (:func:`hr_core.stats.retrieval.retrieval_differences`). Computed once."""
        return self._retrieval()[1]

    def _retrieval(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        found: tuple[pd.DataFrame, pd.DataFrame] | None = self._memo.get("retrieval")
        if found is None:
            found = self._memo["retrieval"] = retrieval_figures(self._retrieval_runs(),
                                                                self.retrieval_k)
        return found

    def retrieval_slices(self, fields: Iterable[str] | None = None) -> pd.DataFrame:
        """Each arm's retrieval figures per value of each slice field (the manifest's
        ``slices`` by default): :meth:`retrieval_summary`'s columns after ``slice``,
        ``slice_value`` and ``note`` (``hr_core.stats.TOO_FEW_ITEMS`` for a slice of fewer than
        ``MIN_ITEMS`` items), over the items of that value; a value is one as for
        :meth:`slice_summary` (``(missing)``; at most ``MAX_SLICE_VALUES`` values a field,
        the largest first). Empty without slices or contexts. Computed once."""
        names = check_slices(list(self.manifest.slices or []) if fields is None
                             else list(fields))
        key = f"retrieval_slices {names!r}"
        found: pd.DataFrame | None = self._memo.get(key)
        if found is not None:
            return found
        frames = []
        if names and self.has_contexts:
            reference = self.reference
            values = slice_values(reference if reference is not None else [], names)
            runs = self.columns(["arm", ITEM_INDEX, "item_id", "gold_ranks", "gold_n"])
            for field, of_field in values.items():
                value_of = runs["item_id"].map(of_field).fillna(MISSING_SLICE).astype(str)
                sizes = runs.drop_duplicates("item_id")["item_id"].map(of_field).fillna(
                    MISSING_SLICE).astype(str).value_counts()
                for value, items in sizes.head(MAX_SLICE_VALUES).items():
                    part = retrieval_summary(runs[(value_of == value).to_numpy()],
                                             self.retrieval_k)
                    part.insert(0, "note", TOO_FEW_ITEMS if items < MIN_ITEMS else "")
                    part.insert(0, "slice_value", str(value))
                    part.insert(0, "slice", field)
                    frames.append(part)
        found = self._memo[key] = (pd.concat(frames, ignore_index=True) if frames else
                                   pd.DataFrame(columns=list(SLICE_RETRIEVAL_COLUMNS)))
        return found

    @property
    def retrieval_k(self) -> tuple[int, ...]:
        """The depths of the retrieval figures: the spec's ``retrieval_k``, else 1, 3, 5, 10."""
        return tuple(self.manifest.retrieval_k or KS)

    def attribution_summary(self) -> pd.DataFrame:
        """Why each arm's failed runs failed, where items name gold passages: retrieval
        misses, reading errors, refusals despite evidence, as counts and shares with
        intervals (:func:`hr_core.analysis.attribution.attribution_summary`). Computed once."""
        found: pd.DataFrame | None = self._memo.get("attribution")
        if found is None:
            runs = (self.columns(["arm", ITEM_INDEX, "item_id", "attribution"])
                    if self.has_contexts else pd.DataFrame({"arm": []}))
            found = self._memo["attribution"] = attribution_summary(runs)
        return found

    def contexts_cut(self) -> int:
        """How many runs' contexts were cut to the record's bounds (more than
        ``CONTEXTS_MAX`` passages, or a text over ``CONTEXT_TEXT_MAX`` characters)."""
        if not self.has_contexts:
            return 0
        names = self._file.names() if self._runs is None and self._file is not None else (
            list(self.runs.columns))
        if "contexts_cut" in names:  # one small column, not every run's contexts line
            cuts = self.columns(["contexts_cut"])["contexts_cut"]
            return int((cuts.fillna(0) > 0).sum())
        lines = self.columns(["contexts"])["contexts"]  # a table before that column
        return int(lines.str.endswith(" cut)", na=False).sum())

    @property
    def has_contexts(self) -> bool:
        """Whether some run returned contexts (the runs table has their columns)."""
        if self._runs is None and self._file is not None:
            return "gold_ranks" in self._file.names()
        return "gold_ranks" in self.runs.columns

    def _retrieval_runs(self) -> pd.DataFrame:
        if not self.has_contexts:
            return pd.DataFrame({"arm": []})
        return self.columns(["arm", ITEM_INDEX, "item_id", "gold_ranks", "gold_n"])
