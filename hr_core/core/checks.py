"""Checks of the arguments users pass to the entry points: an ``HrError`` naming the fix."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from hr_core.core.errors import HrTypeError, SpecError

__all__ = ["callable_arg", "model_arg", "path_arg", "positive_int"]

_Model = TypeVar("_Model", bound=BaseModel)


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


def model_arg(model: type[_Model], what: str, value: Mapping[str, Any]) -> _Model:
    """``model`` validated from the mapping ``value``, else a :class:`SpecError` on one
    line: ``what``, the value, each problem (``field: message``) and the model's fields.

    Example:
        >>> from hr_core.run.budget import Budget
        >>> model_arg(Budget, "budget", {"max_calls": -1})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        hr_core.core.errors.SpecError: budget {'max_calls': -1} is invalid: max_calls: ...
    """
    try:
        return model.model_validate(dict(value))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise SpecError(f"{what} {dict(value)!r} is invalid: {problems} (fields: "
                        f"{', '.join(model.model_fields)})") from None
