"""One accuracy for every figure: over the runs made, item by item (SPEC section 12).

A run that a budget stopped (``failure_kind="budget_stop"``) was never made: its
row keeps ``correct`` False (the seed's record rule) but no figure counts it.
Accuracy is the mean over items of each item's share of correct runs among its
scored runs made; ``coverage`` is runs made / runs planned, and any arm below 1
gets a warning saying how to finish it. The summary, ``compare``, the regression
check, the reports and the dashboard all use these functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from hr_core.core.frames import records

__all__ = [
    "arms_in_order",
    "coverage_warning",
    "coverage_warnings",
    "flaky_cells",
    "item_accuracies",
    "item_accuracy",
    "item_counts",
    "name_codes",
    "runs_made",
]

ITEM_INDEX = "item_index"
"""The column of ``runs.parquet`` with each row's item position in the reference: when a
runs table has it, :func:`item_codes` counts items by it instead of hashing item ids."""

NOT_MADE = "budget_stop"
"""The failure kind of a run that was never made (its budget ran out first)."""


def runs_made(runs: pd.DataFrame) -> pd.Series:
    """True for each row of a runs table that was made (not budget stopped).

    Example:
        >>> runs_made(pd.DataFrame({"failure_kind": [None, "budget_stop", "wrong"]})).tolist()
        [True, False, True]
    """
    if "failure_kind" not in runs.columns:
        return pd.Series(True, index=runs.index)
    return runs["failure_kind"].ne(NOT_MADE).fillna(True).astype(bool)


def _by_position(runs: pd.DataFrame) -> bool:
    """Whether ``runs`` may be coded by :data:`ITEM_INDEX`: hr read it from one
    ``runs.parquet`` (``attrs[ITEM_INDEX]`` names the file), so its positions are those of
    one reference. Any other table (read by hand, two runs concatenated, whose positions
    may name other items) is coded by its ids."""
    return ITEM_INDEX in runs.columns and runs.attrs.get(ITEM_INDEX) is not None


def item_codes(runs: pd.DataFrame, rows: np.ndarray | None = None
               ) -> tuple[np.ndarray, pd.Index]:
    """Each row's item as a code ``0..n-1`` (items in first-seen order) and the ids of the
    codes: what ``pd.factorize(runs["item_id"])`` gives; of the ``rows`` only when given
    (a boolean mask or positions).

    A table hr read from one ``runs.parquet`` is coded from its :data:`ITEM_INDEX`: no
    item id is hashed (at 1M runs, factorizing the ids and grouping by them each took
    much memory). Any other table's ids are factorized.

    Example:
        >>> runs = pd.DataFrame({"item_id": ["q2", "q1", "q2"], "item_index": [1, 0, 1]})
        >>> runs.attrs[ITEM_INDEX] = "one file"  # as RunsFile marks what it reads
        >>> codes, ids = item_codes(runs)
        >>> codes.tolist(), ids.tolist()
        ([0, 1, 0], ['q2', 'q1'])
        >>> item_codes(runs.drop(columns="item_index"))[0].tolist()
        [0, 1, 0]
    """
    if not _by_position(runs):
        ids_of = runs["item_id"] if rows is None else (
            runs["item_id"][rows] if rows.dtype == bool else runs["item_id"].iloc[rows])
        codes, ids = pd.factorize(ids_of.astype(str))
        return codes, pd.Index(ids, name="item_id")
    at = (np.arange(len(runs)) if rows is None else
          np.flatnonzero(rows) if rows.dtype == bool else np.asarray(rows))
    places = runs[ITEM_INDEX].to_numpy()[at]  # int32, as stored: no copy of the column
    if not len(places):
        return np.zeros(0, dtype=np.intp), pd.Index([], dtype=runs["item_id"].dtype,
                                                    name="item_id")
    before = np.maximum.accumulate(places)
    new = np.ones(len(places), dtype=bool)
    new[1:] = places[1:] > before[:-1]
    del before
    first = np.flatnonzero(new)  # rows where a higher position than any before appears
    present = np.bincount(places)
    if len(first) == np.count_nonzero(present):  # items first seen in reference order
        lookup = np.cumsum(present > 0, dtype=np.intp)
        lookup -= 1
    else:  # any other order: rank the positions by their first row
        _, first = np.unique(places, return_index=True)
        first = np.sort(first)
        lookup = np.empty(len(present), dtype=np.intp)
        lookup[places[first]] = np.arange(len(first))
    ids = pd.Index(runs["item_id"].iloc[at[first]].astype(str), name="item_id")
    return lookup[places], ids


def flaky_cells(scored: np.ndarray, hits: np.ndarray) -> np.ndarray:
    """True where an item's scored runs disagree (a *flaky* item): two or more scored runs
    made, some right and some wrong. ``scored`` and ``hits`` are per-item counts (as
    :func:`item_counts` gives them).

    Example:
        >>> flaky_cells(np.array([3, 3, 1, 2]), np.array([1.0, 3.0, 0.0, 1.0])).tolist()
        [True, False, False, True]
    """
    return (scored >= 2) & (hits > 0) & (hits < scored)


def item_total(runs: pd.DataFrame) -> int:
    """How many distinct items a runs table has (``runs["item_id"].nunique()``; by
    :data:`ITEM_INDEX` when :func:`item_codes` would code by it).

    Example:
        >>> item_total(pd.DataFrame({"item_id": ["q2", "q1", "q2"]}))
        2
    """
    if _by_position(runs):
        return int(np.count_nonzero(np.bincount(runs[ITEM_INDEX].to_numpy())))
    return int(runs["item_id"].nunique())


def item_counts(runs: pd.DataFrame, arm: str) -> pd.DataFrame:
    """Per item (in first-seen order), one arm's ``correct`` and ``scored`` runs made.

    Items with no scored run made are left out.

    Example:
        >>> runs = pd.DataFrame({"arm": ["a"] * 3, "item_id": ["q1", "q1", "q2"],
        ...                      "correct": pd.array([True, False, False], dtype="boolean"),
        ...                      "failure_kind": [None, "wrong", "budget_stop"]})
        >>> item_counts(runs, "a").to_dict("index")
        {'q1': {'correct': 1, 'scored': 2}}
    """
    keep = ((runs["arm"] == arm) & runs["correct"].notna() & runs_made(runs)).to_numpy(bool)
    codes, ids = item_codes(runs, keep)
    hits = runs["correct"].to_numpy(dtype=bool, na_value=False)[keep]
    return pd.DataFrame({"correct": np.bincount(codes, weights=hits, minlength=len(ids))
                         .astype("int64"),
                         "scored": np.bincount(codes, minlength=len(ids)).astype("int64")},
                        index=ids)


def item_accuracy(runs: pd.DataFrame, arm: str) -> pd.Series:
    """Each item's share of correct runs among its scored runs made, for one arm.

    Example:
        >>> runs = pd.DataFrame({"arm": ["a"] * 4, "item_id": ["q1", "q1", "q2", "q3"],
        ...                      "correct": pd.array([True, False, None, False], dtype="boolean"),
        ...                      "failure_kind": [None, "wrong", None, "budget_stop"]})
        >>> item_accuracy(runs, "a").to_dict()
        {'q1': 0.5}
    """
    counts = item_counts(runs, arm)
    return (counts["correct"] / counts["scored"]).astype("float64")


def item_accuracies(runs: pd.DataFrame) -> pd.DataFrame:
    """:func:`item_accuracy` of every arm at once: items (first-seen order) by arms.

    One grouping over the whole table instead of one pass per arm; NaN where an
    arm has no scored run made of the item.

    Example:
        >>> runs = pd.DataFrame({"arm": ["a", "a", "b"], "item_id": ["q1", "q1", "q2"],
        ...                      "correct": pd.array([True, False, True], dtype="boolean"),
        ...                      "failure_kind": [None, "wrong", None]})
        >>> item_accuracies(runs).to_dict()
        {'a': {'q1': 0.5, 'q2': nan}, 'b': {'q1': nan, 'q2': 1.0}}
    """
    keep = (runs["correct"].notna() & runs_made(runs)).to_numpy(dtype=bool)
    arms = arms_in_order(runs)
    # integer codes and bincount: a groupby on two string keys was slow at 1M runs
    arm_codes = name_codes(arms, runs["arm"])[keep]
    item_codes_, items = item_codes(runs, keep)
    hits = runs["correct"].fillna(False).to_numpy(dtype=bool)[keep]
    cells = len(items) * len(arms)
    flat = arm_codes.astype("int64") * len(items) + item_codes_
    del arm_codes, item_codes_
    scored = np.bincount(flat, minlength=cells).astype("float64")
    shares = np.bincount(flat, weights=hits, minlength=cells).astype("float64", copy=False)
    del flat, hits
    with np.errstate(invalid="ignore", divide="ignore"):
        np.divide(shares, scored, out=shares)  # 0/0 is NaN: no scored run made
    return pd.DataFrame(shares.reshape(len(arms), len(items)).T,
                        index=items, columns=arms)


def name_codes(names: Sequence[Any], values: pd.Series) -> np.ndarray:
    """Each value's position in ``names`` (unique), ``-1`` where it is none of them: what
    ``pd.Index(names).get_indexer(pd.Index(values))`` gives, by one vectorised comparison
    per name. For the few arms or failure kinds of a million-run table: no Python string
    is made per row (``get_indexer`` made one: much memory at 1M runs).

    A categorical of strings (the runs table's ``arm`` and ``failure_kind``) is looked up
    by its categories, once each, and its integer codes: the same positions without one
    comparison of every row per name.

    Example:
        >>> name_codes(["a", "b"], pd.Series(["b", None, "a", "c"])).tolist()
        [1, -1, 0, -1]
        >>> name_codes(["a", "b"], pd.Series(["b", None, "a", "c"], dtype="category")).tolist()
        [1, -1, 0, -1]
    """
    dtype = values.dtype
    if (isinstance(dtype, pd.CategoricalDtype) and dtype.categories.inferred_type == "string"
            and all(isinstance(name, str) for name in names)):
        place = {name: index for index, name in enumerate(names)}
        # one slot more for the code -1 (a missing value): it reads -1 too
        by_code = np.array([place.get(c, -1) for c in dtype.categories] + [-1], dtype=np.intp)
        return by_code[np.asarray(values.cat.codes)]
    codes = np.full(len(values), -1, dtype=np.intp)
    for index, name in enumerate(names):
        codes[(values == name).to_numpy(dtype=bool, na_value=False)] = index
    return codes


def arms_in_order(runs: pd.DataFrame) -> list[str]:
    """The arms of a runs table in first-seen order (``pd.unique``: a Python loop over
    a million rows took a second).

    Example:
        >>> arms_in_order(pd.DataFrame({"arm": ["b", "a", "b"]}))
        ['b', 'a']
    """
    return list(runs["arm"].unique())


def coverage_warning(arm: str, made: int, planned: int) -> str | None:
    """The warning for an arm with runs not made, or ``None`` when all were made.

    Example:
        >>> coverage_warning("keyword", 82, 120)[:72]
        "arm 'keyword': 38 of 120 planned runs were not made (budget stopped; cov"
    """
    if planned <= 0 or made >= planned:
        return None
    return (f"arm {arm!r}: {planned - made} of {planned} planned runs were not made "
            f"(budget stopped; coverage {made / planned:.0%}); its accuracy is over the "
            f"{made} runs made. To finish them, run the benchmark again on the same store "
            "with a larger budget (hr run SPEC --budget-calls N, or budget= in Python); the "
            "runs already made are kept.")


def coverage_warnings(summary: pd.DataFrame) -> list[str]:
    """The :func:`coverage_warning` of every arm of a summary (``runs``, ``budget_stop``).

    Example:
        >>> summary = pd.DataFrame({"arm": ["a", "b"], "runs": [10, 10], "budget_stop": [0, 4]})
        >>> [w.split(":")[0] for w in coverage_warnings(summary)]
        ["arm 'b'"]
    """
    if not {"arm", "runs", "budget_stop"} <= set(summary.columns):
        return []
    found = (coverage_warning(str(r["arm"]), int(r["runs"]) - int(r["budget_stop"]),
                              int(r["runs"])) for r in records(summary))
    return [w for w in found if w]
