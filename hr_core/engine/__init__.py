"""The benchmark engine: arms, budgets, the journal, the store and the ``Benchmark``.

Pure library code (no Prefect): ``flows/benchmark.py`` drives a
``hr_core.engine.session.BenchmarkSession`` with one task per chunk;
``BenchmarkSession.run`` drives it with plain asyncio.
"""

from hr_core.engine.arms import LLMArm
from hr_core.engine.benchmark import RUN_COLUMNS, SUMMARY_COLUMNS, Benchmark
from hr_core.engine.budget import Budget
from hr_core.engine.rescore import rescore_run
from hr_core.engine.spec import BenchmarkSpec, load_spec

__all__ = [
    "Benchmark",
    "BenchmarkSpec",
    "Budget",
    "LLMArm",
    "RUN_COLUMNS",
    "SUMMARY_COLUMNS",
    "load_spec",
    "rescore_run",
]
