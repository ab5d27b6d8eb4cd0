"""The ``Benchmark``: a finished run's table, summary, paired comparisons and manifest."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from hr_core.analysis.health import assess_benchmark
from hr_core.analysis.retrieval_figures import RetrievalFigures
from hr_core.analysis.verdict import sequential_note, verdict
from hr_core.core.errors import RunNotFoundError
from hr_core.core.failures import FAILURE_KINDS
from hr_core.data.reference import Reference
from hr_core.stats import (
    Interval,
    PairedDifference,
    accuracy_interval,
    clustered_mean_ci,
    compare_paired,
)
from hr_core.stats.accuracy import (
    ITEM_INDEX,
    coverage_warnings,
    flaky_cells,
    item_accuracy,
    item_codes,
    item_counts,
    item_total,
    runs_made,
)
from hr_core.stats.slices import check_slices, slice_accuracy, slice_values
from hr_core.store.columns import (
    JUDGE_FAILURES,
    KIND_SUMMARY_COLUMNS,
    RUN_COLUMNS,
    SCORE_COLUMNS,
    SUMMARY_COLUMNS,
    runs_frame,
)
from hr_core.store.folder import RUNS, RunStore, unfinished_hint
from hr_core.store.manifest import RunManifest, read_manifest
from hr_core.store.runs_file import STAT_COLUMNS, RowTexts, RunsFile
from hr_core.store.stored_reference import read_stored_reference

if TYPE_CHECKING:
    from hr_core.analysis.health import RunHealth
    from hr_core.analysis.verdict import Verdict

__all__ = ["JUDGE_FAILURES", "RUN_COLUMNS", "SCORE_COLUMNS", "SUMMARY_COLUMNS", "Benchmark",
           "runs_frame"]


def _runs_file(run_dir: str | None) -> RunsFile:
    """``runs.parquet`` of a run folder (local or fsspec), damage named as the store does."""
    assert run_dir is not None
    store = RunStore.at(run_dir)
    return RunsFile(lambda: store.fs.open(store.path(RUNS), "rb"),
                    lambda exc: store.corrupt_error(RUNS, exc))


def _rows_of(runs: pd.DataFrame, arm: str) -> pd.DataFrame:
    """One arm's rows of a runs table: a slice (not a copy) when they are contiguous, as
    in a benchmark's table (arms one after another), else a selection."""
    mask = (runs["arm"] == arm).to_numpy(dtype=bool)
    at = np.flatnonzero(mask)
    if len(at) and at[-1] - at[0] + 1 == len(at):
        return runs.iloc[int(at[0]):int(at[-1]) + 1]
    return runs[mask]


def _nan_to_none(value: float) -> float | None:
    return None if math.isnan(value) else value


