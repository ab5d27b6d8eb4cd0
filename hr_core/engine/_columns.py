"""The columns of a benchmark's tables (``Benchmark.runs`` and ``Benchmark.summary()``)
and :func:`runs_frame`, the runs table from run records; re-exported by
``hr_core.engine.benchmark``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from operator import attrgetter, itemgetter
from typing import Any

import pandas as pd

from hr_core.engine.record import RunRecord
from hr_core.failures import FAILURE_KINDS

__all__ = ["JUDGE_FAILURES", "RUN_COLUMNS", "SCORE_COLUMNS", "SUMMARY_COLUMNS", "runs_frame"]

RUN_COLUMNS = (
    "arm", "item_id", "run", "output", "correct", "score", "outcome", "failure_kind", "error",
    "latency_s", "tokens_in", "tokens_out", "cost_usd", "truncated", "replayed",
)
"""The columns of ``Benchmark.runs`` (SPEC section 9); a judge scorer adds ``judge_status``.
``score`` is a scorer's partial credit in [0, 1] (``f1``), missing when it gives none;
``truncated`` marks a reply the model stopped at its token limit (kept and scored),
``replayed`` an output replayed from the response cache (no call made, nothing spent)."""

_JUDGE_RUN_COLUMNS = ("judge_status", "judge_tokens_in", "judge_tokens_out", "judge_cost_usd")
"""The columns a judge scorer adds to ``Benchmark.runs``: its status, and the tokens and
cost of its calls on that run (all its presentation orders)."""

JUDGE_FAILURES = ("no_consensus", "parse_failure", "error")
"""Judge statuses counted in the summary as ``judge_<status>`` (apart from arm failures)."""

SUMMARY_COLUMNS = (
    "arm", "items", "runs", "scored", "correct", "accuracy", "ci_low", "ci_high", "coverage",
    "unscored",
    *FAILURE_KINDS, *(f"judge_{s}" for s in JUDGE_FAILURES), "truncated",
    "latency_mean_s", "tokens_in", "tokens_out", "cost_usd", "spent_usd",
    "judge_tokens_in", "judge_tokens_out", "judge_cost_usd",
)
"""The columns of ``Benchmark.summary()``: ``runs`` are the runs planned, ``coverage`` the
share of them made (a budget stops the rest), one count per failure kind and judge failure,
``truncated`` the runs whose reply the model stopped at its token limit; ``cost_usd``
is what the outputs cost (replayed ones included), ``spent_usd`` what the calls this
run made cost (outputs replayed from a response cache spent nothing); ``judge_*`` the
tokens and cost of a judge scorer's calls on the arm's runs (0 without a judge)."""

SCORE_COLUMNS = ("score_mean", "score_ci_low", "score_ci_high")
"""Added to the summary after ``ci_high`` when any run has a ``score`` (partial credit)."""

_TEXT = ("arm", "item_id", "output", "outcome", "failure_kind", "error", "judge_status")


def runs_frame(records: Iterable[Mapping[str, Any]] | Iterable[RunRecord], *,
               judge: bool = False) -> pd.DataFrame:
    """The runs table from run records (mappings, or the journal's
    :class:`~hr_core.engine.record.RunRecord`), with the dtypes of ``Benchmark.runs``.

    ``correct`` is pandas' nullable ``"boolean"``, tokens ``"Int64"``.

    A column a record lacks is missing (``None``) in its row.

    Example:
        >>> frame = runs_frame([{"arm": "a", "item_id": "q1", "run": 1, "correct": True}])
        >>> str(frame["correct"].dtype), list(frame.columns)[:3]
        ('boolean', ['arm', 'item_id', 'run'])
    """
    columns = (*RUN_COLUMNS, *_JUDGE_RUN_COLUMNS) if judge else RUN_COLUMNS
    rows: list[Any] = list(records)
    typed = bool(rows) and all(type(r) is RunRecord for r in rows)
    if not typed and any(type(r) is RunRecord for r in rows):
        rows = [r.as_dict() if type(r) is RunRecord else r for r in rows]
    data: dict[str, Any] = {}
    for column in columns:
        if typed:
            values = list(map(attrgetter(column), rows))
        else:
            try:
                values = list(map(itemgetter(column), rows))
            except KeyError:
                values = [r.get(column) for r in rows]
        if column in _TEXT:
            data[column] = pd.Series(values, dtype="str")
        elif column == "run":
            data[column] = pd.Series(values, dtype="int64")
        elif column in ("correct", "truncated", "replayed"):
            data[column] = pd.Series(pd.array(values, dtype="boolean"))
        elif column in ("tokens_in", "tokens_out", "judge_tokens_in", "judge_tokens_out"):
            data[column] = pd.Series(pd.array(values, dtype="Int64"))
        else:
            data[column] = pd.Series(
                [math.nan if v is None else v for v in values], dtype="float64"
            )
    return pd.DataFrame(data)
