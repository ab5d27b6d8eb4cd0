"""One invocation of a benchmark, without Prefect: plan, resume, run chunks, write results.

The flow in ``flows/benchmark.py`` drives a :class:`BenchmarkSession` with one
Prefect task per chunk; :meth:`BenchmarkSession.run` drives it with plain asyncio.
Planning lives in ``hr_core.run.plan`` and writing the results in
``hr_core.run.finish``; their names are re-exported here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np

from hr_core.analysis.benchmark import Benchmark
from hr_core.core.errors import RunNotFoundError
from hr_core.run.batch.engine import BatchEngine
from hr_core.run.budget import BudgetLedger
from hr_core.run.chunk import ChunkContext, run_chunk, score_record
from hr_core.run.finish import HTML_REPORT as HTML_REPORT
from hr_core.run.finish import SessionResults
from hr_core.run.interrupt import (
    park,
    reassert_handlers,
    register,
    stop_requested,
    unregister,
)
from hr_core.run.plan import (
    DEFAULT_CHUNK_SIZE,
    BenchmarkPlan,
    Chunk,
    JudgePolicy,
    apply_judge_policy,
    pending_runs,
    plan_benchmark,
)
from hr_core.run.plan import MAX_PLANNED_RUNS as MAX_PLANNED_RUNS
from hr_core.run.plan import RESPONSES as RESPONSES
from hr_core.run.plan import check_plan_size as check_plan_size
from hr_core.run.plan import response_cache_path as response_cache_path
from hr_core.run.progress import ProgressFn, ProgressRow, progress_callback
from hr_core.run.stopping import SequentialMonitor
from hr_core.run.threads import DaemonPool
from hr_core.store.folder import RunStore, utc_now
from hr_core.store.journal import FLUSH_INTERVAL_S, RunKey
from hr_core.store.lock import RunLock
from hr_core.store.manifest import write_manifest
from hr_core.store.memory import use_system_pool
from hr_core.store.outputs import load_output, stored_runs
from hr_core.store.record import RunRecord
from hr_core.store.rows import RECORDS_KEPT_UP_TO

__all__ = ["DEFAULT_CHUNK_SIZE", "BenchmarkPlan", "BenchmarkSession", "JudgePolicy",
           "apply_judge_policy", "plan_benchmark"]


class BenchmarkSession(SessionResults):
    """Runs one :class:`BenchmarkPlan`: resumes from the journal, runs chunks, writes results.

    Example:
        >>> import tempfile
        >>> plan = plan_benchmark({"upper": str.upper}, [{"id": "q1", "label": "A"}],
        ...                       store=tempfile.mkdtemp())
        >>> bench = BenchmarkSession(plan).run_sync()
        >>> bench.runs["correct"].tolist()
        [False]
    """

    def __init__(self, plan: BenchmarkPlan, *, flow_run_id: str | None = None,
                 lock: RunLock | None = None) -> None:
        self.plan = plan
        self.flow_run_id = flow_run_id
        self.store = RunStore(plan.store, plan.name, plan.run_id)
        self.journal = self.store.journal
        self.journal.reference = plan.reference  # contexts judged when journaled
        self.lock = lock if lock is not None else self.store.lock
        self._own_lock = False
        self._halted = False
        self._in_flight: set[asyncio.Future[int]] = set()  # chunks halt() abandons
        self.started_at = utc_now()
        self._started = time.monotonic()
        self.chunks: list[Chunk] = []
        self.done: dict[RunKey, RunRecord] = {}
        self._progress: dict[str, list[int]] = {a: [0, 0, 0] for a in plan.arms}
        self.total = len(plan.reference) * sum(plan.runs_of(a) for a in plan.arms)
        self.engine_seconds = 0.0
        self.timings: dict[str, float] = {}
        self._opened = False
        self.reused: dict[str, int] = {}
        self._superseded = 0
        self._ctx: ChunkContext | None = None
        self._executor: DaemonPool | None = None
        self.rounds: list[list[int]] = []
        """Chunk indices run together before the stop rule is asked (one round without it)."""
        self.monitor: SequentialMonitor | None = None
        self._round_items: list[np.ndarray] = []
        self._positions: dict[str, int] = {}
        self.batch: BatchEngine | None = None  # open(): an arm or the judge batches
        self.batch_options: dict[str, Any] = {}  # BatchEngine's submit_only, poll_s, on_status

    # -- opening: resume from the journal, plan the chunks -------------------------------

    def open(self) -> None:
        """Lock the run folder, read the journal (or clear it when not resuming), count
        done runs, make chunks.

        Its time goes into the manifest's ``timings`` as ``open_s``.

        Raises:
            RunLockedError: another process runs the same benchmark into this folder.
        """
        started = time.perf_counter()
        plan = self.plan
        use_system_pool()  # the run's Arrow buffers: freed memory goes back (engine/memory.py)
        if not self.lock.held:
            self.lock.acquire()
            self._own_lock = True
        self.store.remove_stale_temporaries()  # a kill while writing left them
        if plan.resume:
            self.store.fetch_journal()
            self.done = {k: r for k, r in self.journal.read().items() if k[0] in plan.arms}
            garbled = self.journal.garbled_message()
            if garbled is not None:  # skipped, never silently (the manifest lists them too)
                warnings.warn(garbled, stacklevel=2)
        else:
            self.journal.clear()
            if plan.response_cache is not None and not plan.shared_cache:
                for suffix in ("", "-wal", "-shm"):  # started over: no replayed replies
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(plan.response_cache + suffix)
        if plan.resume and not plan.fresh and len(self.done) < self.total:
            self._reuse_stored_outputs()
        if not self.done and self.total <= RECORDS_KEPT_UP_TO:
            self.journal.made = []  # its table is built from them (engine/rows.py)
        if plan.outputs_from is not None and not self.done:
            raise RunNotFoundError(
                f"{plan.store}/{plan.name}/{plan.outputs_from}: no journaled runs of these "
                "arms to re-score (is it a finished run folder with its journal.jsonl?)")
        self.ledger = BudgetLedger(plan.budget, plan.arms)
        if plan.stop is not None and plan.outputs_from is None:
            self.monitor = SequentialMonitor(plan.stop, plan.arms, len(plan.reference))
            self._positions = {item.id: i for i, item in enumerate(plan.reference)}
        for (arm, _, _), record in self.done.items():
            self.ledger.count_done(arm, record.tokens_in, record.tokens_out, record.cost_usd,
                                   (record.judge_tokens_in, record.judge_tokens_out,
                                    record.judge_cost_usd))
            self._count(record)
            self._monitor(record)
        if self.monitor is None:
            self._plan_chunks()
        else:
            self._plan_rounds(self.monitor)
        # ``concurrency`` is per arm, sync arms too: threads enough for every sync arm
        # (made only as calls need them)
        sync_arms = sum(1 for a in plan.arms.values() if not a.is_async and a.llm is None)
        self._executor = DaemonPool(plan.concurrency * max(1, sync_arms),
                                    thread_name_prefix="hr-arm")
        self._ctx = ChunkContext(plan.scorer, self.ledger, self._executor, plan.concurrency,
                                 self._record, self.halted)
        try:
            self.batch = BatchEngine.of(self, **self.batch_options)
        except BaseException:  # refused (a stop rule, a provider without a batch API)
            self.close()
            raise
        self._opened = True
        self.timings["open_s"] = time.perf_counter() - started
        write_manifest(self.store, self.manifest("running"))
        register(self)
        reassert_handlers()  # Prefect swaps in its SIGTERM handler while a flow runs

    def _plan_chunks(self) -> None:
        """Each arm's pending runs in chunks of ``chunk_size``, all in one round."""
        plan = self.plan
        for name in plan.arms if plan.outputs_from is None else ():
            items, runs = self._pending(name)
            for start in range(0, len(items), plan.chunk_size):
                stop = start + plan.chunk_size
                self.chunks.append(Chunk(name, plan.reference, items[start:stop],
                                         runs[start:stop]))
        self.rounds = [list(range(len(self.chunks)))]

    def _plan_rounds(self, monitor: SequentialMonitor) -> None:
        """Sequential mode: one round per batch of drawn items, a chunk per arm in each."""
        self._round_items = monitor.rounds()
        round_of = np.empty(len(self.plan.reference), dtype=np.int64)
        for number, items in enumerate(self._round_items):
            round_of[items] = number
        self.rounds = [[] for _ in self._round_items]
        for name in self.plan.arms:
            items, runs = self._pending(name)
            which = round_of[items]
            order = np.argsort(which, kind="stable")
            items, runs, which = items[order], runs[order], which[order]
            bounds = np.searchsorted(which, np.arange(len(self._round_items) + 1))
            for number in range(len(self._round_items)):
                start, stop = int(bounds[number]), int(bounds[number + 1])
                if stop > start:
                    self.rounds[number].append(len(self.chunks))
                    self.chunks.append(Chunk(name, self.plan.reference, items[start:stop],
                                             runs[start:stop]))

    def _monitor(self, record: RunRecord) -> None:
        if self.monitor is not None:
            position = self._positions.get(record.item_id)
            if position is not None and record.failure_kind != "budget_stop":
                self.monitor.record(record.arm, position, record.correct)

    def end_round(self, number: int) -> bool:
        """Round ``number``'s chunks have run: True when the run should stop here (the
        stop rule's verdict is clear). Without a stop rule, never."""
        monitor = self.monitor
        if monitor is None:
            return False
        monitor.close_round(self._round_items[number])
        if number + 1 < len(self.rounds) and monitor.clear():
            monitor.stopped = True
        return monitor.stopped

    def _pending(self, arm: str) -> tuple[np.ndarray, np.ndarray]:
        """The runs of ``arm`` not done yet (:func:`~hr_core.run.plan.pending_runs`)."""
        return pending_runs(self.plan, arm, self.done)

    def interrupt(self) -> str:
        """The user interrupted (any thread): flush and seal the journal (a call ending later
        is not journaled), mark the manifest ``interrupted``; returns a line saying what
        was kept (the runs the journal's files hold) and how to resume."""
        self.journal.seal()
        with contextlib.suppress(OSError):
            write_manifest(self.store, self.manifest("interrupted"))
        failure = self.journal.failure()
        if failure is not None:
            return str(failure)
        made = sum(1 for key in self.journal.read() if key[0] in self.plan.arms)
        note = None if self.batch is None else self.batch.interrupt_note()
        return (f"{made} finished run(s) of {self.total} are journaled in {self.store.run_dir}"
                f"; run the same benchmark again to resume{'' if note is None else '; ' + note}")

    def close(self) -> None:
        """The invocation is over (finished or not): release the run folder's lock."""
        unregister(self)
        if self._own_lock:
            self.lock.release()
            self._own_lock = False

    async def settle(self) -> None:
        """After the chunks: stop here if the run was halted, else go on to the results.

        Interrupted (Ctrl-C, SIGTERM): wait for the handler to end the process
        (:func:`~hr_core.run.interrupt.park`); the journal could not be written:
        raise its failure (see :meth:`check_journal`).
        """
        if stop_requested():
            await park()
        self.check_journal()

    def check_journal(self) -> None:
        """Raise the journal's write failure (one message: path, cause, where the finished
        runs are), after writing what it can and a ``failed`` manifest."""
        failure = self.journal.failure()
        if failure is None:
            return
        self.close()
        if self._executor is not None:
            self._executor.shutdown(wait=False)
        with contextlib.suppress(OSError):
            write_manifest(self.store, self.manifest("failed", error=str(failure)))
        raise failure

    def _reuse_stored_outputs(self) -> None:
        """Take the finished runs other runs of this name made with the same arms and
        reference (another scorer, say): they are re-scored, their arms not called."""
        plan = self.plan
        arms = plan.fingerprints()["arms"]
        found, self.reused = stored_runs(plan.store, plan.name, plan.reference.hash, arms,
                                         exclude=[plan.run_id], only=plan.outputs_from)
        ids = {item.id for item in plan.reference}
        for key, record in found.items():
            if key in self.done or key[1] not in ids or not 1 <= key[2] <= plan.runs_of(key[0]):
                continue
            record = record.copy()
            if record.arm_output is not None or record.output is not None:
                record.scored = False  # scored again by this benchmark's scorer
            else:
                self.journal.append(record)  # the arm raised: nothing to score
            self.done[key] = record

    def _count(self, record: RunRecord) -> None:
        counts = self._progress[record.arm]
        counts[0] += 1
        kind = record.failure_kind
        if kind == "error":
            counts[2] += 1
        elif kind not in (None, "budget_stop"):
            counts[1] += 1

    def _record(self, record: RunRecord) -> None:
        # not kept in memory: the runs table is built from the journal (hr_core.store.rows)
        self.journal.append(record)
        self._count(record)
        self._monitor(record)
        if self.batch is not None:
            self.batch.recorded(record)

    def halted(self) -> bool:
        """Whether no new call may start: the journal cannot be written, the user
        interrupted (:func:`hr_core.run.interrupt.request_stop`) or :meth:`halt`."""
        return self._halted or self.journal.error is not None or stop_requested()

    def halt(self) -> None:
        """Start no new call in this session (its flow run was cancelled, say) and abandon
        the calls in flight of the chunks run through :meth:`abandonable` (in the
        session's event loop)."""
        self._halted = True
        for chunk in list(self._in_flight):
            chunk.cancel()

    async def abandonable(self, work: Awaitable[int]) -> int:
        """Await ``work`` (a chunk: its runs finished); :meth:`halt` cancels it (a sync
        arm's thread is left to finish on its own), which returns 0 here: the chunk's
        caller (a Prefect task run) ends as usual."""
        chunk = asyncio.ensure_future(work)
        self._in_flight.add(chunk)
        try:
            await asyncio.wait((chunk,))
        except BaseException:  # the caller itself is cancelled
            chunk.cancel()
            raise
        finally:
            self._in_flight.discard(chunk)
        return 0 if chunk.cancelled() else chunk.result()

    @property
    def opened(self) -> bool:
        """Whether :meth:`open` has read the journal and planned the chunks."""
        return self._opened

    def absorb(self, records: list[RunRecord], scorer_errors: list[str]) -> None:
        """Take in the records of a chunk run elsewhere (a Dask/Ray worker): journal them."""
        if self._ctx is None:
            raise RuntimeError("open the benchmark session before absorbing records")
        for record in records:
            self._record(record)
        self._ctx.scorer_errors.extend(scorer_errors)

    def progress(self, final: bool = False) -> list[ProgressRow]:
        """``(arm, done, total, failures, errors)`` for each arm (see :data:`ProgressFn`).

        ``final=True``, once every chunk has run: the runs not done are the ones a
        budget stopped (``budget_stop`` rows), counted as done so each arm completes.
        """
        items = len(self.plan.reference)
        totals = {arm: items * self.plan.runs_of(arm) for arm in self._progress}
        return [(arm, totals[arm] if final else c[0], totals[arm], c[1], c[2])
                for arm, c in self._progress.items()]

    # -- running --------------------------------------------------------------------------

    def unscored(self) -> list[RunRecord]:
        """Journaled runs left unscored (a broken scorer, a batched judge): rescored first."""
        return [r for r in self.done.values() if not r.scored]

    async def rescore(self) -> int:
        """Score journaled runs a broken scorer left unscored (no arm is called)."""
        assert self._ctx is not None
        pending = self.unscored()
        self.journal.fill_contexts(pending)  # the scorer sees the passages again
        for record in pending:
            item = self.plan.reference.get(record.item_id)
            await score_record(record, item, load_output(record), self.plan.scorer,
                               self._ctx.scorer_errors)
            self.journal.append(record)
        return len(pending)

    async def run_chunk(self, index: int) -> int:
        """Run chunk ``index``; returns how many runs finished."""
        assert self._ctx is not None
        chunk = self.chunks[index]
        return await run_chunk(self.plan.arms[chunk.arm], chunk.work(), self._ctx)

    async def watch(self, callback: Callable[[list[ProgressRow]], Any],
                    interval: float) -> None:
        """Call ``callback(self.progress())`` every ``interval`` s while it changes."""
        last: list[ProgressRow] | None = None
        while True:
            await asyncio.sleep(interval)
            now = self.progress()
            if now != last:
                last = now
                result = callback(now)
                if asyncio.iscoroutine(result):
                    await result

    async def run(self, on_progress: ProgressFn | None = None) -> Benchmark:
        """Open, run every chunk with plain asyncio and finish (no Prefect)."""
        on_progress = progress_callback(on_progress)
        if not self._opened:
            self.open()
        try:
            started = time.perf_counter()
            helpers = [asyncio.ensure_future(self.journal.flush_every(FLUSH_INTERVAL_S))]
            if on_progress is not None:
                helpers.append(asyncio.ensure_future(self.watch(
                    lambda rows: [on_progress(*row) for row in rows], 0.25)))
            try:
                if self.batch is None:
                    await self._run_pass()
                else:  # passes: collect, submit, wait, serve (hr_core.run.batch.engine)
                    await self.batch.run(self._run_pass)
            finally:
                for helper in helpers:
                    helper.cancel()
                self.journal.flush()
            await self.settle()
            if on_progress is not None:
                for row in self.progress(final=True):
                    on_progress(*row)
            self.engine_seconds = time.perf_counter() - started
            return self.finish()
        finally:
            await self.close_clients()
            self.close()

    async def _run_pass(self) -> None:
        """Re-score what waits for it, then run the rounds of chunks."""
        await self.rescore()
        for number, chunks in enumerate(self.rounds):
            await asyncio.gather(*(self.run_chunk(i) for i in chunks))
            if self.halted() or self.end_round(number):
                break

    async def close_clients(self) -> None:
        """Close the arms' and the judge scorer's HTTP clients of this event loop."""
        if self.batch is not None:
            await self.batch.aclose()
        for arm in self.plan.arms.values():
            await arm.aclose()
        close = getattr(self.plan.scorer, "aclose", None)
        if close is not None:
            await close()

    def run_sync(self, on_progress: ProgressFn | None = None) -> Benchmark:
        """:meth:`run` from synchronous code."""
        return asyncio.run(self.run(on_progress))
