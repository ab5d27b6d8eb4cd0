"""The ``hr`` command line (typer + rich). Imports Prefect lazily, through ``flows``.

A user mistake (missing file, bad YAML, unknown arm, bad option) prints one
line and exits with status 2; set ``HR_DEBUG=1`` to see the traceback instead.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

__all__ = ["main"]

USER_ERROR = 2


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 400 else text[:397] + "..."


def _user_errors() -> tuple[type[BaseException], ...]:
    import yaml
    from pydantic import ValidationError

    from hr_core.errors import HrError

    return (HrError, OSError, yaml.YAMLError, ValidationError)


def _show_warnings_as_lines(console: Any) -> None:
    """Python warnings (e.g. a judge without a validation record) as one yellow line each."""

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        console.print(f"hr: warning: {message}", style="yellow", markup=False)

    warnings.showwarning = show


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``hr`` console script.

    Example:
        >>> main(["--help"])  # doctest: +SKIP
    """
    from hr_cli.app import app, console

    _show_warnings_as_lines(console)
    debug = os.environ.get("HR_DEBUG", "") not in ("", "0")
    try:
        # standalone mode: typer/click print usage errors and exit 2 themselves
        app(args=list(argv) if argv is not None else None, prog_name="hr")
    except SystemExit:
        raise  # before the clauses below: evaluating them imports hr_core (pandas)
    except KeyboardInterrupt:
        console.print("hr: interrupted", style="yellow")
        raise SystemExit(130) from None
    except _user_errors() as exc:
        if debug:
            raise
        print(f"hr: error: {_one_line(exc)}", file=sys.stderr)
        raise SystemExit(USER_ERROR) from None
    except Exception as exc:
        if debug:
            raise
        print(f"hr: internal error: {type(exc).__name__}: {_one_line(exc)} "
              "(set HR_DEBUG=1 for the traceback)", file=sys.stderr)
        raise SystemExit(1) from None
