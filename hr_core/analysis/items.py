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

from hr_core.core.failures import FAILURE_KINDS
from hr_core.data.reference import Reference
from hr_core.stats.accuracy import ITEM_INDEX, arms_in_order, item_codes, name_codes, runs_made
from hr_core.store.runs_file import RowTexts

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


def question_excerpt(payload: Any) -> str:
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
        return ItemText(question_excerpt(payload), excerpt(label))

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def many(self, ids: Sequence[str], places: Sequence[int] | None = None) -> list[ItemText]:
        """The texts of ``ids`` (empty for an id not there). ``places``: each item's
        position in the reference (``item_index``), which finds it without an index of
        every id when the items come from a ``Reference`` or ``reference.jsonl`` (their
        ``at``); an item whose place holds another id is looked up by its id."""
        at = getattr(self._items, "at", None)
        placed = at(places) if at is not None and places is not None else [None] * len(ids)
        texts = []
        for item_id, item in zip(ids, placed, strict=True):
            found = item[1:] if item is not None and item[0] == item_id else (
                self._items.get(item_id))
            texts.append(ItemText("", "") if found is None
                         else ItemText(question_excerpt(found[0]), excerpt(found[1])))
        return texts


def _item_places(runs: pd.DataFrame, rows: np.ndarray) -> list[int] | None:
    """The reference positions (``item_index``) of the items of rows ``rows``, when the
    table has them."""
    if ITEM_INDEX not in runs.columns:
        return None
    return runs[ITEM_INDEX].to_numpy()[np.asarray(rows, dtype=np.int64)].tolist()


class _ReferenceItems(Mapping[str, tuple[Any, Any]]):
    """``{item id: (payload, label)}`` of a ``Reference``, looked up when asked (a copy of
    a large reference's texts was held while the report rendered)."""

    def __init__(self, reference: Reference) -> None:
        self._reference = reference

    def __getitem__(self, item_id: str) -> tuple[Any, Any]:
        item = self._reference.get(item_id)
        return item.payload, item.label

    def at(self, places: Sequence[int]) -> list[tuple[str, Any, Any] | None]:
        """``(id, payload, label)`` of the items at ``places`` (``None`` past the end)."""
        items = self._reference.items
        return [tuple(items[p]) if 0 <= p < len(items) else None for p in places]

    def __iter__(self) -> Iterator[str]:
        return (item.id for item in self._reference)

    def __len__(self) -> int:
        return len(self._reference)


def item_texts(records: Iterable[Any]) -> ItemTexts:
    """Item texts from reference records (``{"id", "payload", "label"}`` mappings or
    ``Item`` objects, or a ``Reference``, read when a table shows an item).

    The question is the payload's ``question`` (or ``prompt``/``input``/``query``)
    when it has one, else an excerpt of the whole payload.
    """
    if isinstance(records, Reference):
        return ItemTexts(_ReferenceItems(records))
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


