"""Small HTML helpers of the report: escaping, number formats, tables, figures."""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

__all__ = ["compact", "escape", "figure", "fmt", "is_missing", "table"]


def escape(value: Any) -> str:
    """HTML-escape a value (``None`` is empty)."""
    return html.escape("" if value is None else str(value))


def is_missing(value: Any) -> bool:
    """``None``, pandas ``NA`` or NaN."""
    if value is None or value is pd.NA:
        return True
    return isinstance(value, float) and math.isnan(value)


def fmt(value: Any, kind: str = "") -> str:
    """A value for a table cell: ``kind`` ``"pct"``, ``"usd"``, ``"s"`` (as ms) or plain.

    Example:
        >>> fmt(0.6458, "pct"), fmt(None), fmt(1234)
        ('64.6%', '–', '1,234')
    """
    if is_missing(value):
        return "–"
    if kind == "pct":
        return f"{float(value):.1%}"
    if kind == "usd":
        return f"${float(value):.4f}"
    if kind == "s":
        return f"{float(value) * 1000:.1f} ms"
    if isinstance(value, float):
        return f"{value:,.0f}" if value.is_integer() else f"{value:.3g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def compact(value: Any) -> str:
    """A count in thousands above 1,000 (``17.6k``)."""
    if is_missing(value) or not value:
        return "0"
    number = float(value)
    return f"{number / 1000:.1f}k" if number >= 1000 else f"{number:.0f}"


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], left: int = 1,
          table_id: str = "", css_class: str = "") -> str:
    """An HTML table (cells are HTML already); the first ``left`` columns align left."""
    head = "".join(
        f'<th class="l">{escape(h)}</th>' if i < left else f"<th>{escape(h)}</th>"
        for i, h in enumerate(headers)
    )
    body = "".join(
        "<tr>" + "".join(
            f'<td class="l">{c}</td>' if i < left else f"<td>{c}</td>" for i, c in enumerate(r)
        ) + "</tr>"
        for r in rows
    )
    ident = (f' id="{table_id}"' if table_id else "") + (
        f' class="{css_class}"' if css_class else "")
    return (f'<div class="scroll"><table{ident}><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>")


def figure(svg: str, fig_id: str, caption: str) -> str:
    """An inline SVG in a ``<figure>`` with its caption."""
    return f'<figure id="{fig_id}">{svg}<figcaption>{escape(caption)}</figcaption></figure>'
