"""hr's Prefect flows: :class:`HrFlow`, a ``prefect.Flow`` that stores JSON-ready
parameters as they are, and :func:`hr_flow`, its decorator (``@flow``'s options).

Prefect serialises a flow run's parameters with FastAPI's ``jsonable_encoder``
(``Flow.serialize_parameters``), and importing FastAPI costs the first flow run
of a process noticeable CPU. hr's flows take strings, numbers, booleans,
``None``, lists and dicts: their own JSON form. A subclass overrides the public
method for them; any other value still goes through Prefect's own method. No
Prefect class, module or flow object is changed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from prefect import Flow

__all__ = ["HrFlow", "hr_flow", "is_plain"]


def is_plain(value: Any) -> bool:
    """Whether ``value`` is its own JSON form (str, number, bool, None, lists, str-keyed dicts).

    Example:
        >>> is_plain({"a": [1, 2.5, None, "x"]}), is_plain((1, 2)), is_plain({1: "a"})
        (True, True, False)
    """
    if value is None or isinstance(value, str | bool | int | float):
        return True
    if isinstance(value, list | tuple):
        return all(is_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and is_plain(v) for k, v in value.items())
    return False


class HrFlow(Flow[Any, Any]):
    """A Prefect flow whose JSON-ready parameters are stored as they are (no FastAPI)."""

    def serialize_parameters(self, parameters: dict[str, Any]) -> dict[str, Any]:
        """Plain values (:func:`is_plain`) as their JSON copy; the others through Prefect."""
        others = {k: v for k, v in parameters.items() if not is_plain(v)}
        through = dict(super().serialize_parameters(others)) if others else {}
        return {k: through[k] if k in others else json.loads(json.dumps(v))
                for k, v in parameters.items() if k not in others or k in through}


def hr_flow(**options: Any) -> Callable[[Callable[..., Any]], HrFlow]:
    """``@prefect.flow(**options)``, making an :class:`HrFlow`."""
    def make(fn: Callable[..., Any]) -> HrFlow:
        return HrFlow(fn=fn, **options)

    return make
