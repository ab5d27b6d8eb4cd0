"""Import heavy modules with the cyclic garbage collector paused, then freeze what they built.

Importing pandas, hr_core and Prefect builds about a million long-lived objects.
With the collector running it traverses them again and again while they are
built (~20% of Prefect's import CPU, ~5% of pandas'); paused, then frozen
(``gc.freeze``), later collections skip them, and so does the interpreter's last
collection at exit. ``flows`` and the ``hr`` commands that run flows or read runs
import through :func:`import_paused`.
"""

from __future__ import annotations

import gc
import importlib
from types import ModuleType

__all__ = ["import_paused"]


def import_paused(name: str) -> ModuleType:
    """``importlib.import_module(name)`` with the collector paused, then ``gc.freeze()``.

    Example:
        >>> import_paused("json").__name__
        'json'
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        module = importlib.import_module(name)
    finally:
        if collecting:
            gc.enable()
    gc.freeze()
    return module
