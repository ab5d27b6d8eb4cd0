"""The ``hr`` command line (typer + rich). Imports Prefect lazily, through ``flows``.

Exit statuses: 0 done; 1 an internal error, ``hr judge check`` found no valid record, or
``hr diff`` found an arm significantly worse (a CI gate); 2 a user mistake (missing
file, bad YAML, unknown arm, bad option: one line names it); 3 the run finished and its
results are written, but an arm's share of errors was above ``max_error_rate`` (``hr
run``, ``hr demo``); 4 the results store could not be written (read-only, full: the run
stopped at once, the message names the path, the cause and where the finished runs were
kept); 5 another process is running the same benchmark into the same store (the message
names it; ``hr run --wait`` waits); 130 interrupted by Ctrl-C, 143 by SIGTERM (journal
flushed: the same command resumes). Set ``HR_DEBUG=1`` to see tracebacks instead.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import TYPE_CHECKING

from typer.main import get_command

from hr_cli.app import app, console, console_width
from hr_cli.process_exit import run_then_end

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

__all__ = ["ERROR_RATE_EXCEEDED", "USER_ERROR", "click_command", "main"]

USER_ERROR = 2
ERROR_RATE_EXCEEDED = 3
"""``hr run``'s status when the results are written but an arm erred above max_error_rate."""


def _one_line(exc: BaseException, limit: int = 400) -> str:
    """The message on one line, at most ``limit`` characters, control characters shown
    visibly (data in a message never drives the terminal)."""
    text = _visible(" ".join(str(exc).split())) or type(exc).__name__
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _visible(text: object) -> str:
    """``text`` on one line with control characters shown (:func:`hr_core.core.safe.visible`)."""
    # lazy for start-up: `hr --help` imports no hr_core (pandas); a message to print does
    from hr_core.core.safe import visible

    return visible(text, newlines=False)


def _user_errors() -> tuple[type[BaseException], ...]:
    """The exceptions that are the user's mistake (exit status 2), not hr's."""
    # lazy for start-up: `hr --help` imports neither hr_core (pandas) nor PyYAML nor pydantic;
    # only a command that failed needs them
    import yaml
    from pydantic import ValidationError

    from hr_core.core.errors import HrError

    return (HrError, OSError, yaml.YAMLError, ValidationError)


def _show_warnings_as_lines(console: Any) -> None:
    """Python warnings (e.g. a judge without a validation record) as one yellow line each."""

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        console.print(f"hr: warning: {_visible(message)}", style="yellow",
                      markup=False)

    warnings.showwarning = show


_BUILT: list[Any] = []


def click_command(app: Any) -> Any:
    """The click command of the typer ``app``, built once per process (typer builds it anew
    on each call)."""
    if not _BUILT:
        _BUILT.append(get_command(app))
    return _BUILT[0]


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``hr`` console script; ``argv``: run that command here and
    return (``SystemExit`` with its status unless 0).

    Without ``argv`` this process is ``hr``: the command line's command runs, then the
    process ends through ``hr_cli.process_exit`` (threads joined, ``atexit`` handlers run,
    output flushed, ``os._exit``), never through the C libraries' exit handlers: a
    daemon thread still in OpenSSL when they ran crashed finished commands at exit.

    Example (not run as a doctest: it needs a server, a model or a run)::

            main(["--help"])
    """
    if argv is None:
        run_then_end(lambda: _command(None))
    _command(argv)


def _command(argv: Sequence[str] | None) -> None:
    """Run one ``hr`` command (``None``: ``sys.argv``); ``SystemExit`` with its status."""
    # Arrow allocates through malloc in an hr command (hr_core.store.memory), chosen here
    # before pyarrow is imported: one pool for the whole process, never switched
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

    width = console_width()  # this call's COLUMNS (a command run in-process, as in tests)
    if width is not None:
        console.width = width
    _show_warnings_as_lines(console)
    debug = os.environ.get("HR_DEBUG", "") not in ("", "0")
    try:
        # not standalone: usage errors come back here and are printed as one line
        code = click_command(app)(args=list(argv) if argv is not None else None,
                                  prog_name="hr", standalone_mode=False)
    except SystemExit:
        raise  # before the clauses below: evaluating them imports hr_core (pandas)
    except Exception as exc:
        if not _is_a(exc, "UsageError"):
            _fail(exc, debug)
        ctx = getattr(exc, "ctx", None)
        if _is_a(exc, "NoArgsIsHelpError") and ctx is not None:
            print(ctx.get_help())
        else:
            where = ctx.command_path if ctx is not None else "hr"
            message = _one_line(Exception(exc.format_message()))  # type: ignore[attr-defined]
            print(f"hr: error: {message} (see '{where} --help')", file=sys.stderr)
        raise SystemExit(USER_ERROR) from None
    except KeyboardInterrupt:
        console.print("hr: interrupted", style="yellow")
        raise SystemExit(130) from None
    if isinstance(code, int) and code:
        raise SystemExit(code)


def _is_a(exc: BaseException, class_name: str) -> bool:
    """Typer vendors click: recognise its exceptions by class name, not by import."""
    return any(cls.__name__ == class_name for cls in type(exc).__mro__)


def _fail(exc: Exception, debug: bool) -> None:
    """Report an exception from a command: one line, exit 2 for a user mistake."""
    if debug:
        raise exc
    if _is_a(exc, "Abort"):
        print("hr: interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    if type(exc).__name__ == "ErrorRateExceeded":  # not a mistake of the command line
        print(f"hr: error: {_one_line(exc)}", file=sys.stderr)
        raise SystemExit(ERROR_RATE_EXCEEDED) from None
    if isinstance(exc, _user_errors()):
        label = getattr(exc, "label", None)  # a stopped run: its paths and resume command
        print(f"hr: {label or 'error'}: {_one_line(exc, 400 if label is None else 2000)}",
              file=sys.stderr)
        raise SystemExit(getattr(exc, "exit_status", USER_ERROR)) from None
    print(f"hr: internal error: {type(exc).__name__}: {_one_line(exc)} "
          "(set HR_DEBUG=1 for the traceback)", file=sys.stderr)
    raise SystemExit(1) from None
