"""``hr --help`` (and ``hr CMD --help``) without importing typer, rich, click or hr_core.

The full command line (``hr_cli.app``, typer with rich help) takes ~0.2-1 s to
import; its help pages do not change between runs. They are rendered once by
the full app (``python -m hr_cli._help_build``, 80 columns, colours of a
standard terminal) into ``hr_cli._help_pages``, and printed from there when the
output would be the same content: 80 columns or more (a wider terminal gets the
80-column page), UTF-8, a colour terminal or a plain pipe, none of the variables
that change how rich renders set. Anything else goes to the full app, as before.
``tests/test_fast_help.py`` holds every page equal, byte for byte, to what the
full app prints now at 80 columns, so the two cannot drift.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing is not imported by `hr --help`
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import TextIO

__all__ = ["WIDTH", "answer", "plain", "page_for"]

WIDTH = 80
"""The pages' width (rich's default for a pipe): terminals at least this wide get them."""

_RENDERING_VARIABLES = (
    "NO_COLOR", "FORCE_COLOR", "PY_COLORS", "GITHUB_ACTIONS", "TTY_COMPATIBLE",
    "TTY_INTERACTIVE", "_TYPER_FORCE_DISABLE_TERMINAL", "TERMINAL_WIDTH", "JUPYTER_COLUMNS",
    "DATABRICKS_RUNTIME_VERSION", "HR_FULL_HELP",
)
"""Set, any of these changes what rich or typer prints (or asks for the full app)."""


def plain(page: str) -> str:
    """``page`` without its colour escapes (``ESC [ ... m``): what rich prints to a pipe."""
    parts = page.split("\x1b[")
    out = [parts[0]]
    for part in parts[1:]:
        end = part.find("m")
        out.append(part[end + 1:] if end >= 0 else "\x1b[" + part)
    return "".join(out)


def _colours(stream: TextIO, env: Mapping[str, str]) -> bool | None:
    """``True`` for a colour terminal, ``False`` for a pipe, ``None`` when the page would
    not be the full app's: narrower than :data:`WIDTH` (a wider one gets the page at
    :data:`WIDTH` columns, its content the same), another encoding, rich's variables."""
    if any(env.get(name) is not None for name in _RENDERING_VARIABLES):
        return None
    if (getattr(stream, "encoding", None) or "").lower().replace("-", "") != "utf8":
        return None  # rich draws ASCII boxes (or fails) on other encodings
    columns = env.get("COLUMNS")
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):
        return None
    if columns is not None and not (columns.isdigit() and int(columns) >= WIDTH):
        return None  # rich's width, terminal or not
    if not terminal:
        return False
    if env.get("TERM", "").strip().lower() in ("dumb", "unknown", ""):
        return None
    if columns is not None:
        return True
    try:
        return os.get_terminal_size(stream.fileno()).columns >= WIDTH or None
    except (AttributeError, ValueError, OSError):
        return None


def page_for(argv: list[str]) -> tuple[str, int] | None:
    """The stored page (colour escapes included) and exit status of ``hr ARGV``, if any."""
    from hr_cli._help_pages import PAGES

    return PAGES.get(" ".join(argv)) if all(" " not in word for word in argv) else None


def answer(argv: list[str], stream: TextIO | None = None) -> int | None:
    """Print the help page ``hr ARGV`` would print and return its exit status, or ``None``
    (nothing printed) when the full app must answer.

    Example (not run as a doctest: it needs a server, a model or a run)::

            answer(["--help"])
        0
    """
    if argv and argv[-1] != "--help" and argv not in (["judge"], ["server"]):
        return None  # the cheap test first: most commands are not help requests
    stream = sys.stdout if stream is None else stream
    found = page_for(argv)
    if found is None:
        return None
    colours = _colours(stream, os.environ)
    if colours is None:
        return None
    page, status = found
    stream.write(page if colours else plain(page))
    stream.flush()
    return status
