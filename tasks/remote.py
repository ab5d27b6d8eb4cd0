"""Chunks submitted to a task runner (Dask, Ray): self-contained in, records out.

The default benchmark flow awaits its chunk tasks in its own event loop, sharing
the session (journal, semaphores, budget). A Dask or Ray worker may be another
process or machine, so a submitted chunk gets only what it needs (the arm, its
``(item, run)`` work, the scorer, the budget ledger) and returns its records;
the flow journals them as each chunk finishes.

Finished runs reach disk as they finish, not when the chunk returns: when the
journal's folder is visible from the worker (a local store on one machine or a
shared file system), the chunk writes its records to a worker journal of its own,
``journal.w-<chunk>-<uuid>.jsonl`` beside ``journal.jsonl`` (the same record
format and line rule, fsync'ed as soon as records wait: one fsync takes in every
record finished during the one before),
which :meth:`~hr_core.store.journal.Journal.read` merges on resume and the runs
table reads when the results are written. A worker that dies therefore loses its
runs in flight (and those waiting for the fsync under way) only: Dask's retry of that
chunk, or the next run of the benchmark, skips what the dead worker journaled.
When the folder is not visible from the worker (an fsspec store such as ``s3://``,
whose journal lives on the flow's machine, run on workers elsewhere), the chunk
only returns its records, as before: a lost worker then costs its whole chunk.
The budget ledger is a
:class:`~hr_core.run.budget.SharedLedger`: a file beside the journal that every
chunk locks for each call it reserves, so one budget holds across processes; and an
arm's ``concurrency`` holds across them too, through ``concurrency`` lock files per
arm in ``slots/`` beside the journal (``hr_core.run.slots``; a worker that
cannot see the folder takes its share of the arm's concurrency instead). One task per chunk, so
what a ``DaskTaskRunner`` adds per task stays negligible (SPEC section 11).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from hr_core.data.reference import Item
from hr_core.run.arms import Arm
from hr_core.run.budget import BudgetLedger, SharedLedger
from hr_core.run.chunk import ChunkContext, run_chunk
from hr_core.run.session import BenchmarkSession
from hr_core.run.slots import SharedSlots
from hr_core.run.threads import DaemonPool
from hr_core.scoring.scorer import Scorer
from hr_core.store.journal import Journal, RunKey
from hr_core.store.record import RunRecord

__all__ = ["BUDGET_LEDGER", "SLOTS", "ChunkOutcome", "run_chunk_remote", "run_chunks_submitted"]

BUDGET_LEDGER = "budget.json"
"""The shared budget ledger's file name (beside the journal, while chunks run)."""

SLOTS = "slots"
"""The folder of the arms' concurrency slots (beside the journal, while chunks run)."""

ChunkOutcome = tuple[list[RunRecord], list[str]]
"""A submitted chunk's result: its records and the scorer errors it met."""


def _earlier_attempts(journal: Journal, arm: str, index: int,
                     work: Sequence[tuple[Item, int]]) -> dict[RunKey, RunRecord]:
    """The runs of this chunk that an earlier attempt (on a worker that died) journaled."""
    wanted = {(arm, item.id, run) for item, run in work}
    found: dict[RunKey, RunRecord] = {}
    for path in journal.worker_files(index):
        with contextlib.suppress(FileNotFoundError):  # taken in meanwhile: nothing to skip
            found.update((k, r) for k, r in Journal(path).read().items() if k in wanted)
    return found


async def _flushing(journal: Journal, ready: asyncio.Event) -> None:
    """Flush a worker journal whenever it holds records (one fsync takes in every record
    finished during the one before), until cancelled."""
    while True:
        await ready.wait()
        ready.clear()
        await asyncio.to_thread(journal.flush)


@task(name="run-chunk-submitted", cache_policy=NO_CACHE, persist_result=False,
      task_run_name="{arm_name}-submitted-chunk-{index}")
async def run_chunk_remote(arm: Arm, work: Sequence[tuple[Item, int]], scorer: Scorer,
                           ledger: BudgetLedger, concurrency: int, index: int,
                           arm_name: str, journal: str | None = None,
                           slots: SharedSlots | None = None, share: int = 1) -> ChunkOutcome:
    """Run one chunk wherever the task runner puts it; returns records and scorer errors.

    With ``journal`` (the benchmark journal's path) visible from this worker, each
    finished run is also written to a worker journal of this attempt as it finishes,
    and the runs an earlier attempt of the chunk journaled are returned, not run again;
    and the arm's calls in flight are bounded by ``slots`` across every worker. A
    worker that cannot see the folder runs ``concurrency // share`` calls at a time
    (``share``: the arm's chunks), at least one.
    """
    records: list[RunRecord] = []
    side: Journal | None = None
    visible = journal is not None and Path(journal).parent.is_dir()
    if not visible:
        slots, concurrency = None, max(1, concurrency // max(1, share))
    if journal is not None and visible:
        main = Journal(Path(journal))
        earlier = _earlier_attempts(main, arm_name, index, work)
        records.extend(earlier.values())
        work = [(item, run) for item, run in work if (arm_name, item.id, run) not in earlier]
        side = Journal(main.worker_path(index))

    ready = asyncio.Event()

    def keep(record: RunRecord) -> None:
        records.append(record)
        if side is not None:
            side.append(record)
            ready.set()

    flusher = asyncio.ensure_future(_flushing(side, ready)) if side is not None else None
    with DaemonPool(min(concurrency, 64), thread_name_prefix="hr-arm") as executor:
        ctx = ChunkContext(scorer, ledger, executor, concurrency, keep)
        if slots is not None:
            ctx.share(arm_name, slots)
        try:
            await run_chunk(arm, work, ctx)
        finally:
            await arm.aclose()
            if slots is not None:
                slots.close()
            if flusher is not None:
                flusher.cancel()
            if side is not None:
                side.flush()
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
    journal = session.journal
    journal.take_in_workers()  # an earlier invocation's worker journals (read at open)
    ledger: BudgetLedger = session.ledger
    shared = None
    if plan.budget is not None:
        shared = ledger = SharedLedger.create(session.ledger,
                                              session.journal.path.with_name(BUDGET_LEDGER))
    folder = journal.path.with_name(SLOTS)
    slots = {arm: SharedSlots(folder, f"arm-{number}", plan.concurrency)
             for number, arm in enumerate(plan.arms)}  # names are data: never file names
    shares = Counter(chunk.arm for chunk in session.chunks)
    futures = [
        run_chunk_remote.submit(plan.arms[chunk.arm], chunk.work(), plan.scorer, ledger,
                                plan.concurrency, index, chunk.arm, str(journal.path),
                                slots[chunk.arm], shares[chunk.arm])
        for index, chunk in enumerate(session.chunks)
    ]

    async def collect(index: int, future: Any) -> int:
        records, errors = await asyncio.to_thread(future.result)
        session.absorb(records, errors)
        await asyncio.to_thread(journal.flush)
        if journal.error is None:  # in the journal itself now: the worker journals go
            for path in journal.worker_files(index):
                path.unlink(missing_ok=True)
        return len(records)

    try:
        done = await asyncio.gather(*(collect(i, f) for i, f in enumerate(futures)))
    finally:
        if shared is not None:
            Path(shared.path).unlink(missing_ok=True)
        shutil.rmtree(folder, ignore_errors=True)
    return sum(done)
