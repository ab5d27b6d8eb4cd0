"""Run one chunk of (arm, item, run): plain asyncio, a semaphore per arm, then scoring."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import math
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from typing import Any

from hr_core._text import is_missing, output_text
from hr_core.engine.arms import Arm
from hr_core.engine.budget import BudgetLedger
from hr_core.engine.context import _CURRENT_RUN, RunContext
from hr_core.errors import ScorerError
from hr_core.failures import FAILURE_KINDS
from hr_core.reference import Item
from hr_core.results import ScoreResult
from hr_core.scorers import Scorer, settle_score

__all__ = ["RECORD_FIELDS", "ChunkContext", "has_label", "run_chunk", "score_record",
           "stopped_record"]

RECORD_FIELDS = (
    "arm", "item_id", "run", "output", "correct", "score", "outcome", "failure_kind", "error",
    "latency_s", "tokens_in", "tokens_out", "cost_usd", "judge_status",
)
"""The fields of one journaled run (the columns of ``Benchmark.runs`` and ``judge_status``)."""

_KINDS = frozenset(FAILURE_KINDS)
_YIELD_EVERY = 256


def has_label(label: Any) -> bool:
    """Whether an item's label can score it (not ``None``/NaN)."""
    return label is not None and not is_missing(label)


class ChunkContext:
    """What the chunks of one benchmark invocation share (all in one event loop).

    ``record`` is called with every finished run's record (journal, progress).
    """

    def __init__(self, scorer: Scorer, ledger: BudgetLedger, executor: Executor,
                 concurrency: int, record: Callable[[dict[str, Any]], None]) -> None:
        self.scorer = scorer
        self.ledger = ledger
        self.executor = executor
        self.concurrency = concurrency
        self.record = record
        self.scorer_errors: list[str] = []
        self.scorer_is_async = scorer.is_async
        self._semaphores: dict[str, asyncio.Semaphore] = {}

    def semaphore(self, arm: str) -> asyncio.Semaphore:
        if arm not in self._semaphores:
            self._semaphores[arm] = asyncio.Semaphore(self.concurrency)
        return self._semaphores[arm]


def _timed(fn: Callable[..., Any] | None, payload: Any) -> tuple[Any, float]:
    assert fn is not None
    start = time.perf_counter()
    return fn(payload), time.perf_counter() - start


def _usage(output: Any) -> tuple[int | None, int | None, float | None]:
    usage = output.get("usage") if isinstance(output, Mapping) else getattr(output, "usage", None)
    if usage is None:
        return None, None, None
    if isinstance(usage, Mapping):
        get = usage.get
        return _int(get("tokens_in")), _int(get("tokens_out")), _float(get("cost_usd"))
    return (_int(getattr(usage, "tokens_in", None)), _int(getattr(usage, "tokens_out", None)),
            _float(getattr(usage, "cost_usd", None)))


def _int(value: Any) -> int | None:
    return None if value is None or is_missing(value) else int(value)


def _float(value: Any) -> float | None:
    return None if value is None or is_missing(value) else float(value)


def _raw(output: Any) -> Any:
    """A JSON-safe copy of an output that scores as the output did (for re-scoring)."""
    if output is None or isinstance(output, str | int | float | bool):
        return None if isinstance(output, float) and math.isnan(output) else output
    get = output.get if isinstance(output, Mapping) else (lambda k: getattr(output, k, None))
    raw = {k: get(k) for k in ("answer", "text", "ok", "failure_kind", "error")}
    return {k: v for k, v in raw.items() if v is None or isinstance(v, str | bool)}


def stopped_record(arm: str, item: Item, run: int) -> dict[str, Any]:
    """The record of a run that never started because the budget ran out."""
    return {
        "arm": arm, "item_id": item.id, "run": run, "output": None,
        "correct": False if has_label(item.label) else None, "score": None, "outcome": None,
        "failure_kind": "budget_stop", "error": None, "latency_s": None,
        "tokens_in": None, "tokens_out": None, "cost_usd": None, "judge_status": None,
    }


def _judge_status(scorer: Scorer, result: ScoreResult) -> str | None:
    judge_status = getattr(scorer, "judge_status", None)
    if judge_status is None:
        return None
    status = judge_status(result)
    return None if status is None else str(status)


