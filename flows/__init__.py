"""Prefect flows of hr: ``from flows import hr_benchmark, hr_judge_validate, hr_compare``.

Importing Prefect builds about a million long-lived objects. The cyclic garbage
collector is paused while they are built (it would traverse them again and
again: ~20% of the import's CPU), they are then frozen (later collections, e.g.
during a 20,000-run benchmark, skip them), and at exit the interpreter's last
collection skips them too (up to ~1 s of a short run's wall time).

``flows.benchmark`` is imported with the package; the other flows (``hr_compare``,
``hr_judge_validate``, ``hr_scheduled_benchmark``) on first use: defining a
Prefect flow or task builds its parameter schema and reads its source, and
``hr run`` needs none of them (~40 ms of CPU per process).
"""

import atexit as _atexit
import gc as _gc
import os as _os
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from hr_cli.gcpause import import_paused as _import_paused
from hr_cli.quiet import quiet_defaults as _quiet_defaults

_quiet_defaults()  # no "Failed to send telemetry" offline, unless the user chose analytics

# the hr server, when it runs and nothing else is configured (hr_cli.server imports hr_core)
_preset = _import_paused("hr_cli.server").api_url_to_preset()
if _preset is not None:
    _os.environ["PREFECT_API_URL"] = _preset

_import_paused("flows.benchmark")  # Prefect, with the collector paused
from flows.benchmark import benchmark_flow, hr_benchmark  # noqa: E402

_atexit.register(_gc.freeze)

if _TYPE_CHECKING:
    from flows.compare import compare_flow, hr_compare
    from flows.diff import hr_diff
    from flows.judge_validate import hr_judge_validate, judge_validate_flow
    from flows.scheduled import hr_scheduled_benchmark

_LAZY = {
    "compare_flow": "flows.compare",
    "hr_compare": "flows.compare",
    "hr_diff": "flows.diff",
    "hr_judge_validate": "flows.judge_validate",
    "judge_validate_flow": "flows.judge_validate",
    "hr_scheduled_benchmark": "flows.scheduled",
}
_SUBMODULES = ("compare", "diff", "judge_validate", "scheduled")


def __getattr__(name: str) -> _Any:
    """The flows not imported with the package, imported on first use (PEP 562)."""
    if name in _SUBMODULES:
        return _import_paused(f"{__name__}.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_import_paused(module), name)
    globals()[name] = value
    return value


__all__ = [
    "benchmark_flow",
    "compare_flow",
    "hr_benchmark",
    "hr_compare",
    "hr_diff",
    "hr_judge_validate",
    "hr_scheduled_benchmark",
    "judge_validate_flow",
]
