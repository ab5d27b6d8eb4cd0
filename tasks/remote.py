"""Chunks submitted to a task runner (Dask, Ray): self-contained in, records out.

The default benchmark flow awaits its chunk tasks in its own event loop, sharing
the session (journal, semaphores, budget). A Dask or Ray worker may be another
process or machine, so a submitted chunk gets only what it needs (the arm, its
``(item, run)`` work, the scorer, the budget ledger) and returns its records;
the flow journals them as each chunk finishes. The budget ledger is a
:class:`~hr_core.engine.budget.SharedLedger`: a file beside the journal that every
chunk locks for each call it reserves, so one budget holds across processes. One task per chunk, so
the ~150 ms a ``DaskTaskRunner`` adds per task stays negligible (SPEC section 11).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from hr_core.engine.arms import Arm
from hr_core.engine.budget import BudgetLedger, SharedLedger
from hr_core.engine.runner import ChunkContext, run_chunk
from hr_core.engine.session import BenchmarkSession
from hr_core.engine.threads import DaemonPool
from hr_core.reference import Item
from hr_core.scorers import Scorer

__all__ = ["BUDGET_LEDGER", "ChunkOutcome", "run_chunk_remote", "run_chunks_submitted"]

BUDGET_LEDGER = "budget.json"
"""The shared budget ledger's file name (beside the journal, while chunks run)."""

ChunkOutcome = tuple[list[dict[str, Any]], list[str]]
"""A submitted chunk's result: its records and the scorer errors it met."""


@task(name="run-chunk-submitted", cache_policy=NO_CACHE, persist_result=False,
      task_run_name="{arm_name}-submitted-chunk-{index}")
async def run_chunk_remote(arm: Arm, work: Sequence[tuple[Item, int]], scorer: Scorer,
                           ledger: BudgetLedger, concurrency: int, index: int,
                           arm_name: str) -> ChunkOutcome:
    """Run one chunk wherever the task runner puts it; returns records and scorer errors."""
    with DaemonPool(min(concurrency, 64), thread_name_prefix="hr-arm") as executor:
        records: list[dict[str, Any]] = []
        ctx = ChunkContext(scorer, ledger, executor, concurrency, records.append)
        try:
            await run_chunk(arm, work, ctx)
        finally:
            if isinstance(ledger, SharedLedger):
                ledger.close()
    return records, list(ctx.scorer_errors)


async def run_chunks_submitted(session: BenchmarkSession) -> int:
    """Submit every chunk of an opened session to the flow's task runner, journal the results.

    With a budget, the chunks share it through a :class:`SharedLedger` file
    beside the journal (created here from the session's ledger, which counts the
    runs done earlier; removed when every chunk is back): calls are exact, tokens
    and cost overshoot by the runs in flight in all workers at most.

    Returns:
        How many runs finished.
    """
    plan = session.plan
    if not session.opened:
        raise RuntimeError("open the benchmark session before submitting its chunks")
    ledger: BudgetLedger = session.ledger
    shared = None
    if plan.budget is not None:
        shared = ledger = SharedLedger.create(session.ledger,
                                              session.journal.path.with_name(BUDGET_LEDGER))
    futures = [
        run_chunk_remote.submit(plan.arms[chunk.arm], chunk.work(), plan.scorer, ledger,
                                plan.concurrency, index, chunk.arm)
        for index, chunk in enumerate(session.chunks)
    ]

    async def collect(future: Any) -> int:
        records, errors = await asyncio.to_thread(future.result)
        session.absorb(records, errors)
        return len(records)

    try:
        done = await asyncio.gather(*(collect(f) for f in futures))
    finally:
        if shared is not None:
            Path(shared.path).unlink(missing_ok=True)
    return sum(done)
