"""Accuracy by slice: item fields (payload keys) that split a run's items into groups.

A spec's ``slices: [field, ...]`` (``hr_benchmark(slices=...)``) names keys of the
items' payloads; with the reference's default ``item: None`` every column but the id
and the label is one. Each value of a field is a slice: the summary's slice table
gives each arm's accuracy (the one accuracy of :mod:`hr_core.stats.accuracy`) with its CI
per slice and its paired comparison with the run's best arm there (the one
comparison, Bonferroni over the field's slices, :mod:`hr_core.stats.slice_compare`), and
``hr diff`` and the regression check the paired difference per slice between two runs.
An item without the key (or with ``null``) is in the slice :data:`MISSING_SLICE`; a
slice of fewer than ``hr_core.stats.MIN_ITEMS`` items says so instead of a verdict.

Slices are an analysis setting, like ``max_error_rate``: they are recorded in the
manifest (``slices``) but are not part of the run id (the same arms on the same items
give the same runs, however they are sliced afterwards).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from hr_core.core.errors import SpecError
from hr_core.core.identity import canonical_json
from hr_core.stats import MIN_ITEMS, TOO_FEW_ITEMS, accuracy_interval, compare_paired
from hr_core.stats.slice_compare import COMPARE_COLUMNS, slice_comparisons

__all__ = ["MAX_SLICES", "MAX_SLICE_VALUES", "MISSING_SLICE", "SLICE_COLUMNS", "SLICE_SUMMARY",
           "SLICE_SUMMARY_CSV",
           "check_slice_fields", "check_slices", "slice_accuracy", "slice_differences",
           "slice_values"]

MISSING_SLICE = "(missing)"
"""The slice of items whose payload lacks the field (or has ``null`` there)."""

MAX_SLICES = 8
"""The most fields a spec may slice by."""

MAX_SLICE_VALUES = 50
"""Values kept per field, the largest slices first (a field with a value per item, such as a
document id over 100k items, would otherwise make a table as long as the run)."""

SLICE_COLUMNS = ("slice", "value", "arm", "items", "accuracy", "ci_low", "ci_high", "note",
                 *COMPARE_COLUMNS)
"""The columns of the summary's slice table (``summary_slices.parquet``): each arm's
accuracy per slice value, then its paired comparison with the best arm
(``hr_core.stats.slice_compare.COMPARE_COLUMNS``)."""

SLICE_SUMMARY = "summary_slices.parquet"
"""The slice table's file in a run folder (and ``summary_slices.csv``), when the spec has
slices."""
SLICE_SUMMARY_CSV = "summary_slices.csv"

_NAME_CHARS = 100


def check_slices(value: Any) -> list[str]:
    """A spec's ``slices`` checked: a list of at most :data:`MAX_SLICES` distinct field names.

    Example:
        >>> check_slices(["kind", "source"])
        ['kind', 'source']
    """
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise SpecError(f"slices must be a list of item fields (slices: [type, source]), "
                        f"not {value!r}")
    fields = list(value)
    if len(fields) > MAX_SLICES:
        raise SpecError(f"slices: {len(fields)} fields; at most {MAX_SLICES}")
    for field in fields:
        if not isinstance(field, str) or not field.strip() or len(field) > _NAME_CHARS:
            raise SpecError(f"slices: {field!r} is not a field name (a payload key of at "
                            f"most {_NAME_CHARS} characters)")
    if len(set(fields)) != len(fields):
        raise SpecError(f"slices: a field is named twice in {fields!r}")
    return fields


def check_slice_fields(value: Any, items: Iterable[Any]) -> list[str]:
    """:func:`check_slices`, and each field is a payload key of at least one item (a field no
    item has is a typo: the error names the keys there are; missing from *some* items, it is
    the slice :data:`MISSING_SLICE`).

    Example:
        >>> check_slice_fields(["kind"], [("q1", {"kind": "a"}), ("q2", {})])
        ['kind']
    """
    fields = check_slices(value)
    if not fields:
        return fields
    seen: set[str] = set()
    for item in items:
        if isinstance(item[1], Mapping):
            seen.update(map(str, item[1]))
    for field in fields:
        if field not in seen:
            known = ", ".join(sorted(seen)[:20]) or "none: the payloads are not mappings"
            raise SpecError(f"slices: no item has the field {field!r} (payload keys: {known})")
    return fields


def _value(payload: Any, field: str) -> str:
    # type() first: isinstance against the Mapping ABC was most of the time at 100k items
    found = payload.get(field) if type(payload) is dict or isinstance(payload, Mapping) \
        else None
    if found is None:
        return MISSING_SLICE
    return found if type(found) is str or isinstance(found, str) else canonical_json(found)


def slice_values(items: Iterable[Any], fields: Sequence[str]) -> dict[str, dict[str, str]]:
    """For each field, each item's slice value (text; JSON for numbers and lists).

    ``items`` are ``Item`` (or any ``(id, payload, ...)`` tuples).

    Example:
        >>> slice_values([("q1", {"kind": "a"}), ("q2", {})], ["kind"])
        {'kind': {'q1': 'a', 'q2': '(missing)'}}
    """
    pairs = [(str(item[0]), item[1]) for item in items]
    return {field: {item_id: _value(payload, field) for item_id, payload in pairs}
            for field in fields}


def _groups(ids: pd.Index, values: Mapping[str, str]) -> list[tuple[str, np.ndarray]]:
    """The slices of ``ids`` (largest first, at most :data:`MAX_SLICE_VALUES`): each value
    with the positions of its items."""
    known = pd.Series(values, dtype=object) if values else pd.Series(dtype=object)
    labels = known.reindex(pd.Index(ids).astype(str)).fillna(MISSING_SLICE)  # by id: a join
    codes, names = pd.factorize(labels.to_numpy())
    sizes = np.bincount(codes, minlength=len(names))
    order = sorted(range(len(names)), key=lambda k: (-int(sizes[k]), str(names[k])))
    return [(str(names[k]), np.flatnonzero(codes == k)) for k in order[:MAX_SLICE_VALUES]]


def slice_accuracy(counts: Mapping[str, pd.DataFrame],
                   values: Mapping[str, Mapping[str, str]], level: float = 0.95,
                   best: str | None = None) -> pd.DataFrame:
    """Each arm's accuracy with its CI per slice value, and its paired comparison with
    ``best`` there: one row per (field, value, arm), the columns :data:`SLICE_COLUMNS`.

    ``counts`` are each arm's per-item ``correct`` and ``scored`` runs made
    (:func:`hr_core.stats.accuracy.item_counts`); ``note`` is ``hr_core.stats.TOO_FEW_ITEMS``
    for a slice of fewer than ``MIN_ITEMS`` items. ``best`` is the run's best arm (the
    verdict's; default: the arm with the highest accuracy over all its runs); the
    comparison is :func:`hr_core.stats.slice_compare.slice_comparisons`.

    Example:
        >>> counts = {"a": pd.DataFrame({"correct": [1, 0], "scored": [1, 1]},
        ...                             index=["q1", "q2"])}
        >>> table = slice_accuracy(counts, {"kind": {"q1": "x"}})
        >>> table[["value", "items", "accuracy"]].values.tolist()
        [['(missing)', 1, 0.0], ['x', 1, 1.0]]
    """
    rows = []
    for field, of_field in values.items():
        for arm, table in counts.items():
            for value, at in _groups(table.index, of_field):
                part = table.iloc[at]
                interval = accuracy_interval(part["correct"].tolist(), part["scored"].tolist(),
                                             level)
                rows.append({"slice": field, "value": value, "arm": arm, "items": len(at),
                             "accuracy": interval.estimate, "ci_low": interval.low,
                             "ci_high": interval.high,
                             "note": TOO_FEW_ITEMS if len(at) < MIN_ITEMS else ""})
    frame = pd.DataFrame(rows, columns=list(SLICE_COLUMNS[:8]))
    frame = frame.astype({"items": "int64", "accuracy": "float64", "ci_low": "float64",
                          "ci_high": "float64"})
    shares = pd.DataFrame({arm: table["correct"] / table["scored"]
                           for arm, table in counts.items()}, dtype="float64")
    if best is None and counts:
        best = max(counts, key=lambda a: (counts[a]["correct"].sum()
                                          / max(int(counts[a]["scored"].sum()), 1)))
    groups = {field: _groups(shares.index, of_field) for field, of_field in values.items()}
    compared = slice_comparisons(shares, groups, best)
    frame = frame.merge(compared, on=["slice", "value", "arm"], how="left", validate="1:1")
    # each value's arms on adjacent rows (largest slices first, as the first arm has them)
    keys = list(zip(frame["slice"], frame["value"], strict=True))
    rank = {key: i for i, key in enumerate(dict.fromkeys(keys))}
    order = sorted(range(len(keys)), key=lambda i: rank[keys[i]])
    return frame.iloc[order].reset_index(drop=True)


def slice_differences(ids: pd.Index, now: np.ndarray, then: np.ndarray,
                      values: Mapping[str, Mapping[str, str]], level: float = 0.95
                      ) -> list[dict[str, Any]]:
    """The paired difference ``now - then`` per slice of the paired items ``ids``.

    Each row: ``slice, value, n_items, accuracy_then, accuracy_now, diff, ci_low,
    ci_high, p_value, verdict`` (the one comparison, :func:`hr_core.stats.compare_paired`:
    "too few items" below ``MIN_ITEMS`` items; not corrected for the number of slices).
    """
    rows = []
    for field, of_field in values.items():
        for value, at in _groups(ids, of_field):
            found = compare_paired(now[at], then[at], level=level)
            rows.append({"slice": field, "value": value, "n_items": found.n_items,
                         "accuracy_then": float(then[at].mean()),
                         "accuracy_now": float(now[at].mean()), "diff": found.estimate,
                         "ci_low": found.low, "ci_high": found.high,
                         "p_value": found.p_value, "verdict": found.decision})
    return rows
