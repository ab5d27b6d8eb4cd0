"""Prefect flows of hr: ``from flows import hr_benchmark, hr_judge_validate, hr_compare``.

Importing Prefect builds about a million long-lived objects. The cyclic garbage
collector is paused while they are built (it would traverse them again and
again: ~20% of the import's CPU), they are then frozen (later collections, e.g.
during a 20,000-run benchmark, skip them), and at exit the interpreter's last
collection skips them too (up to ~1 s of a short run's wall time).
"""

import atexit as _atexit
import gc as _gc
import os as _os

from hr_cli.quiet import quiet_defaults as _quiet_defaults
from hr_cli.server import api_url_to_preset as _api_url_to_preset

_quiet_defaults()  # no "Failed to send telemetry" offline, unless the user chose analytics

_preset = _api_url_to_preset()  # the hr server, when it runs and nothing else is configured
if _preset is not None:
    _os.environ["PREFECT_API_URL"] = _preset
_collecting = _gc.isenabled()
_gc.disable()
try:
    from flows.benchmark import benchmark_flow, hr_benchmark
    from flows.compare import compare_flow, hr_compare
    from flows.judge_validate import hr_judge_validate, judge_validate_flow
    from flows.scheduled import hr_scheduled_benchmark
finally:
    if _collecting:
        _gc.enable()
_gc.freeze()
_atexit.register(_gc.freeze)

__all__ = [
    "benchmark_flow",
    "compare_flow",
    "hr_benchmark",
    "hr_compare",
    "hr_judge_validate",
    "hr_scheduled_benchmark",
    "judge_validate_flow",
]
