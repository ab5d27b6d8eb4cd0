"""Checks of the arguments users pass to the entry points: an ``HrError`` naming the fix."""

from __future__ import annotations

import os
from typing import Any

from hr_core.errors import HrTypeError, SpecError

__all__ = ["callable_arg", "path_arg", "positive_int"]


def path_arg(function: str, name: str, value: Any) -> str:
    """``value`` as a path string (a ``str`` or ``os.PathLike``), else :class:`HrTypeError`.

    Example:
        >>> from pathlib import Path
        >>> path_arg("hr_benchmark", "store", Path("results"))
        'results'
    """
    if isinstance(value, str | os.PathLike):
        path = os.fspath(value)
        if isinstance(path, str) and path:
            return path
    raise HrTypeError(f"{function}: {name} must be a folder path or fsspec URL (a str or "
                      f"Path), not {value!r}")


def positive_int(function: str, name: str, value: Any) -> int:
    """``value`` if it is a positive ``int`` (not ``bool``), else :class:`SpecError`.

    Example:
        >>> positive_int("hr_compare", "concurrency", 4)
        4
    """
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise SpecError(f"{function}: {name} must be a positive integer, not {value!r}")
    return value


def callable_arg(function: str, name: str, value: Any, shape: str) -> Any:
    """``value`` if it is ``None`` or callable, else :class:`HrTypeError` showing ``shape``.

    Example:
        >>> callable_arg("hr_benchmark", "on_progress", print, "fn(arm, done, total, failures)")
        <built-in function print>
    """
    if value is None or callable(value):
        return value
    raise HrTypeError(f"{function}: {name} must be a function {shape}, not {value!r}")
