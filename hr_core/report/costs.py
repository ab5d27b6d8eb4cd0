"""Cost by kind of token, in words: the compact line the summary, the reports and
``hr diff`` show when a run's table has the usage kinds' columns
(:data:`hr_core.store.columns.KIND_RUN_COLUMNS`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hr_core.core.text import is_missing

__all__ = ["COST_KINDS", "TOKEN_KINDS", "cost_by_kind", "has_kinds", "token_kinds"]

COST_KINDS = (("cost_input_usd", "input"), ("cost_cache_read_usd", "cache read"),
              ("cost_cache_write_usd", "cache write"), ("cost_output_usd", "output"))
"""The summary's cost columns by kind and their names (their sum is ``cost_usd`` when
hr priced every call)."""

TOKEN_KINDS = (("tokens_cache_read", "cache read"), ("tokens_cache_write", "cache write"),
               ("tokens_reasoning", "reasoning"))
"""The summary's token columns by kind: parts of ``tokens_in`` (cache) and ``tokens_out``
(reasoning)."""


def has_kinds(columns: Iterable[Any]) -> bool:
    """Whether a table has the usage kinds' columns."""
    return "cost_output_usd" in set(map(str, columns))


def _known(value: Any) -> bool:
    return value is not None and not is_missing(value)


def cost_by_kind(row: Mapping[str, Any]) -> str | None:
    """``input $0.0021 · cache read $0.0001 · cache write $0.0004 · output $0.0150``, or
    ``None`` when the row has no cost by kind.

    Example:
        >>> cost_by_kind({"cost_input_usd": 0.002, "cost_cache_read_usd": 0.0,
        ...               "cost_cache_write_usd": 0.00075, "cost_output_usd": 0.015})
        'input $0.0020 · cache read $0.0000 · cache write $0.0008 · output $0.0150'
    """
    values = [(name, row.get(column)) for column, name in COST_KINDS]
    if not any(_known(v) and v for _, v in values):
        return None
    return " · ".join(f"{name} ${float(v) if v is not None and _known(v) else 0.0:.4f}"
                      for name, v in values)


def token_kinds(row: Mapping[str, Any]) -> str | None:
    """``1,200 cache read · 300 cache write · 40 reasoning`` (the kinds a row has), or
    ``None`` when it has none.

    Example:
        >>> token_kinds({"tokens_cache_read": 1200, "tokens_cache_write": 0,
        ...              "tokens_reasoning": 40})
        '1,200 cache read · 40 reasoning'
    """
    parts = [f"{int(row[c]):,} {name}" for c, name in TOKEN_KINDS
             if _known(row.get(c)) and row.get(c)]
    return " · ".join(parts) or None
