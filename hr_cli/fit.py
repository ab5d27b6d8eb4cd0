"""Tables that fit the terminal: drop the least important columns, never crush them all.

Rich fits a table wider than the terminal by wrapping its wrappable columns and then, as a
last resort, cutting every column evenly: a 140-column summary in 80 columns became a
page of ``…``. :func:`print_fitted` instead leaves out whole columns, least important
first (each table names its order), until what remains fits with every ``no_wrap``
column whole, prints it, and says in one line which columns it left out.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console, ConsoleOptions
from rich.measure import Measurement
from rich.table import Column, Table

from hr_cli.literal import cell

__all__ = ["fit_table", "print_fitted"]

_FOLD_NEED = 12
"""The width a wrappable column with ``overflow="fold"`` needs at least (it breaks long
words, so its longest word need not fit whole)."""


def _name(column: Column) -> str:
    return str(column.header)


def _widths(console: Console, options: ConsoleOptions, table: Table,
            column: Column) -> tuple[int, int]:
    """The column's content width ``(needed, widest)``: ``needed`` is what it shows
    without cutting (a ``no_wrap`` column its widest cell, a wrappable one its longest
    word), ``widest`` its natural width; both within its ``max_width``."""
    cells = ([column.header] if table.show_header else []) + list(column.cells)
    sizes = [Measurement.get(console, options, c) for c in cells] or [Measurement(0, 0)]
    widest = max(m.maximum for m in sizes)
    needed = widest if column.no_wrap else max(m.minimum for m in sizes)
    if not column.no_wrap and column.overflow == "fold":
        needed = min(needed, _FOLD_NEED)
    if column.max_width is not None:
        widest, needed = min(widest, column.max_width), min(needed, column.max_width)
    if column.min_width is not None:
        widest, needed = max(widest, column.min_width), max(needed, column.min_width)
    return needed, widest


def _needed(console: Console, table: Table) -> int:
    """The narrowest width that shows every ``no_wrap`` cell whole and every wrappable
    column at its longest word (plus the table's padding and borders)."""
    options = console.options.update(width=10_000)
    sizes = [_widths(console, options, table, column) for column in table.columns]
    natural = Measurement.get(console, options, table).maximum
    overhead = natural - sum(widest for _, widest in sizes)
    return overhead + sum(needed for needed, _ in sizes)


def fit_table(console: Console, table: Table, drop: Sequence[str],
              width: int | None = None) -> list[str]:
    """Leave out the columns named in ``drop`` (headers, in that order: least important
    first) until ``table`` fits ``width`` (default: the console's); returns the headers
    left out. Columns not named are never left out: name every column but the key ones.

    Example:
        >>> table = Table("arm", "difference", "latency", "cost")
        >>> table.add_row("a", "+1.0", "1200.0 ms", "$0.0100")
        >>> fit_table(Console(width=80), table, ["cost", "latency"], width=24)
        ['cost', 'latency']
        >>> [str(c.header) for c in table.columns]
        ['arm', 'difference']
    """
    limit = console.width if width is None else width
    dropped: list[str] = []
    for name in drop:
        if _needed(console, table) <= limit:
            break
        found = [c for c in table.columns if _name(c) == name]
        if found:
            table.columns.remove(found[0])
            for index, column in enumerate(table.columns):
                column._index = index  # rich pads the first and last column by their index
            dropped.append(name)
    return dropped


def print_fitted(console: Console, table: Table, drop: Sequence[str]) -> list[str]:
    """Print ``table`` with the columns :func:`fit_table` had to leave out named in one
    line under it (``hr: hidden to fit 60 columns: latency, cost``); returns them."""
    dropped = fit_table(console, table, drop)
    console.print(table)
    if dropped:
        console.print(cell(f"hidden to fit {console.width} columns: {', '.join(dropped)} "
                           "(a wider terminal, or COLUMNS, shows them)", style="dim"))
    return dropped