class Benchmark(RetrievalFigures):
    """A finished benchmark: ``.runs``, ``.summary()``, ``.compare(a, b)``, ``.manifest``.

    A stored run (:meth:`load`, and what a benchmark returns) reads ``runs.parquet``
    lazily: ``.runs`` reads the whole table on first access (then keeps it), while the
    summary, comparisons and warnings read only the columns they need
    (:meth:`stat_runs`). ``Benchmark(runs, manifest)`` holds a table in memory.

    Example:
        >>> runs = runs_frame([
        ...     {"arm": "a", "item_id": "q1", "run": 1, "correct": True},
        ...     {"arm": "a", "item_id": "q2", "run": 1, "correct": False, "failure_kind": "wrong"},
        ... ])
        >>> bench = Benchmark(runs, {"scorer": "exact", "reference_hash": "ab"})
        >>> row = bench.summary().iloc[0]
        >>> str(row["arm"]), float(row["accuracy"]), int(row["wrong"])
        ('a', 0.5, 1)
    """

    def __init__(self, runs: pd.DataFrame | None, manifest: RunManifest | Mapping[str, Any],
                 run_dir: str | None = None) -> None:
        self._runs = runs
        self._file: RunsFile | None = None
        self._columns: dict[str, pd.Series] = {}
        self.manifest: RunManifest = RunManifest.of(manifest)
        """The run's manifest (:class:`~hr_core.store.manifest.RunManifest`)."""
        self.run_dir = run_dir
        self._reference: Reference | None = None
        self._memo: dict[Any, Any] = {}  # summary, verdict, health: computed once

    @classmethod
    def stored(cls, manifest: RunManifest | Mapping[str, Any], run_dir: str | os.PathLike[str], *,
               reference: Reference | None = None) -> Benchmark:
        """A run whose ``runs.parquet`` is in ``run_dir``, read when needed (its footer now:
        :class:`~hr_core.core.errors.CorruptRunError` for a truncated file); ``reference``, when
        the caller has it in memory, is :attr:`reference` (else read from the run folder)."""
        bench = cls(None, manifest, run_dir=os.fspath(run_dir))
        bench._reference = reference
        bench._file = _runs_file(bench.run_dir)
        bench._file.names()
        return bench

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the file handle's functions (nor the columns read): a stored
        run unpickled reads ``runs.parquet`` again when needed."""
        state = dict(self.__dict__)
        state["_file"] = None
        state["_columns"] = {}
        state["_memo"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self._runs is None and self.run_dir is not None:
            self._file = _runs_file(self.run_dir)

    @property
    def runs(self) -> pd.DataFrame:
        """One row per (arm, item, run): SPEC section 9 columns (read on first access)."""
        if self._runs is None:
            assert self._file is not None
            self._runs = self._file.read()
            self._columns.clear()
        return self._runs

    @runs.setter
    def runs(self, value: pd.DataFrame) -> None:
        self._runs = value
        self._columns.clear()
        self._memo.clear()

    def columns(self, names: Iterable[str]) -> pd.DataFrame:
        """The runs table with only ``names`` (those it has), rows as in ``.runs``; a stored
        run reads only these columns (and keeps them for the next call)."""
        if self._runs is not None or self._file is None:
            runs = self.runs
            return runs[[c for c in names if c in runs.columns]]
        wanted = [c for c in names if c in self._file.names()]
        missing = [c for c in wanted if c not in self._columns]
        if missing:
            frame = self._file.read(missing)
            self._columns.update({c: frame[c] for c in missing})
            del frame
        return self._file.tagged(pd.DataFrame({c: self._columns[c] for c in wanted},
                                               copy=False))

    def stat_runs(self) -> pd.DataFrame:
        """The runs table without its text columns (``output``, ``outcome``, ``error``):
        what summaries, comparisons and reports compute from."""
        return self.columns(STAT_COLUMNS)

    def row_texts(self) -> RowTexts | None:
        """The text columns of chosen rows of :meth:`stat_runs` (``None``: the table is in
        memory and has them)."""
        if self._runs is not None or self._file is None:
            return None
        return RowTexts(self._file)

    @property
    def reference(self) -> Reference | None:
        """The reference set the arms ran on (read from ``reference.jsonl`` of a stored run)."""
        if self._reference is None and self.run_dir is not None:
            stored = read_stored_reference(RunStore.at(self.run_dir))
            if stored is not None:
                self._reference = stored.reference()
        return self._reference

    @property
    def scorer(self) -> str:
        """The scorer's name."""
        return str(self.manifest.scorer)

    @property
    def reference_hash(self) -> str:
        """The SHA-256 of the reference set the arms ran on."""
        return str(self.manifest.reference_hash)

    @property
    def run_id(self) -> str | None:
        return self.manifest.run_id

    @property
    def arms(self) -> list[str]:
        """The arms, in the order they were given."""
        return [str(a) for a in pd.unique(self.columns(["arm"])["arm"])]

    def __repr__(self) -> str:
        return (f"<Benchmark {self.manifest.name}/{self.run_id} "
                f"{len(self.arms)} arm(s), {len(self.columns(['arm']))} run(s), "
                f"{self.manifest.status}>")

    @classmethod
    def load(cls, run_dir: str | os.PathLike[str]) -> Benchmark:
        """Read a finished run from the store (``results/<name>/<run id>/``).

        Raises:
            RunNotFoundError: the folder holds no finished run (no manifest or runs table).
        """
        store = RunStore.at(run_dir)
        try:
            manifest = read_manifest(store)
        except FileNotFoundError:
            raise RunNotFoundError(
                f"{os.fspath(run_dir)}: no benchmark run here (no manifest.json); give a run "
                "folder such as results/<name>/<run id>") from None
        try:
            return cls.stored(manifest, run_dir)
        except FileNotFoundError:
            raise RunNotFoundError(
                f"{os.fspath(run_dir)}: the run has not finished (no {RUNS}; status "
                f"{manifest.status!r}); {unfinished_hint(store, manifest.status)}") from None

    def item_accuracy(self, arm: str) -> pd.Series:
        """Each item's share of correct runs among its scored runs made, for one arm
        (:func:`hr_core.stats.accuracy.item_accuracy`)."""
        return item_accuracy(self.stat_runs(), arm)

    def coverage_warnings(self) -> list[str]:
        """One warning per arm with runs a budget stopped, naming it and how to finish it;
        first, for a sequential run that stopped early, why and how to make the rest."""
        found = coverage_warnings(self.summary())
        note = sequential_note(self.manifest)
        return found if note is None else [note, *found]

    def summary(self) -> pd.DataFrame:
        """One row per arm: counts, accuracy with its 95% CI, coverage, failures, usage.

        Accuracy is over the runs made (:mod:`hr_core.stats.accuracy`): the mean over
        items of each item's share of correct runs among its scored runs; runs a
        budget stopped are left out of ``scored``, ``unscored`` and the accuracy,
        and ``coverage`` is the share of the planned ``runs`` that were made (a
        sequential run that stopped when its verdict was clear made fewer: the
        manifest's ``sequential`` block says how many and why). The
        CI is Clopper-Pearson's when each item has one scored run and
        item-clustered otherwise (``docs/statistics.md``). Each failure kind
        column counts every run with that kind; ``judge_*`` count judge failures.

        When any run has a ``score`` (partial credit, e.g. ``f1``), the summary
        also has :data:`SCORE_COLUMNS`: the mean over items of each item's mean
        score, with an item-clustered 95% CI (see :meth:`item_scores`).

        Computed once: every call returns the same frame (the flow, the CLI and the
        reports read it); copy it before changing it.
        """
        found: pd.DataFrame | None = self._memo.get("summary")
        if found is None:
            found = self._memo["summary"] = self._summary()
        return found

    def verdict(self) -> Verdict:
        """The run's verdict (:func:`hr_core.analysis.verdict.verdict`: best arm, paired
        differences against it) from :meth:`summary`, computed once."""
        found: Verdict | None = self._memo.get("verdict")
        if found is None:
            found = self._memo["verdict"] = verdict(self.stat_runs(), self.summary(),
                                                    self.manifest.sequential)
        return found

    def health(self, max_error_rate: float, arms: Sequence[str] | None = None) -> RunHealth:
        """Each arm's errors and budget stops against ``max_error_rate``
        (:func:`hr_core.analysis.health.assess_benchmark`), computed once per limit;
        ``arms`` orders them (default: as in the runs table)."""
        key = ("health", float(max_error_rate))
        found: RunHealth | None = self._memo.get(key)
        if found is None:
            found = self._memo[key] = assess_benchmark(self, float(max_error_rate))
        return found if arms is None else found.ordered(arms)

    def _summary(self) -> pd.DataFrame:
        runs = self.stat_runs()
        rows = []
        # sequential mode: the runs of undrawn items are no rows; "runs" stays the runs planned
        sequential = self.manifest.sequential
        planned = (None if sequential is None else sequential.planned) or {}
        for arm in self.arms:
            part = _rows_of(runs, arm)
            correct = part["correct"]
            made = runs_made(part)
            scored_mask = correct.notna() & made
            per_item = item_counts(part, arm)
            interval = accuracy_interval(per_item["correct"].tolist(),
                                         per_item["scored"].tolist())
            kinds = part["failure_kind"].value_counts()
            judge = (part["judge_status"].value_counts() if "judge_status" in part
                     else pd.Series(dtype="int64"))
            row: dict[str, Any] = {
                "arm": arm,
                "items": item_total(part),
                "runs": int(planned.get(arm, len(part))),
                "scored": int(scored_mask.sum()),
                "correct": int(correct.fillna(False).sum()),
                "accuracy": _nan_to_none(interval.estimate),
                "ci_low": _nan_to_none(interval.low),
                "ci_high": _nan_to_none(interval.high),
                "coverage": (float(made.sum()) / int(planned.get(arm, len(part)))
                             if len(part) else None),
                "unscored": int((correct.isna() & made).sum()),
            }
            for kind in FAILURE_KINDS:
                row[kind] = int(kinds.get(kind, 0))
            for status in JUDGE_FAILURES:
                row[f"judge_{status}"] = int(judge.get(status, 0))
            row["truncated"] = (int(part["truncated"].fillna(False).astype(bool).sum())
                                if "truncated" in part else 0)
            latency = part["latency_s"].mean()
            row["latency_mean_s"] = None if pd.isna(latency) else float(latency)
            row["tokens_in"] = int(part["tokens_in"].sum())
            row["tokens_out"] = int(part["tokens_out"].sum())
            row["cost_usd"] = float(part["cost_usd"].sum())
            replayed = (part["replayed"].fillna(False).to_numpy(dtype=bool)
                        if "replayed" in part else None)
            row["spent_usd"] = (row["cost_usd"] if replayed is None
                                else float(part["cost_usd"][~replayed].sum()))
            for column in ("judge_tokens_in", "judge_tokens_out"):
                row[column] = int(part[column].sum()) if column in part else 0
            row["judge_cost_usd"] = (float(part["judge_cost_usd"].sum())
                                     if "judge_cost_usd" in part else 0.0)
            rows.append(row)
        frame = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
        for column in ("accuracy", "ci_low", "ci_high", "coverage", "latency_mean_s"):
            frame[column] = frame[column].astype("float64")
        present = [c for c in KIND_SUMMARY_COLUMNS if c in runs.columns]
        for column in present:  # tokens and cost by kind, when the runs table has them
            sums = [_rows_of(runs, arm)[column].sum() for arm in self.arms]
            frame[column] = pd.Series(
                [int(v) if column.startswith("tokens_") else float(v) for v in sums],
                dtype="int64" if column.startswith("tokens_") else "float64")
        if self.has_scores:
            at = list(frame.columns).index("ci_high") + 1
            intervals = [self.score_interval(arm) for arm in self.arms]
            for offset, column in enumerate(SCORE_COLUMNS):
                values = [interval[offset] for interval in intervals]
                frame.insert(at + offset, column, pd.Series(values, dtype="float64"))
        return frame

    @property
    def has_scores(self) -> bool:
        """Whether any run has a ``score`` (the scorer gives partial credit)."""
        runs = self.columns(["score"])
        return "score" in runs and bool(runs["score"].notna().any())

    def score_interval(self, arm: str) -> Interval:
        """One arm's mean score over items with its item-clustered 95% CI."""
        runs = self.stat_runs()
        made = int(((runs["arm"] == arm) & runs["correct"].notna() & runs_made(runs)).sum())
        return clustered_mean_ci(self.item_scores(arm).tolist(), trials=made)

    def item_scores(self, arm: str) -> pd.Series:
        """Each item's mean score over its scored runs, for one arm.

        A run's score is its ``score``, or 1/0 from ``correct`` where the scorer
        gave none (an arm error, a failed run); runs never made (``budget_stop``)
        and runs without a verdict are left out.
        """
        runs = self.stat_runs()
        mask = (runs["arm"] == arm) & runs["correct"].notna() & runs_made(runs)
        rows = runs.loc[mask, [c for c in ("item_id", ITEM_INDEX, "correct", "score")
                               if c in runs]]
        fallback = rows["correct"].astype("float64")
        score = (rows["score"].astype("float64").fillna(fallback) if "score" in rows
                 else fallback)
        codes, ids = item_codes(rows)  # integer groups: no item id hashed (1M runs)
        means = score.groupby(codes, sort=False).mean().astype("float64")
        return pd.Series(means.to_numpy(), index=ids, dtype="float64", name=means.name)

    def flaky_summary(self) -> pd.DataFrame:
        """Per arm, its flaky items: ``arm, items, flaky, flaky_share`` (``items``: the items
        with a scored run). An item is flaky when its scored runs disagree
        (:func:`hr_core.stats.accuracy.flaky_cells`): with one run per item none can be."""
        runs = self.stat_runs()
        rows = []
        for arm in self.arms:
            counts = item_counts(_rows_of(runs, arm), arm)
            flaky = int(flaky_cells(counts["scored"].to_numpy(),
                                    counts["correct"].to_numpy()).sum())
            rows.append({"arm": arm, "items": len(counts), "flaky": flaky,
                         "flaky_share": flaky / len(counts) if len(counts) else math.nan})
        return pd.DataFrame(rows, columns=["arm", "items", "flaky", "flaky_share"])

    def slice_summary(self, fields: Iterable[str] | None = None) -> pd.DataFrame:
        """Each arm's accuracy with its 95% CI per value of each slice field: the columns
        of :data:`hr_core.stats.slices.SLICE_COLUMNS`, one row per (field, value, arm).

        ``fields`` default to the manifest's ``slices`` (the spec's); the values come
        from the items' payloads (:mod:`hr_core.stats.slices`: a missing key is the slice
        ``(missing)``, a slice below ``MIN_ITEMS`` items has the note "too few items
        to tell"), and each arm's paired comparison with the verdict's best arm per
        slice (:mod:`hr_core.stats.slice_compare`: the one comparison, Bonferroni over the
        field's slices). Empty (with the columns) without slices.
        """
        names = check_slices(list(self.manifest.slices or []) if fields is None
                             else list(fields))
        key = ("slices", tuple(names))
        found: pd.DataFrame | None = self._memo.get(key)
        if found is not None:  # report.md and summary_slices.parquet: computed once
            return found
        reference = self.reference
        values = slice_values(reference if reference is not None else [], names)
        runs = self.stat_runs()
        counts = {arm: item_counts(_rows_of(runs, arm), arm) for arm in self.arms}
        found = self._memo[key] = slice_accuracy(counts, values, best=self.verdict().best)
        return found

    def compare(self, a: str, b: str) -> PairedDifference:
        """Paired difference ``accuracy(a) - accuracy(b)`` over the items both scored.

        Returns ``diff, ci_low, ci_high, p_value, n_items, verdict, method`` (a named
        tuple) from :func:`hr_core.stats.compare_paired`, the one comparison: the verdict
        is ``better`` / ``worse`` (``a`` against ``b``; the interval excludes 0),
        ``no detectable change`` or ``too few items`` (below ``hr_core.stats.MIN_ITEMS``
        items). Until this release it was ``higher`` / ``lower`` / ``no clear
        difference`` / ``too few items to tell``: ``hr_core.stats.decision_from_legacy``
        reads those.
        """
        for arm in (a, b):
            if arm not in self.arms:
                raise KeyError(f"no arm {arm!r} in this benchmark (arms: {', '.join(self.arms)})")
        acc_a, acc_b = self.item_accuracy(a), self.item_accuracy(b)
        common = acc_a.index.intersection(acc_b.index, sort=False)
        got = compare_paired(acc_a[common].to_numpy(), acc_b[common].to_numpy())
        return PairedDifference(got.estimate, got.low, got.high, got.p_value, got.n_items,
                                got.decision, got.method)