def column_at(runs: pd.DataFrame, texts: RowTexts | None, rows: np.ndarray,
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

    Columns: ``arm, failure_kind, item_id, run, question, label, output, error``, and
    ``contexts`` (the passages the run retrieved, as one short line) and ``attribution``
    (retrieval miss, reading error, refusal despite evidence) when the runs table has
    them. ``arm``, ``kind`` and ``item`` filter (``kind="unscored"`` gives the runs
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
    # the keys only (not the outputs and errors of every failed run), ranks by name_codes:
    # the report of a 1M-run table spent a second here
    at = np.flatnonzero(mask.to_numpy(dtype=bool))
    order = list(dict.fromkeys(
        list(arms) if arms is not None else [str(a) for a in arms_in_order(runs)]))
    unscored = runs["correct"].isna().to_numpy()[at]
    no_kind = runs["failure_kind"].isna().to_numpy()[at]
    kind_names = (*FAILURE_KINDS, "unscored", "correct")
    kind_ranks = np.where(no_kind, np.where(unscored, len(FAILURE_KINDS), len(FAILURE_KINDS) + 1),
                          _rank(pd.Index(kind_names), runs["failure_kind"])[at])
    arm_ranks = _rank(pd.Index(order), runs["arm"])[at]
    if per_group is None:
        keys = pd.DataFrame({
            "_arm": arm_ranks, "_kind": kind_ranks,
            "item_id": runs["item_id"].astype(str).to_numpy()[at],
            "run": runs["run"].to_numpy()[at], "_row": range(len(at)),
        }).sort_values(["_arm", "_kind", "item_id", "run"], kind="stable")
        chosen = keys["_row"].to_numpy()
    else:
        chosen = _first_per_group(arm_ranks * (len(kind_names) + 1) + kind_ranks,
                                  runs, at, per_group)
    picked = runs[["arm", "item_id", "run"]].iloc[at[chosen]]
    outputs = column_at(runs, texts, at[chosen], "output")
    errors = column_at(runs, texts, at[chosen], "error")
    has_contexts = "contexts" in runs.columns or (
        texts is not None and "contexts" in texts.file.names())
    contexts = column_at(runs, texts, at[chosen], "contexts") if has_contexts else None
    blamed = column_at(runs, texts, at[chosen], "attribution") if has_contexts else None
    kinds_text = [("unscored" if u else "correct") if n else k for k, n, u in zip(
        runs["failure_kind"].iloc[at[chosen]].astype(object), no_kind[chosen], unscored[chosen],
        strict=True)]
    ids = picked["item_id"].astype(str).tolist()
    shown = _texts(items, ids, _item_places(runs, at[chosen]))
    extra = {} if contexts is None or blamed is None else {
        "contexts": ["" if v is None or v != v else str(v) for v in contexts],
        "attribution": ["" if v is None or v != v else str(v) for v in blamed]}
    return pd.DataFrame({
        "arm": picked["arm"].astype(str).to_numpy(),
        "failure_kind": kinds_text,
        "item_id": ids,
        "run": picked["run"].to_numpy(),
        "question": [t.question for t in shown],
        "label": [t.label for t in shown],
        "output": [excerpt(v) for v in outputs] if outputs is not None else "",
        "error": [excerpt(v) for v in errors] if errors is not None else "",
        **extra,
    }, columns=[*FAILED_COLUMNS, *extra])


def _first_per_group(groups: np.ndarray, runs: pd.DataFrame, at: np.ndarray,
                     per_group: int) -> np.ndarray:
    """Of the rows ``at`` (positions in the table), the first ``per_group`` of each group in
    (item id, run) order, the groups in ascending ``groups`` order; as positions into
    ``at``. What a stable sort on (group, item id, run) and a head per group give, by one
    integer key per row (the item's rank among the ids, the run, the row): no item id is
    compared per row (sorting the ids took far more memory at 1M runs than picking them
    with Arrow)."""
    if per_group <= 0:
        return np.zeros(0, dtype=np.int64)
    codes, ids = item_codes(runs, at)
    id_rank = np.empty(len(ids), dtype=np.int64)
    id_rank[np.asarray(ids.argsort())] = np.arange(len(ids))
    run = runs["run"].to_numpy(dtype=np.int64)[at]
    if len(run):
        run -= run.min()
    width = (int(run.max()) + 1 if len(run) else 1) * max(len(at), 1)
    if len(ids) * width >= 2 ** 62:  # the key would overflow: sort by each part instead
        key = np.empty(len(at), dtype=np.int64)
        key[np.lexsort((np.arange(len(at)), run, id_rank[codes]))] = np.arange(len(at))
    else:
        key = id_rank[codes]  # in place from here: each temporary is a row-long array
        del codes, id_rank
        key *= width // max(len(at), 1)
        key += run
        key *= max(len(at), 1)
        key += np.arange(len(at))
    del run
    chosen = []
    for group in np.unique(groups).tolist():
        members = np.flatnonzero(groups == group)
        part = key[members]
        if per_group < len(members):  # the per_group smallest keys (all distinct)
            members = members[np.argpartition(part, per_group - 1)[:per_group]]
            part = key[members]
        chosen.append(members[np.argsort(part)])
    return np.concatenate(chosen) if chosen else np.zeros(0, dtype=np.int64)


def _texts(items: Mapping[str, ItemText], ids: list[str],
           places: list[int] | None) -> list[ItemText]:
    """The texts of ``ids`` (by reference position when known: :meth:`ItemTexts.many`)."""
    if isinstance(items, ItemTexts):
        return items.many(ids, places)
    return [items.get(i) or ItemText("", "") for i in ids]


def _rank(names: pd.Index, values: Any) -> np.ndarray:
    """Each value's position in ``names``; ``len(names)`` for a value not there."""
    found = name_codes(list(names), pd.Series(values))
    return np.where(found < 0, len(names), found)


def failure_counts(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs per arm and failure kind (rows: arms with a failed run, columns: kinds that
    occur; both sorted).

    Example:
        >>> runs = pd.DataFrame({"arm": ["b", "a", "a"], "failure_kind": ["wrong", None, "error"]})
        >>> failure_counts(runs).to_dict("index")
        {'a': {'error': 1, 'wrong': 0}, 'b': {'error': 0, 'wrong': 1}}
    """
    kinds = sorted(str(k) for k in runs["failure_kind"].unique() if isinstance(k, str))
    arms = sorted(str(a) for a in arms_in_order(runs))
    # integer codes and one bincount: grouping by the two string columns took more memory
    kind = name_codes(kinds, runs["failure_kind"])
    arm = name_codes(arms, runs["arm"])
    keep = (kind >= 0) & (arm >= 0)
    counts = np.bincount(arm[keep] * len(kinds) + kind[keep],
                         minlength=len(arms) * len(kinds)).reshape(len(arms), len(kinds))
    frame = pd.DataFrame(counts, index=pd.Index(arms, name="arm"),
                         columns=pd.Index(kinds, name="failure_kind")).astype("int64")
    return frame[counts.sum(axis=1) > 0]


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
    made = runs_made(runs)  # one accuracy: budget stops are not runs (hr_core.stats.accuracy)
    scored = (runs["correct"].notna() & made).to_numpy(dtype=bool)
    sides = name_codes([a, b], runs["arm"])  # a: 0, b: 1 (integer codes: at 1M runs the
    at = np.flatnonzero(scored & (sides >= 0))  # groupby and join on ids took much memory)
    codes, ids = item_codes(runs, at)
    side = sides[at]
    right = runs["correct"].to_numpy(dtype=bool, na_value=False)[at]
    counts = [np.bincount(codes[side == k], minlength=len(ids)) for k in (0, 1)]
    hits = [np.bincount(codes[side == k], weights=right[side == k], minlength=len(ids))
            for k in (0, 1)]
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = [hits[k] / counts[k] for k in (0, 1)]
    differ_codes = np.flatnonzero((counts[0] > 0) & (counts[1] > 0) & (shares[0] != shares[1]))
    id_rank = np.empty(len(ids), dtype=np.int64)
    id_rank[np.asarray(ids.argsort())] = np.arange(len(ids))
    gap = shares[1][differ_codes] - shares[0][differ_codes]
    shown = differ_codes[np.lexsort((id_rank[differ_codes], gap))]  # the best arm right first
    total = len(shown)
    if limit is not None:
        shown = shown[:limit]
    differ = [str(ids[c]) for c in shown.tolist()]
    showing = np.flatnonzero(np.isin(codes, shown))  # the rows of the shown items
    first_row: dict[int, int] = {}  # a row of each shown item, for its reference position
    for row, code in zip(showing.tolist(), codes[showing].tolist(), strict=True):
        first_row.setdefault(code, row)
    shown_texts = _texts(items, differ,
                         _item_places(runs, at[[first_row[c] for c in shown.tolist()]]))

    def first_outputs(k: int) -> list[Any]:
        """Each shown item's first output that is there, its runs in run order (only the
        shown items' outputs are read)."""
        mine = showing[side[showing] == k]
        mine = mine[np.argsort(runs["run"].to_numpy()[at[mine]], kind="stable")]  # run order
        values = column_at(runs, texts, at[mine], "output")
        found: dict[int, Any] = {}
        for code, value in zip(codes[mine].tolist(), values or [None] * len(mine),
                               strict=True):
            if code not in found and not (value is None or value is pd.NA
                                          or (isinstance(value, float) and math.isnan(value))):
                found[code] = value
        return [found.get(c) for c in shown.tolist()]

    a_outputs, b_outputs = first_outputs(0), first_outputs(1)
    both = pd.DataFrame({"hits_a": hits[0][shown], "n_a": counts[0][shown],
                         "hits_b": hits[1][shown], "n_b": counts[1][shown]})

    def verdict(hits: Any, n: Any) -> str:
        return _correct_text(bool(hits)) if int(n) == 1 else f"{int(hits)}/{int(n)} correct"

    frame = pd.DataFrame({
        "item_id": differ,
        "question": [t.question for t in shown_texts],
        "label": [t.label for t in shown_texts],
        "a_output": [excerpt(v) for v in a_outputs],
        "a_correct": [verdict(h, n) for h, n in zip(both["hits_a"], both["n_a"], strict=True)],
        "b_output": [excerpt(v) for v in b_outputs],
        "b_correct": [verdict(h, n) for h, n in zip(both["hits_b"], both["n_b"], strict=True)],
    }, columns=list(DIFF_COLUMNS))
    frame.attrs["total"] = total
    return frame
