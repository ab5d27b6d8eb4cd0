"""Single items of a run: the failed runs of an arm by failure kind, and where two arms disagree.

Used by the HTML report (capped tables) and ``hr show`` (the terminal). Pure
pandas over a ``Benchmark.runs`` table and the run's ``reference.jsonl``
(question and label of each item).

Example:
    >>> import pandas as pd
    >>> runs = pd.DataFrame({"arm": ["a", "b"], "item_id": ["q1", "q1"], "run": [1, 1],
    ...     "output": ["Paris", "Lyon"], "correct": pd.array([True, False], dtype="boolean"),
    ...     "failure_kind": [None, "wrong"], "error": [None, None]})
    >>> items = {"q1": ItemText("Capital of France?", "Paris")}
    >>> failed_runs(runs, items)[["arm", "failure_kind", "question", "output"]].values.tolist()
    [['b', 'wrong', 'Capital of France?', 'Lyon']]
    >>> disagreements(runs, "a", "b", items)["a_output"].tolist()
    ['Paris']
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from hr_core.accuracy import arms_in_order, runs_made
from hr_core.engine.runs_file import RowTexts
from hr_core.failures import FAILURE_KINDS

__all__ = [
    "EXCERPT_CHARS",
    "ROWS_PER_GROUP",
    "ItemText",
    "ItemTexts",
    "arm_order",
    "disagreements",
    "excerpt",
    "failed_runs",
    "failure_counts",
    "item_texts",
]

ROWS_PER_GROUP = 25
"""Rows the HTML report shows per (arm, failure kind) and for disagreements; the rest are
counted and left in ``runs.parquet`` (so the report's size does not grow with items)."""

EXCERPT_CHARS = 300
"""Characters kept of a question, payload, label, output or error in a table cell."""

FAILED_COLUMNS = ("arm", "failure_kind", "item_id", "run", "question", "label", "output",
                  "error")
DIFF_COLUMNS = ("item_id", "question", "label", "a_output", "a_correct", "b_output",
                "b_correct")


class ItemText(NamedTuple):
    """What a table shows of an item: its question (or a payload excerpt) and its label."""

    question: str
    label: str


def excerpt(value: Any, limit: int = EXCERPT_CHARS) -> str:
    """A value as one short line of text (``…`` when cut); ``None`` is empty.

    Example:
        >>> excerpt({"document": "x" * 10, "question": "Why?"}, limit=30)
        '{"document":"xxxxxxxxxx","que…'
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
        except (TypeError, ValueError):
            text = str(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _question(payload: Any) -> str:
    if isinstance(payload, Mapping):
        for key in ("question", "prompt", "input", "query"):
            if isinstance(payload.get(key), str):
                return excerpt(payload[key])
    return excerpt(payload)


class ItemTexts(Mapping[str, ItemText]):
    """``{item id: ItemText}``, each text made when a table asks for it (a report shows a
    few hundred items of a million: only those are formatted)."""

    def __init__(self, items: Mapping[str, tuple[Any, Any]]) -> None:
        self._items = items

    def __getitem__(self, item_id: str) -> ItemText:
        payload, label = self._items[item_id]
        return ItemText(_question(payload), excerpt(label))

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


def item_texts(records: Iterable[Any]) -> ItemTexts:
    """Item texts from reference records (``{"id", "payload", "label"}`` mappings or
    ``Item`` objects).

    The question is the payload's ``question`` (or ``prompt``/``input``/``query``)
    when it has one, else an excerpt of the whole payload.
    """
    items = {}
    for r in records:
        if isinstance(r, Mapping):
            items[str(r.get("id"))] = (r.get("payload"), r.get("label"))
        else:
            items[str(r.id)] = (r.payload, r.label)
    return ItemTexts(items)


def arm_order(summary: pd.DataFrame) -> list[str]:
    """The arms best first (accuracy, highest first; arms without one last): one order for
    every table and figure."""
    ranked = summary.assign(_acc=pd.to_numeric(summary["accuracy"], errors="coerce"))
    ranked = ranked.sort_values("_acc", ascending=False, na_position="last", kind="stable")
    return [str(a) for a in ranked["arm"]]


def _correct_text(value: Any) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "unscored"
    return "correct" if bool(value) else "wrong"


def _column_at(runs: pd.DataFrame, texts: RowTexts | None, rows: np.ndarray,
               column: str) -> list[Any] | None:
    """``column`` at row positions ``rows``: from ``runs``, else read by ``texts`` (a stored
    table read without its texts); ``None`` when neither has it."""
    if column in runs.columns:
        return list(runs[column].iloc[rows])
    if texts is not None:
        return texts.get(rows, column)
    return None


def failed_runs(runs: pd.DataFrame, items: Mapping[str, ItemText], *,
                arm: str | None = None, kind: str | None = None,
                item: str | None = None, arms: Sequence[str] | None = None,
                failed_only: bool = True, per_group: int | None = None,
                texts: RowTexts | None = None) -> pd.DataFrame:
    """The runs that failed, sorted by arm (in ``arms`` order), failure kind and item.

    Columns: ``arm, failure_kind, item_id, run, question, label, output, error``.
    ``arm``, ``kind`` and ``item`` filter (``kind="unscored"`` gives the runs
    without a verdict instead). ``failed_only=False`` keeps every run; then
    ``failure_kind`` reads ``correct`` or ``unscored`` for the runs without one.
    ``per_group`` keeps that many rows per (arm, kind) (texts are made for those only).
    ``texts`` reads ``output`` and ``error`` of the rows kept when ``runs`` lacks them.
    """
    kinds = runs["failure_kind"]
    if kind == "unscored":
        mask = kinds.isna() & runs["correct"].isna()
    elif kind == "correct":
        mask = kinds.isna() & runs["correct"].fillna(False).astype(bool)
    else:
        mask = kinds.notna() if failed_only or kind is not None else kinds.notna() | kinds.isna()
        if kind is not None:
            mask &= kinds == kind
    if arm is not None:
        mask &= runs["arm"] == arm
    if item is not None:
        mask &= runs["item_id"].astype(str) == str(item)
    # the keys only (not the outputs and errors of every failed run), ranks by get_indexer:
    # the report of a 1M-run table spent a second here
    at = np.flatnonzero(mask.to_numpy(dtype=bool))
    rows = runs[["arm", "item_id", "run", "correct", "failure_kind"]].iloc[at]
    order = list(dict.fromkeys(
        list(arms) if arms is not None else [str(a) for a in arms_in_order(runs)]))
    unscored = rows["correct"].isna().to_numpy()
    no_kind = rows["failure_kind"].isna().to_numpy()
    kind_names = (*FAILURE_KINDS, "unscored", "correct")
    kind_ranks = np.where(no_kind, np.where(unscored, len(FAILURE_KINDS), len(FAILURE_KINDS) + 1),
                          _rank(pd.Index(kind_names), rows["failure_kind"]))
    keys = pd.DataFrame({
        "_arm": _rank(pd.Index(order), rows["arm"].astype(str)),
        "_kind": kind_ranks,
        "item_id": rows["item_id"].astype(str).to_numpy(), "run": rows["run"].to_numpy(),
        "_row": range(len(rows)),
    }).sort_values(["_arm", "_kind", "item_id", "run"], kind="stable")
    if per_group is not None:
        keys = keys.groupby(["_arm", "_kind"], sort=False).head(per_group)
    chosen = keys["_row"].to_numpy()
    picked = runs[["arm", "item_id", "run"]].iloc[at[chosen]]
    outputs = _column_at(runs, texts, at[chosen], "output")
    errors = _column_at(runs, texts, at[chosen], "error")
    kinds_text = [("unscored" if u else "correct") if n else k for k, n, u in zip(
        rows["failure_kind"].iloc[chosen].astype(object), no_kind[chosen], unscored[chosen],
        strict=True)]
    ids = picked["item_id"].astype(str).tolist()
    shown = [items.get(i) or ItemText("", "") for i in ids]
    return pd.DataFrame({
        "arm": picked["arm"].astype(str).to_numpy(),
        "failure_kind": kinds_text,
        "item_id": ids,
        "run": picked["run"].to_numpy(),
        "question": [t.question for t in shown],
        "label": [t.label for t in shown],
        "output": [excerpt(v) for v in outputs] if outputs is not None else "",
        "error": [excerpt(v) for v in errors] if errors is not None else "",
    }, columns=list(FAILED_COLUMNS))


def _rank(names: pd.Index, values: Any) -> np.ndarray:
    """Each value's position in ``names``; ``len(names)`` for a value not there."""
    found = names.get_indexer(pd.Index(values))
    return np.where(found < 0, len(names), found)


def failure_counts(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs per arm and failure kind (rows: arms, columns: kinds that occur)."""
    failed = runs.loc[runs["failure_kind"].notna(), ["arm", "failure_kind"]]
    return failed.groupby(["arm", "failure_kind"]).size().unstack(fill_value=0)


def disagreements(runs: pd.DataFrame, a: str, b: str,
                  items: Mapping[str, ItemText], limit: int | None = None,
                  texts: RowTexts | None = None) -> pd.DataFrame:
    """Items that arms ``a`` and ``b`` both scored where their share of correct runs differs.

    One row per item, side by side: ``item_id, question, label, a_output,
    a_correct, b_output, b_correct`` (the output of each arm's first run; the
    ``*_correct`` columns read ``correct``, ``wrong`` or ``2/3 correct``), the
    items where ``a`` is right first. ``limit`` keeps the first rows only (the
    ``total`` attribute of the frame's ``attrs`` still counts them all). ``texts``
    reads the outputs of the items shown when ``runs`` lacks them.
    """
    made = runs_made(runs)  # one accuracy: budget stops are not runs (hr_core.accuracy)
    scored = runs["correct"].notna() & made

    def per_item(arm: str) -> tuple[pd.DataFrame, pd.Series]:
        at = np.flatnonzero(((runs["arm"] == arm) & scored).to_numpy(dtype=bool))
        by_run = np.argsort(runs["run"].to_numpy()[at], kind="stable")
        at = at[by_run]
        rows = runs[["item_id", "correct"]].iloc[at]
        keys = rows["item_id"].astype(str)
        hits = rows["correct"].astype(bool).groupby(keys, sort=False)
        frame = pd.DataFrame({"share": hits.mean(), "hits": hits.sum(), "n": hits.size()})
        return frame, pd.Series(at, index=keys.to_numpy())

    (left, left_at), (right, right_at) = per_item(a), per_item(b)
    both = left.join(right, how="inner", lsuffix="_a", rsuffix="_b")
    both = both.loc[both["share_a"] != both["share_b"]]
    both = both.assign(_gap=both["share_b"] - both["share_a"], _id=both.index)
    both = both.sort_values(["_gap", "_id"], kind="stable")
    total = len(both)
    if limit is not None:
        both = both.head(limit)
    differ = [str(i) for i in both.index]

    def first_outputs(at: pd.Series) -> list[Any]:
        """Each shown item's first output that is there, its runs in run order (only the
        shown items' outputs are read)."""
        mine = at[at.index.isin(differ)]
        values = _column_at(runs, texts, mine.to_numpy(), "output")
        found: dict[str, Any] = {}
        for key, value in zip(mine.index, values or [None] * len(mine), strict=True):
            if key not in found and not (value is None or value is pd.NA
                                         or (isinstance(value, float) and math.isnan(value))):
                found[key] = value
        return [found.get(i) for i in differ]

    a_outputs, b_outputs = first_outputs(left_at), first_outputs(right_at)

    def verdict(hits: Any, n: Any) -> str:
        return _correct_text(bool(hits)) if int(n) == 1 else f"{int(hits)}/{int(n)} correct"

    frame = pd.DataFrame({
        "item_id": differ,
        "question": [items.get(i, ItemText("", "")).question for i in differ],
        "label": [items.get(i, ItemText("", "")).label for i in differ],
        "a_output": [excerpt(v) for v in a_outputs],
        "a_correct": [verdict(h, n) for h, n in zip(both["hits_a"], both["n_a"], strict=True)],
        "b_output": [excerpt(v) for v in b_outputs],
        "b_correct": [verdict(h, n) for h, n in zip(both["hits_b"], both["n_b"], strict=True)],
    }, columns=list(DIFF_COLUMNS))
    frame.attrs["total"] = total
    return frame
