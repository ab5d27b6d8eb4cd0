"""Prefect flows of hr: ``from flows import hr_benchmark, hr_judge_validate, hr_compare``.

Each returns its result, also inside a running event loop (Jupyter); async code awaits
``hr_benchmark_async``, ``hr_compare_async`` or ``hr_judge_validate_async`` instead.

Importing Prefect builds about a million long-lived objects. The cyclic garbage
collector is paused while they are built (it would traverse them again and
again: a good share of the import's CPU). Importing changes no global state: an ``hr``
command freezes them where it starts (``hr_server.gcpause.command_module``: later
collections, e.g. during a 20,000-run benchmark, skip them, and so does the
interpreter's last collection at exit, a noticeable part of a short run's wall time).

``flows.benchmark`` is imported with the package; the other flows (``hr_compare``,
``hr_judge_validate``, ``hr_scheduled_benchmark``) on first use: defining a
Prefect flow or task builds its parameter schema and reads its source, and
``hr run`` needs none of them (CPU in every process for nothing).
"""

import os as _os
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from hr_server.gcpause import import_paused as _import_paused
from hr_server.quiet import quiet_defaults as _quiet_defaults


def _import_prefect() -> None:
    """Import ``flows.benchmark`` (Prefect) with the collector paused, and with hr's
    defaults in the environment Prefect reads as it is imported: no analytics unless the
    user chose them, the hr server's API and its secret when it runs and nothing else is
    configured.
    The environment is then as it was: importing ``flows`` changes no global state (an
    ``hr`` command sets these for good where it starts, ``hr_server.control.prepare_prefect``).
    """
    env = _quiet_defaults({})
    env.update(_import_paused("hr_server.control", freeze=False).api_env_to_preset())
    saved = {name: _os.environ.get(name) for name in env}
    _os.environ.update(env)
    try:
        _import_paused("flows.benchmark", freeze=False)
    finally:
        for name, value in saved.items():
            if value is None:
                _os.environ.pop(name, None)
            else:
                _os.environ[name] = value


_import_prefect()
from flows.benchmark import benchmark_flow  # noqa: E402
from flows.benchmark_call import hr_benchmark, hr_benchmark_async  # noqa: E402

if _TYPE_CHECKING:
    from flows.compare import compare_flow, hr_compare, hr_compare_async
    from flows.diff import hr_diff
    from flows.judge_validate import (
        hr_judge_validate,
        hr_judge_validate_async,
        judge_validate_flow,
    )
    from flows.scheduled import hr_scheduled_benchmark

_LAZY = {
    "compare_flow": "flows.compare",
    "hr_compare": "flows.compare",
    "hr_compare_async": "flows.compare",
    "hr_diff": "flows.diff",
    "hr_judge_validate": "flows.judge_validate",
    "hr_judge_validate_async": "flows.judge_validate",
    "judge_validate_flow": "flows.judge_validate",
    "hr_scheduled_benchmark": "flows.scheduled",
}
_SUBMODULES = ("compare", "diff", "judge_validate", "scheduled")


def __getattr__(name: str) -> _Any:
    """The flows not imported with the package, imported on first use (PEP 562)."""
    if name in _SUBMODULES:
        return _import_paused(f"{__name__}.{name}", freeze=False)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_import_paused(module, freeze=False), name)
    globals()[name] = value
    return value


__all__ = [
    "benchmark_flow",
    "compare_flow",
    "hr_benchmark",
    "hr_benchmark_async",
    "hr_compare",
    "hr_compare_async",
    "hr_diff",
    "hr_judge_validate",
    "hr_judge_validate_async",
    "hr_scheduled_benchmark",
    "judge_validate_flow",
]
