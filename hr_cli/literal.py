"""Data in the terminal is text: never Rich markup, never escape sequences.

Arm names, questions, outputs, error messages and paths come from users and models.
Rich reads ``[bold]``, ``[/]`` and ``[link=...]`` in the strings it prints as markup
(``[/]`` alone raises ``MarkupError``), and a terminal obeys ``ESC [ 2 J`` or
``ESC ] 0 ; title``. Every table cell and title is a :class:`~rich.text.Text` made by
:func:`cell`; every message written with markup puts data through :func:`lit`; every
line printed without markup through :func:`line`. Control characters are shown
visibly by :func:`hr_core.core.safe.visible` in all three.
"""

from __future__ import annotations

from rich.markup import escape
from rich.text import Text

from hr_core.core.safe import visible

__all__ = ["cell", "line", "lit"]


def cell(value: object, style: str = "") -> Text:
    """``value`` as a table cell (or title) shown as itself.

    Example:
        >>> cell("x[/] \\x1b[2J").plain
        'x[/] \\\\x1b[2J'
    """
    return Text(visible(value), style=style)


def lit(value: object) -> str:
    """``value`` to put inside a message printed with markup: escaped, on one line.

    Example:
        >>> lit("[link=http://x]click[/link]")
        '\\\\[link=http://x]click\\\\[/link]'
    """
    return escape(visible(value, newlines=False))


def line(value: object) -> str:
    """``value`` as a line printed with ``markup=False``: control characters visible.

    Example:
        >>> line("title \\x1b]0;T\\x07")
        'title \\\\x1b]0;T\\\\x07'
    """
    return visible(value, newlines=False)
