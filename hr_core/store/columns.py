"""The columns of a benchmark's tables (``Benchmark.runs`` and ``Benchmark.summary()``)
and :func:`runs_frame`, the runs table from run records; re-exported by
``hr_core.analysis.benchmark``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa

from hr_core.core.failures import FAILURE_KINDS
from hr_core.results import USAGE_KINDS
from hr_core.store.record import RunRecord

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["JUDGE_FAILURES", "KIND_RUN_COLUMNS", "KIND_SUMMARY_COLUMNS", "RUN_COLUMNS",
           "SCORE_COLUMNS", "SUMMARY_COLUMNS", "run_columns", "runs_frame", "runs_schema",
           "runs_table"]

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

KIND_RUN_COLUMNS = USAGE_KINDS
"""The columns of usage by kind of token, added to ``Benchmark.runs`` after the judge's
when any run of the benchmark may have them (an LLM arm's provider reports them, or a
record has one): prompt-cache reads and writes and reasoning tokens (parts of
``tokens_in`` / ``tokens_out``), and ``cost_usd`` by kind (``cost_input_usd``,
``cost_cache_read_usd``, ``cost_cache_write_usd``, ``cost_output_usd``)."""

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

KIND_SUMMARY_COLUMNS = KIND_RUN_COLUMNS
"""Added at the summary's end when the runs table has the usage kinds' columns: each
arm's sums of them (its tokens and cost by kind)."""

SCORE_COLUMNS = ("score_mean", "score_ci_low", "score_ci_high")
"""Added to the summary after ``ci_high`` when any run has a ``score`` (partial credit)."""

_TEXT = ("arm", "item_id", "output", "outcome", "failure_kind", "error", "judge_status")
_FLAGS = ("correct", "truncated", "replayed")
_COUNTS = ("tokens_in", "tokens_out", "judge_tokens_in", "judge_tokens_out",
           "tokens_cache_read", "tokens_cache_write", "tokens_reasoning")


def run_columns(judge: bool = False, kinds: bool = False) -> tuple[str, ...]:
    """The columns of a runs table: :data:`RUN_COLUMNS`, a judge's, the usage kinds'."""
    return (*RUN_COLUMNS, *(_JUDGE_RUN_COLUMNS if judge else ()),
            *(KIND_RUN_COLUMNS if kinds else ()))


def runs_frame(records: Iterable[Mapping[str, Any]] | Iterable[RunRecord], *,
               judge: bool = False, kinds: bool = False) -> pd.DataFrame:
    """The runs table from run records (mappings, or the journal's
    :class:`~hr_core.store.record.RunRecord`), with the dtypes of ``Benchmark.runs``.

    ``correct`` is pandas' nullable ``"boolean"``, tokens ``"Int64"``.

    A column a record lacks is missing (``None``) in its row.

    Example:
        >>> frame = runs_frame([{"arm": "a", "item_id": "q1", "run": 1, "correct": True}])
        >>> str(frame["correct"].dtype), list(frame.columns)[:3]
        ('boolean', ['arm', 'item_id', 'run'])
    """
    columns = run_columns(judge, kinds)
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
        elif column in _FLAGS:
            data[column] = pd.Series(pd.array(values, dtype="boolean"))
        elif column in _COUNTS:
            data[column] = pd.Series(pd.array(values, dtype="Int64"))
        else:
            data[column] = pd.Series(
                [math.nan if v is None else v for v in values], dtype="float64"
            )
    return pd.DataFrame(data)


def _kinds(column: str) -> frozenset[type]:
    """The Python types :func:`runs_table` converts itself for ``column``: those whose
    Arrow value is the one ``runs_frame`` then ``pyarrow.Table.from_pandas`` give (a bool
    is no count, an int no flag), and ``None``."""
    if column in _TEXT:
        kinds: tuple[type, ...] = (str,)
    elif column in _FLAGS:
        kinds = (bool,)
    elif column in _COUNTS or column == "run":
        kinds = (int,)
    else:
        kinds = (float, int)
    return frozenset((*kinds, type(None)))


@functools.cache
def runs_schema(judge: bool = False, kinds: bool = False) -> pa.Schema:
    """The Arrow schema of ``runs_frame([])`` (with its pandas metadata): the columns of
    ``runs.parquet`` but the item index, made once per process (making it is not free).

    Example:
        >>> runs_schema().names[:3]
        ['arm', 'item_id', 'run']
    """

    return pa.Schema.from_pandas(runs_frame([], judge=judge, kinds=kinds),
                                 preserve_index=False)


def runs_table(records: list[RunRecord], schema: pa.Schema, *,
               judge: bool = False, kinds: bool = False) -> pa.Table:
    """``pyarrow.Table.from_pandas(runs_frame(records), schema=schema)`` (``schema``:
    :func:`runs_schema`), its columns built straight from the records' values when
    every value has a type :func:`_kinds` allows (several times faster than pandas);
    otherwise (a record of another type, a mapping) through :func:`runs_frame`.

    Example:
        >>> import pyarrow as pa
        >>> schema = runs_schema()
        >>> rows = [RunRecord(arm="a", item_id="q1", run=1, correct=True, latency_s=0.5)]
        >>> runs_table(rows, schema).equals(pa.Table.from_pandas(
        ...     runs_frame(rows), schema=schema, preserve_index=False))
        True
    """

    columns = run_columns(judge, kinds)
    arrays = []
    if all(type(r) is RunRecord for r in records):
        for column, field in zip(columns, schema, strict=True):
            values = list(map(attrgetter(column), records))
            if not _kinds(column).issuperset(map(type, values)):
                break
            arrays.append(pa.array(values, type=field.type, from_pandas=True))
    if len(arrays) == len(columns):
        return pa.Table.from_arrays(arrays, schema=schema)
    return pa.Table.from_pandas(runs_frame(records, judge=judge, kinds=kinds), schema=schema,
                                preserve_index=False)
