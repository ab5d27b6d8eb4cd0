"""The engine benchmarks' shared workload: its reference, its arm, the asyncio floor, p90.

Issue 4's workloads: item ``i``'s arm answers the label when ``i % 10 < 7`` (half of
those upper-cased with padding), else a wrong string; scoring is the exact scorer. The
floor runs the same arm over the same reference with a plain ``asyncio.gather`` and a
semaphore, so that a ratio to it is hr's own cost.

Importing this module has no side effect (no server, no environment, no Prefect): the
scripts that use it (``bench_engine.py``, which starts an hr server when imported, and
``bench_record.py``, which must not) import it from the ``bench`` folder, which Python
puts first on ``sys.path`` when it runs ``bench/<script>.py``.
"""

from __future__ import annotations

import asyncio
import statistics
from typing import Any

__all__ = ["floor", "make_arm", "make_reference", "p90"]


def make_reference(n: int) -> Any:
    """``n`` items ``i0 .. i<n-1>``, item ``i``'s payload ``{"n": i}``, label ``answer i``."""
    from hr_core import hr_reference  # here: bench_startup imports p90 and stays stdlib-only

    return hr_reference([{"id": f"i{i}", "n": i, "label": f"answer {i}"} for i in range(n)])


def make_arm(delay: float) -> Any:
    """The workload's async arm: awaits ``delay`` s, then 70% right (half padded), 30% wrong."""

    async def arm(payload: dict[str, Any]) -> str:
        if delay:
            await asyncio.sleep(delay)
        i = payload["n"]
        if i % 10 < 7:
            return f"  ANSWER {i} " if i % 2 else f"answer {i}"
        return f"wrong {i}"

    return arm


async def floor(reference: Any, arm: Any, runs: int, concurrency: int) -> int:
    """The plain asyncio floor: gather + semaphore, the same arm, exact scoring; the
    number of correct runs (for checking the engine against it)."""
    from hr_core import hr_scorer_exact

    scorer = hr_scorer_exact()
    semaphore = asyncio.Semaphore(concurrency)

    async def one(item: Any) -> Any:
        async with semaphore:
            output = await arm(item.payload)
        return scorer(item.payload, output, item.label)

    results = await asyncio.gather(*(one(item) for _ in range(runs) for item in reference))
    return sum(1 for r in results if r.correct)


def p90(values: list[float]) -> float:
    """The 90th percentile (linear interpolation between order statistics, as numpy's
    default ``percentile``)."""
    ordered = sorted(values)
    if len(ordered) < 2:
        return ordered[0]
    return statistics.quantiles(ordered, n=10, method="inclusive")[-1]
