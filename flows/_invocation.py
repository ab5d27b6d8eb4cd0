"""A context variable for what a flow run needs that is not a Prefect parameter.

A flow's module globals travel with it when Prefect ships its context to a Dask or
Ray worker. A plain :class:`contextvars.ContextVar` cannot be pickled, so the flows
hold theirs in an :class:`InvocationVar`, which pickles as a reference to the module
attribute that holds it (workers never read it).
"""

from __future__ import annotations

import importlib
from contextvars import ContextVar, Token
from typing import Any, Generic, TypeVar

__all__ = ["InvocationVar"]

T = TypeVar("T")


def _by_reference(module: str, attribute: str) -> Any:
    return getattr(importlib.import_module(module), attribute)


class InvocationVar(Generic[T]):
    """A ``ContextVar`` (default ``None``) that pickles by reference to ``module.attribute``."""

    __slots__ = ("_attribute", "_module", "_var")

    def __init__(self, module: str, attribute: str) -> None:
        self._module = module
        self._attribute = attribute
        self._var: ContextVar[T | None] = ContextVar(f"{module}.{attribute}", default=None)

    def get(self) -> T | None:
        return self._var.get()

    def set(self, value: T | None) -> Token[T | None]:
        return self._var.set(value)

    def reset(self, token: Token[T | None]) -> None:
        self._var.reset(token)

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return _by_reference, (self._module, self._attribute)
