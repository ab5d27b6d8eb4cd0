"""Run one chunk of (arm, item, run): plain asyncio, a semaphore per arm, then scoring."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from contextlib import AbstractAsyncContextManager
from typing import Any

from hr_core.core.errors import ScorerError
from hr_core.core.failures import FAILURE_KINDS
from hr_core.core.text import is_missing, output_text
from hr_core.data.reference import Item
from hr_core.models.ratelimit.endpoint import CALL_DEADLINE, EndpointStoppedError
from hr_core.results import USAGE_KINDS, ArmResult, ScoreResult, Usage
from hr_core.run.arms import Arm
from hr_core.run.batch.pending import BatchPending
from hr_core.run.budget import BudgetLedger
from hr_core.run.context import CURRENT_RUN, RunContext
from hr_core.scoring.answers import has_label
from hr_core.scoring.scorer import Scorer, settle_score
from hr_core.store.outputs import store_output
from hr_core.store.record import RunRecord, bound_contexts, short_outcome, stopped_record

__all__ = ["ChunkContext", "run_chunk", "score_record",
           "stopped_record"]

_KINDS = frozenset(FAILURE_KINDS)
_YIELD_EVERY = 256


def _never() -> bool:
    return False


class ChunkContext:
    """What the chunks of one benchmark invocation share (all in one event loop).

    ``record`` is called with every finished run's record (journal, progress);
    ``halted()`` is checked before every new call: once it is true (the journal
    cannot be written, the user interrupted) no new call starts.
    """

    def __init__(self, scorer: Scorer, ledger: BudgetLedger, executor: Executor,
                 concurrency: int, record: Callable[[RunRecord], None],
                 halted: Callable[[], bool] = _never) -> None:
        self.scorer = scorer
        self.ledger = ledger
        self.executor = executor
        self.concurrency = concurrency
        self.record = record
        self.halted = halted
        self.scorer_errors: list[str] = []
        self.scorer_is_async = scorer.is_async
        self._semaphores: dict[str, AbstractAsyncContextManager[Any]] = {}

    def share(self, arm: str, limit: AbstractAsyncContextManager[Any]) -> None:
        """Bound ``arm``'s calls in flight with ``limit`` (e.g. :class:`SharedSlots`,
        across processes) instead of a semaphore of this context's own."""
        self._semaphores[arm] = limit

    def semaphore(self, arm: str) -> AbstractAsyncContextManager[Any]:
        if arm not in self._semaphores:
            self._semaphores[arm] = asyncio.Semaphore(self.concurrency)
        return self._semaphores[arm]


def _usage(output: Any) -> tuple[int | None, int | None, float | None]:
    usage = output.get("usage") if isinstance(output, Mapping) else getattr(output, "usage", None)
    if usage is None:
        return None, None, None
    if isinstance(usage, Mapping):
        get = usage.get
        return _int(get("tokens_in")), _int(get("tokens_out")), _float(get("cost_usd"))
    return (_int(getattr(usage, "tokens_in", None)), _int(getattr(usage, "tokens_out", None)),
            _float(getattr(usage, "cost_usd", None)))


def _set_kinds(record: RunRecord, output: Any) -> None:
    """The usage by kind of token an output reports, on its record (only those given: a
    record without them is written as before they existed)."""
    usage = output.get("usage") if isinstance(output, Mapping) else getattr(output, "usage", None)
    if usage is None:
        return
    get = usage.get if isinstance(usage, Mapping) else functools.partial(getattr, usage)
    for name in USAGE_KINDS:
        value = get(name, None)
        if value is not None and not is_missing(value):
            setattr(record, name, int(value) if name.startswith("tokens_") else float(value))


def _int(value: Any) -> int | None:
    return None if value is None or is_missing(value) else int(value)


def _float(value: Any) -> float | None:
    return None if value is None or is_missing(value) else float(value)


def _judge_status(scorer: Scorer, result: ScoreResult) -> str | None:
    judge_status = getattr(scorer, "judge_status", None)
    if judge_status is None:
        return None
    status = judge_status(result)
    return None if status is None else str(status)


async def score_record(record: RunRecord, item: Item, output: Any, scorer: Scorer,
                       errors: list[str], is_async: bool | None = None) -> bool:
    """Score one run into its record; a broken scorer leaves it unscored with its output kept.

    Returns:
        Whether scoring spent model calls (a judge's: the :class:`ScoreResult`'s
        ``usage``): their tokens and cost are in the record's ``judge_*`` fields.
    """
    labelled = has_label(item.label)
    result: ScoreResult | None = None
    token = CURRENT_RUN.set(RunContext(record.arm, item.id, record.run))  # a judge's calls
    try:
        if scorer.is_async if is_async is None else is_async:
            result = await scorer.ascore(item.payload, output, item.label)
        else:
            result = scorer.validate(scorer.fn(item.payload, output, item.label))
        settled = settle_score(result, labelled)
    except BatchPending:  # a batched judge's call waits for its batch: scored later
        record.scored = False
        return False
    except Exception as exc:  # the user's scorer: the output is kept, report at the end
        record.scored = False
        message = f"{type(exc).__name__}: {exc}"
        if not isinstance(exc, ScorerError):
            message = f"scorer {scorer.name!r} raised {message}"
        errors.append(f"arm {record.arm!r}, item {item.id!r}, run {record.run}: {message}")
        return _spent(record, None if result is None else result.usage)
    finally:
        CURRENT_RUN.reset(token)
    record.correct, outcome, record.failure_kind = settled[:3]
    record.outcome = short_outcome(outcome, record.output)
    record.score = settled.score
    record.judge_status = _judge_status(scorer, result)
    if not record.scored:
        del record.scored  # back to its default (scored): the line leaves it out
    return _spent(record, settled.usage)


