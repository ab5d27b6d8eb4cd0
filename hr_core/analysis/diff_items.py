"""Per (arm, item) outcomes of one stored run, for ``hr diff`` (:mod:`hr_core.analysis.diff`).

One pass over the columns of a run it needs (:data:`DIFF_COLUMNS`) with integer codes and
``bincount`` (no groupby on item ids, fast at hundreds of thousands of runs): each cell
``(arm, item)`` gets its scored runs made, correct runs, error runs, its most frequent
outcome kind and whether its runs disagree (flaky). Accuracy is the one accuracy of
:mod:`hr_core.stats.accuracy` (runs a budget stopped are not runs).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import orjson
import pandas as pd

from hr_core.analysis.benchmark import Benchmark
from hr_core.analysis.items import column_at
from hr_core.core.failures import FAILURE_KINDS, OUTCOMES
from hr_core.stats.accuracy import (
    ITEM_INDEX,
    arms_in_order,
    flaky_cells,
    item_codes,
    name_codes,
    runs_made,
)
from hr_core.store.stored_reference import StoredReference, read_stored_reference

__all__: list[str] = []  # internal: hr_core.analysis.diff uses it

COST_KIND_COLUMNS = ("cost_input_usd", "cost_cache_read_usd", "cost_cache_write_usd",
                     "cost_output_usd")
"""The cost by kind a diff sums per arm, when the runs table has it."""

DIFF_COLUMNS = ("arm", "item_id", "run", "correct", "failure_kind", "latency_s", "cost_usd",
                *COST_KIND_COLUMNS, ITEM_INDEX)
"""The columns of ``runs.parquet`` a diff reads (a stored run reads only these: the
scores, tokens and judge columns are not read)."""

KINDS = OUTCOMES
"""Outcome kinds of a run (:data:`hr_core.core.failures.OUTCOMES`, hr's one order)."""

_CORRECT, _UNSCORED, _WRONG = (OUTCOMES.index(k) for k in ("correct", "unscored", "wrong"))
_STOP, _ERROR = OUTCOMES.index("budget_stop"), OUTCOMES.index("error")


class RunOutcomes:
    """One run's outcomes per (arm, item): arrays shaped ``(arms, items)``.

    Attributes:
        arms: arm names in run order; ``ids``: item ids (the codes' order).
        scored, hits, errors: scored runs made, correct ones, error runs.
        kind: each cell's most frequent outcome kind among its runs made (an index
            into :data:`KINDS`; ``budget_stop`` when none was made; -1 no run).
        planned_runs: each arm's most runs of one item.
    """

    def __init__(self, bench: Benchmark) -> None:
        self.bench = bench
        runs = bench.columns(DIFF_COLUMNS)
        self.table = runs
        self.arms: list[str] = [str(a) for a in arms_in_order(runs)]
        arm_codes = name_codes(self.arms, runs["arm"])
        codes, self.ids = item_codes(runs)
        n_items, n_arms = len(self.ids), len(self.arms)
        self.cell = arm_codes.astype(np.int64) * n_items + codes
        cells = n_arms * n_items
        made = runs_made(runs).to_numpy(dtype=bool)
        known = runs["correct"].notna().to_numpy(dtype=bool)
        right = runs["correct"].to_numpy(dtype=bool, na_value=False)
        scored = made & known
        self.scored = np.bincount(self.cell[scored], minlength=cells).reshape(n_arms, n_items)
        self.hits = np.bincount(self.cell[scored], weights=right[scored],
                                minlength=cells).reshape(n_arms, n_items)
        kind = name_codes(list(FAILURE_KINDS), runs["failure_kind"]) + 1  # as in OUTCOMES
        none = kind == 0  # no failure kind: correct, unscored, or a plain wrong
        kind[none & right] = _CORRECT
        kind[none & ~known] = _UNSCORED
        kind[none & known & ~right] = _WRONG
        counts = np.bincount(self.cell * len(KINDS) + kind,
                             minlength=cells * len(KINDS)).reshape(cells, len(KINDS))
        self.errors = counts[:, _ERROR].reshape(n_arms, n_items).copy()
        present = counts.sum(axis=1) > 0
        stops = counts[:, _STOP].copy()
        counts[:, _STOP] = 0
        modal = counts.argmax(axis=1)
        modal[(counts.sum(axis=1) == 0) & (stops > 0)] = _STOP
        modal[~present] = -1
        self.kind = modal.reshape(n_arms, n_items)
        del counts
        run_numbers = runs["run"].to_numpy()
        self.planned_runs = {arm: int(run_numbers[arm_codes == i].max(initial=0))
                             for i, arm in enumerate(self.arms)}
        latency = runs["latency_s"].to_numpy(dtype=np.float64, na_value=np.nan)
        cost = runs["cost_usd"].to_numpy(dtype=np.float64, na_value=np.nan)
        self.latency: dict[str, float | None] = {}
        self.cost: dict[str, float | None] = {}
        for i, arm in enumerate(self.arms):
            mine = (arm_codes == i) & made
            lat, usd = latency[mine], cost[mine]
            lat, usd = lat[~np.isnan(lat)], usd[~np.isnan(usd)]
            self.latency[arm] = float(lat.mean()) if len(lat) else None
            self.cost[arm] = float(usd.sum()) if len(usd) else None
        self.cost_kinds: dict[str, dict[str, float] | None] = dict.fromkeys(self.arms)
        if all(c in runs.columns for c in COST_KIND_COLUMNS):  # cost by kind: per arm
            by_kind = {c: runs[c].to_numpy(dtype=np.float64, na_value=np.nan)
                       for c in COST_KIND_COLUMNS}
            for i, arm in enumerate(self.arms):
                mine = (arm_codes == i) & made
                self.cost_kinds[arm] = {c: float(np.nansum(v[mine])) for c, v in by_kind.items()}

    def share(self, arm: int) -> np.ndarray:
        """Each item's share of correct scored runs for arm index ``arm`` (NaN: none)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.asarray(self.hits[arm] / self.scored[arm], dtype=np.float64)

    def flaky(self, arm: int) -> np.ndarray:
        """Items whose scored runs disagree, for arm index ``arm``."""
        return flaky_cells(self.scored[arm], self.hits[arm])

    def first_rows(self, arm: int, items: Sequence[int], *, column: str = "output",
                   where: np.ndarray | None = None) -> list[Any]:
        """``column`` of each item's first run (run order) for arm index ``arm``, of the
        rows ``where`` allows (a boolean mask over the table), ``None`` where it has none.
        Only the rows of ``items`` are read."""
        if not len(items):
            return []
        wanted = np.asarray(items, dtype=np.int64) + arm * len(self.ids)
        mask = np.isin(self.cell, wanted)
        if where is not None:
            mask &= where
        rows = np.flatnonzero(mask)
        rows = rows[np.lexsort((self.table["run"].to_numpy()[rows], self.cell[rows]))]
        first = rows[np.unique(self.cell[rows], return_index=True)[1]]
        values = column_at(self.table, self.bench.row_texts(), first, column) or [None] * len(
            first)
        found = dict(zip(self.cell[first].tolist(), values, strict=True))
        return [found.get(int(c)) for c in wanted.tolist()]


def content_digest(record: Mapping[str, Any]) -> bytes:
    """A short digest of an item's payload and label (sorted keys): equal contents, equal
    digests, whatever the key order of the file."""

    text = orjson.dumps([record.get("payload"), record.get("label")],
                        option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)
    return hashlib.blake2b(text, digest_size=16).digest()


def stored_reference(bench: Benchmark) -> StoredReference | None:
    """A stored run's ``reference.jsonl`` (``None`` without the file, or in memory)."""
    return None if bench.run_dir is None else read_stored_reference(bench.run_dir)


def parse_reference(stored: StoredReference
                    ) -> tuple[list[bytes], pd.Index, list[dict[str, Any]]]:
    """``reference.jsonl``'s lines (blank ones left out), their ids and records (``id,
    payload, label``), each line parsed once; a line that is not a record is the file's
    :class:`~hr_core.core.errors.CorruptRunError`."""
    numbered = stored.lines()
    records = [stored.record(number, line) for number, line in numbered]
    ids = [str(record["id"]) for record in records]
    return [line for _, line in numbered], pd.Index(ids, name="item_id"), records


def reference_changes(stored_a: StoredReference, lines_b: list[bytes], ids_b: pd.Index,
                      records_b: list[dict[str, Any]]) -> tuple[pd.Index, list[str]]:
    """Run a's item ids, and those of the items both runs have whose contents differ
    (:func:`content_digest`: key order aside), in a's order.

    A line of a that is byte for byte a line of b is that item, unchanged: only the
    other lines are parsed and digested (a nightly run on the same reference parses
    one file, not two, and digests nothing)."""
    same = dict(zip(lines_b, range(len(lines_b)), strict=True))
    at_b: dict[str, int] | None = None
    listed_b = ids_b.tolist()
    ids: list[str] = []
    changed: list[str] = []
    for number, line in stored_a.lines():
        found = same.get(line)
        if found is not None:
            ids.append(listed_b[found])
            continue
        record = stored_a.record(number, line)
        item = str(record["id"])
        ids.append(item)
        if at_b is None:
            at_b = {item_id: i for i, item_id in enumerate(listed_b)}
        j = at_b.get(item)
        if j is not None and content_digest(record) != content_digest(records_b[j]):
            changed.append(item)
    return pd.Index(ids, name="item_id"), changed
