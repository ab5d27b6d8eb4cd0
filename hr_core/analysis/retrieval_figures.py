"""A finished run's retrieval figures and why its failed answers failed, as methods of the
``Benchmark`` (:class:`RetrievalFigures`, a part of
:class:`hr_core.analysis.benchmark.Benchmark`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pandas as pd

from hr_core.analysis.attribution import attribution_summary
from hr_core.stats.accuracy import ITEM_INDEX
from hr_core.stats.retrieval import KS, retrieval_differences, retrieval_summary
from hr_core.store.manifest import RunManifest

__all__ = ["RetrievalFigures"]


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

    def retrieval_summary(self) -> pd.DataFrame:
        """Each arm's retrieval figures (hit@k, recall@k, precision@k, MRR, nDCG@k) with
        their intervals, over the items with gold passages and the runs that returned
        contexts (:func:`hr_core.stats.retrieval.retrieval_summary`; k: the spec's
        ``retrieval_k``); empty when no run returned contexts. Computed once."""
        found: pd.DataFrame | None = self._memo.get("retrieval")
        if found is None:
            found = self._memo["retrieval"] = retrieval_summary(
                self._retrieval_runs(), self.retrieval_k)
        return found

    def retrieval_differences(self) -> pd.DataFrame:
        """Paired differences of the retrieval figures between arms
        (:func:`hr_core.stats.retrieval.retrieval_differences`). Computed once."""
        found: pd.DataFrame | None = self._memo.get("retrieval_differences")
        if found is None:
            found = self._memo["retrieval_differences"] = retrieval_differences(
                self._retrieval_runs(), self.retrieval_k)
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
        lines = self.columns(["contexts"])["contexts"]
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