def _spent(record: RunRecord, usage: Usage | None) -> bool:
    """Put the scorer's model usage in the record's ``judge_*`` fields; whether it had any."""
    if usage is None:
        return False
    record.judge_tokens_in = _int(usage.tokens_in)
    record.judge_tokens_out = _int(usage.tokens_out)
    record.judge_cost_usd = _float(usage.cost_usd)
    return True


class _OutOfTime(Exception):
    """The budget's ``max_seconds`` ran out while the call was in flight."""


class _TimedOut(Exception):
    """The call took longer than its arm's ``timeout_s`` (not an arm's own TimeoutError)."""


def _consume(task: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned call's outcome (no "exception was never retrieved" noise)."""
    if not task.cancelled():
        task.exception()


async def _bounded(call: asyncio.Future[Any], limit: float, timed_out: bool,
                   executor: Executor) -> Any:
    """Wait for ``call`` at most ``limit`` s; then abandon it (a thread cannot be stopped:
    it is left to finish on its own, a daemon) and raise."""
    done, _ = await asyncio.wait((call,), timeout=max(limit, 0.0))
    if not done:
        call.cancel()
        call.add_done_callback(_consume)
        abandon = getattr(executor, "abandon", None)
        if abandon is not None and not isinstance(call, asyncio.Task):
            abandon()
        raise _TimedOut if timed_out else _OutOfTime
    return call.result()


def _timed(fn: Callable[..., Any] | None, payload: Any) -> tuple[Any, float]:
    assert fn is not None
    start = time.perf_counter()
    return fn(payload), time.perf_counter() - start


async def _call_arm(arm: Arm, item: Item, run: int, ctx: ChunkContext
                    ) -> tuple[Any, float | None]:
    """Call the arm once: its output and, for a sync arm, the time spent in its thread.

    Past its ``timeout_s`` (or the budget's time) the call is abandoned."""
    timeout = arm.timeout_s
    deadline = ctx.ledger.deadline
    limit, timed_out = timeout, True
    if deadline is not None:
        left = deadline - time.monotonic()
        if limit is None or left < limit:
            limit, timed_out = left, False
    loop = asyncio.get_running_loop()
    if limit is not None:  # rate-limited model calls wait until then (and no longer)
        CALL_DEADLINE.set(time.monotonic() + max(limit, 0.0))
    if arm.is_async or arm.llm is not None:
        coro = (arm.fn(item.payload) if arm.is_async  # type: ignore[misc]
                else arm.acall_llm(item.payload, run))
        if limit is None:
            return await coro, None
        return await _bounded(asyncio.ensure_future(coro), limit, timed_out, ctx.executor), None
    call = loop.run_in_executor(ctx.executor, contextvars.copy_context().run,
                                _timed, arm.fn, item.payload)
    if limit is None:
        output, latency = await call
    else:
        output, latency = await _bounded(call, limit, timed_out, ctx.executor)
    if inspect.isawaitable(output):  # a sync callable handing back a coroutine
        return await output, None
    return output, latency


async def run_one(arm: Arm, item: Item, run: int, ctx: ChunkContext) -> RunRecord | None:
    """Call one arm on one item and score the output.

    Anything the arm raises, ``SystemExit`` and ``KeyboardInterrupt`` included, is
    the run's ``error``; so is a call past the arm's ``timeout_s`` ("timed out
    after N s"). ``None`` when the budget's ``max_seconds`` ran out during the
    call: the run is not done (a ``budget_stop`` row).

    While the arm runs, ``hr_core.current_run()`` gives its :class:`RunContext`
    (sync arms get a copy of the context in the thread pool).
    """
    error: str | None = None
    output: Any = None
    token = CURRENT_RUN.set(RunContext(arm.name, item.id, run))
    deadline_token = CALL_DEADLINE.set(None)
    start = time.perf_counter()
    latency: float | None = None
    try:
        output, latency = await _call_arm(arm, item, run, ctx)
    except asyncio.CancelledError:
        raise  # the benchmark itself is being stopped
    except _OutOfTime:
        return None
    except EndpointStoppedError as exc:  # a hard quota halted the endpoint: not made
        ctx.ledger.halt(arm.name, exc.reason)
        return None
    except _TimedOut:
        error = f"timed out after {arm.timeout_s:g} s"
    except BatchPending:
        raise  # a batched call waits for its batch: no record (run_chunk runs it later)
    except BaseException as exc:  # an arm that raises (or exits) is a row, not a crash
        error = f"{type(exc).__name__}: {exc}".rstrip(": ")
        spent = getattr(exc, "usage", None)  # a model call's: its failed attempts' tokens
        output = spent if isinstance(spent, Usage) else None
    finally:
        if latency is None:
            latency = time.perf_counter() - start
        CALL_DEADLINE.reset(deadline_token)
        CURRENT_RUN.reset(token)
    record = RunRecord(arm=arm.name, item_id=item.id, run=run, error=error, latency_s=latency,
                       truncated=False, replayed=False)
    if error is not None:
        record.failure_kind = "error"
        record.correct = False if has_label(item.label) else None
        if output is not None:  # a model call's failed attempts spent these
            tokens_in, tokens_out, cost = _usage({"usage": output})
            record.tokens_in, record.tokens_out, record.cost_usd = tokens_in, tokens_out, cost
            _set_kinds(record, {"usage": output})
            ctx.ledger.settle(arm.name, tokens_in, tokens_out, cost)
        return record
    if type(output) is str:
        record.output = output
    else:
        record.output = output_text(output)
        record.arm_output = store_output(output, record.output)
        contexts = getattr(output, "contexts", None) if isinstance(output, ArmResult) else None
        if contexts:
            record.contexts, cut = bound_contexts(contexts)
            if cut:
                record.contexts_cut = cut
        if output is not None and not isinstance(output, int | float):
            tokens_in, tokens_out, cost = _usage(output)
            record.tokens_in, record.tokens_out, record.cost_usd = tokens_in, tokens_out, cost
            _set_kinds(record, output)
            ctx.ledger.settle(arm.name, tokens_in, tokens_out, cost)
            message = (output.get("error") if isinstance(output, Mapping)
                       else getattr(output, "error", None))
            if isinstance(message, str):
                record.error = message
            truncated = (output.get("truncated") if isinstance(output, Mapping)
                         else getattr(output, "truncated", None))
            record.truncated = truncated is True
            meta = (output.get("meta") if isinstance(output, Mapping)
                    else getattr(output, "meta", None))
            record.replayed = isinstance(meta, Mapping) and meta.get("cached") is True
    judged = await score_record(record, item, output, ctx.scorer, ctx.scorer_errors,
                                ctx.scorer_is_async)
    if judged:
        ctx.ledger.settle(arm.name, record.judge_tokens_in, record.judge_tokens_out,
                          record.judge_cost_usd, kind="judge")
    if (record.failure_kind == "parse_failure" and record.error is None
            and record.output is None and output is not None):
        record.error = _no_text(output)
    return record


def _no_text(output: Any) -> str | None:
    """Why an output that is not ``None`` has no answer text (bytes, a set, an object)."""
    if isinstance(output, Mapping | int | float) or any(
            hasattr(output, name) for name in ("answer", "text")):
        return None  # a mapping/ArmResult with an empty answer: an ordinary parse failure
    return (f"the arm returned {type(output).__name__}, which has no answer text (return a "
            "str, a mapping with 'answer' or 'text', or an ArmResult)")


async def run_chunk(arm: Arm, work: Sequence[tuple[Item, int]], ctx: ChunkContext) -> int:
    """Run ``arm`` on each ``(item, run)`` of a chunk; returns how many runs finished.

    Each finished run's record goes to ``ctx.record`` (the journal) and is not kept
    here: the chunks of a benchmark all run at once, so records kept until their
    chunk ends would be every record of the benchmark in memory.

    At most ``ctx.concurrency`` runs of an arm are in flight (one semaphore per arm,
    shared by its chunks); each run reserves budget when it gets a slot, and runs
    the budget refuses are simply not done (the benchmark records them as
    ``budget_stop``).

    Example (not run as a doctest: it needs an event loop, an arm and a session)::

            finished = await run_chunk(arm, [(item, 1)], ctx)
    """
    finished = 0
    pending = iter(work)
    semaphore = ctx.semaphore(arm.name)
    ledger = ctx.ledger

    halted = ctx.halted

    async def worker() -> None:
        nonlocal finished
        for count, (item, run) in enumerate(pending, start=1):
            async with semaphore:
                if halted() or not ledger.reserve(arm.name):
                    return
                try:
                    record = await run_one(arm, item, run, ctx)
                except BatchPending:  # waits for its batch: not made yet, not counted
                    ledger.release(arm.name)
                    continue
            if record is None:
                return
            finished += 1
            ctx.record(record)
            if count % _YIELD_EVERY == 0:
                await asyncio.sleep(0)

    workers = min(ctx.concurrency, len(work))
    if workers == 1:
        await worker()
    else:
        await asyncio.gather(*(worker() for _ in range(workers)))
    return finished