async def score_record(record: dict[str, Any], item: Item, output: Any, scorer: Scorer,
                       errors: list[str], is_async: bool | None = None) -> None:
    """Score one run into its record; a broken scorer leaves it unscored with its output kept."""
    labelled = has_label(item.label)
    try:
        if scorer.is_async if is_async is None else is_async:
            result = await scorer.ascore(item.payload, output, item.label)
        else:
            result = scorer.validate(scorer.fn(item.payload, output, item.label))
        settled = settle_score(result, labelled)
    except Exception as exc:  # the user's scorer: keep the output, report at the end
        record["scored"] = False
        record["raw"] = _raw(output)
        message = f"{type(exc).__name__}: {exc}"
        if not isinstance(exc, ScorerError):
            message = f"scorer {scorer.name!r} raised {message}"
        errors.append(f"arm {record['arm']!r}, item {item.id!r}, run {record['run']}: {message}")
        return
    record["correct"], record["outcome"], record["failure_kind"] = settled[:3]
    record["score"] = settled.score
    record["judge_status"] = _judge_status(scorer, result)
    record.pop("scored", None)
    record.pop("raw", None)


async def run_one(arm: Arm, item: Item, run: int, ctx: ChunkContext) -> dict[str, Any]:
    """Call one arm on one item and score the output.

    While the arm runs, ``hr_core.current_run()`` gives its :class:`RunContext`
    (sync arms get a copy of the context in the thread pool).
    """
    error: str | None = None
    output: Any = None
    token = _CURRENT_RUN.set(RunContext(arm.name, item.id, run))
    start = time.perf_counter()
    try:
        if arm.is_async:
            output = await arm.fn(item.payload)  # type: ignore[misc]
            latency = time.perf_counter() - start
        elif arm.llm is not None:
            output = await arm.acall_llm(item.payload, run)
            latency = time.perf_counter() - start
        else:
            loop = asyncio.get_running_loop()
            output, latency = await loop.run_in_executor(
                ctx.executor, contextvars.copy_context().run, _timed, arm.fn, item.payload
            )
            if inspect.isawaitable(output):  # a sync callable handing back a coroutine
                output = await output
                latency = time.perf_counter() - start
    except Exception as exc:  # an arm that raises is a row, not a crash
        latency = time.perf_counter() - start
        error = f"{type(exc).__name__}: {exc}"
    finally:
        _CURRENT_RUN.reset(token)
    record: dict[str, Any] = {
        "arm": arm.name, "item_id": item.id, "run": run, "output": None, "correct": None,
        "score": None, "outcome": None, "failure_kind": None, "error": error, "latency_s": latency,
        "tokens_in": None, "tokens_out": None, "cost_usd": None, "judge_status": None,
    }
    if error is not None:
        record["failure_kind"] = "error"
        record["correct"] = False if has_label(item.label) else None
        return record
    if type(output) is str:
        record["output"] = output
    else:
        record["output"] = output_text(output)
        if output is not None and not isinstance(output, int | float):
            tokens_in, tokens_out, cost = _usage(output)
            record["tokens_in"], record["tokens_out"], record["cost_usd"] = (
                tokens_in, tokens_out, cost)
            ctx.ledger.settle(arm.name, tokens_in, tokens_out, cost)
            message = (output.get("error") if isinstance(output, Mapping)
                       else getattr(output, "error", None))
            if isinstance(message, str):
                record["error"] = message
    await score_record(record, item, output, ctx.scorer, ctx.scorer_errors, ctx.scorer_is_async)
    return record


async def run_chunk(arm: Arm, work: Sequence[tuple[Item, int]],
                    ctx: ChunkContext) -> list[dict[str, Any]]:
    """Run ``arm`` on each ``(item, run)`` of a chunk; returns the finished records.

    At most ``ctx.concurrency`` runs of an arm are in flight (one semaphore per arm,
    shared by its chunks); each run reserves budget when it gets a slot, and runs
    the budget refuses are simply not done (the benchmark records them as
    ``budget_stop``).

    Example:
        >>> # inside an event loop: records = await run_chunk(arm, [(item, 1)], ctx)
    """
    records: list[dict[str, Any]] = []
    pending = iter(work)
    semaphore = ctx.semaphore(arm.name)
    ledger = ctx.ledger

    async def worker() -> None:
        for count, (item, run) in enumerate(pending, start=1):
            async with semaphore:
                if not ledger.reserve(arm.name):
                    return
                record = await run_one(arm, item, run, ctx)
            records.append(record)
            ctx.record(record)
            if count % _YIELD_EVERY == 0:
                await asyncio.sleep(0)

    workers = min(ctx.concurrency, len(work))
    if workers == 1:
        await worker()
    else:
        await asyncio.gather(*(worker() for _ in range(workers)))
    return records
