"""Import heavy modules with the cyclic garbage collector paused, then freeze what they built.

Importing pandas, hr_core and Prefect builds about a million long-lived objects.
With the collector running it traverses them again and again while they are
built (a good share of Prefect's import CPU, less of pandas'); paused, then frozen
(``gc.freeze``), later collections skip them, and so does the interpreter's last
collection at exit. ``flows`` and the ``hr`` commands that run flows or read runs
import through :func:`import_paused`.
"""

from __future__ import annotations

import atexit
import gc
import importlib
from types import ModuleType

__all__ = ["command_module", "import_paused"]


def import_paused(name: str, freeze: bool = True) -> ModuleType:
    """``importlib.import_module(name)`` with the collector paused, then ``gc.freeze()``
    (``freeze=False``: the collector as it was, nothing frozen: a package's import).

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
    if freeze:
        gc.freeze()
    return module


def command_module(name: str) -> ModuleType:
    """Where an ``hr`` command starts: import its module with :func:`import_paused` (the
    objects built frozen), then the process-wide choices hr makes for a command, never
    at import: Arrow allocates through ``malloc`` (``hr_core.store.memory``), and the
    interpreter's last collection at exit skips what was built (``gc.freeze`` at exit).
    """
    module = import_paused(name)
    # lazy for start-up: hr --help imports no hr_core (pandas); the command imported it
    from hr_core.store.memory import use_system_pool

    use_system_pool()
    if not _AT_EXIT:
        atexit.register(gc.freeze)
        _AT_EXIT.append(True)
    return module


_AT_EXIT: list[bool] = []
