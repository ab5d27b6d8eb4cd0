"""The ``hr-benchmark`` flow: load reference -> run arms in chunks -> score -> write -> report."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Sequence
from typing import Any

from prefect import get_run_logger, tags
from prefect.context import TagsContext
from prefect.exceptions import Abort
from prefect.runtime import flow_run
from prefect.states import Cancelled, Completed, Failed

from flows._cancel import run_watched
from flows._invocation import InvocationVar
from flows._spec_plan import plan_from_spec
from flows.clients import prefect_clients
from flows.hrflow import hr_flow
from flows.labels import benchmark_tags, label_flow_run, publish_run_facts
from hr_core.analysis.benchmark import Benchmark
from hr_core.analysis.health import ErrorRateExceeded
from hr_core.core.errors import (
    BenchmarkCancelled,
    FlowRunStopped,
    SpecError,
    StoreWriteError,
)
from hr_core.core.safe import visible
from hr_core.models.batch_api import BatchStatus
from hr_core.models.ratelimit.reach import halted_benchmark
from hr_core.run.batch.engine import StatusFn
from hr_core.run.batch.pending import BatchesSubmitted
from hr_core.run.progress import ProgressFn, progress_callback
from hr_core.run.session import BenchmarkPlan, BenchmarkSession, JudgePolicy
from hr_core.run.spec import spec_import_path
from hr_core.store.folder import RunStore
from hr_core.store.lock import RunLock
from tasks.benchmark import (
    ProgressPublisher,
    rescore_benchmark,
    run_benchmark_chunk,
    run_client,
    write_benchmark,
)
from tasks.limits import ProviderLimit, ensure_provider_limits, limit_arms
from tasks.remote import run_chunks_submitted

__all__ = ["Invocation", "benchmark_flow", "call_flow", "flow_parameters", "plan_from_spec",
           "publishing"]

PROGRESS_INTERVAL_S = 1.0
CALLBACK_INTERVAL_S = 0.25


class Invocation:
    """What one flow run needs that is not a Prefect parameter (callables, the resolved plan).

    The flow's body takes it as its argument (:func:`_benchmark`). A Python call
    (:func:`run_plan`) hands it to the flow run through a context variable, the one
    way into a flow run for what cannot be a parameter; the flow run's parameters are
    the call's inputs (:func:`flow_parameters`).
    """

    __slots__ = ("batch_options", "limits", "lock", "on_progress", "plan", "stopped", "submit",
                 "submitted")

    def __init__(self, plan: BenchmarkPlan, on_progress: ProgressFn | None,
                 submit: bool = False, limits: Sequence[ProviderLimit] = (),
                 lock: RunLock | None = None) -> None:
        self.plan = plan
        self.on_progress = progress_callback(on_progress)
        self.submit = submit  # chunks go to the flow's task runner (Dask, Ray)
        self.limits = list(limits)  # cross-process provider limits (tasks.limits)
        self.lock = lock  # the run folder's lock, taken before the flow starts
        self.stopped: FlowRunStopped | None = None  # its flow run was cancelled or deleted
        self.batch_options: dict[str, Any] = {}  # the batch engine's (hr_core.run.batch)
        self.submitted: BatchesSubmitted | None = None  # submit_only: batches submitted


_INVOCATION: InvocationVar[Invocation] = InvocationVar(__name__, "_INVOCATION")


def flow_parameters(plan: BenchmarkPlan, spec: str | None = None,
                    fresh: bool = False) -> dict[str, Any]:
    """The parameters a benchmark flow run of a Python call shows, its inputs as
    ``benchmark_flow`` takes them: spec path, name, runs, fresh, store, resume,
    max_error_rate. What the run decides (run id, reference hash, the arms'
    fingerprints) are its outputs: the flow run's name and its ``<name>-run``
    artifact (:func:`flows.labels.publish_run_facts`)."""
    return {
        "spec": spec, "name": plan.name, "runs": plan.runs, "fresh": fresh,
        "store": plan.store, "resume": plan.resume, "max_error_rate": plan.max_error_rate,
    }


CHUNKS_IN_FLIGHT = 2
"""Chunk task runs of one arm running at once in the flow. An arm's runs share one
semaphore (``concurrency``), so two chunks keep it busy; starting every chunk at once
(500 task runs for a million runs) held each task run's state until the end (a much
higher peak RSS at 1M runs) and sent the Prefect server a burst of task runs."""


async def _run_chunks(session: BenchmarkSession) -> None:
    """Run every chunk as a task, at most :data:`CHUNKS_IN_FLIGHT` per arm at a time."""
    slots = {arm: asyncio.Semaphore(CHUNKS_IN_FLIGHT) for arm in session.plan.arms}

    async def bounded(index: int, arm: str) -> int:
        async with slots[arm]:
            finished: int = await run_benchmark_chunk(session, index, arm)
            return finished

    for number, indexes in enumerate(session.rounds):  # one round without a stop rule
        await asyncio.gather(*(bounded(index, session.chunks[index].arm) for index in indexes))
        if session.halted() or session.end_round(number):
            break


async def _run(session: BenchmarkSession, on_progress: ProgressFn | None,
               submit: bool = False) -> Benchmark:
    loop = asyncio.get_running_loop()
    session.open()  # read the journal, plan the chunks (in the flow: one task run fewer)
    progress = ProgressPublisher(session.plan.name)
    created = asyncio.ensure_future(asyncio.gather(  # while chunks run
        progress.update(session.progress()),
        publish_run_facts(session.plan, session.store.run_dir)))
    watchers = [asyncio.ensure_future(session.watch(progress.update, PROGRESS_INTERVAL_S)),
                asyncio.ensure_future(session.journal.flush_every())]
    if on_progress is not None:
        watchers.append(asyncio.ensure_future(session.watch(
            lambda rows: [on_progress(*row) for row in rows], CALLBACK_INTERVAL_S)))
    if session.batch is not None:  # the batches' counts while hr waits: the artifact too
        session.batch.on_status = publishing(session.batch.on_status, progress)
    started = loop.time()

    async def one_pass() -> None:
        if session.unscored():
            await rescore_benchmark(session)
        await (run_chunks_submitted(session) if submit else _run_chunks(session))

    try:
        # passes of collect, submit, wait, serve when a model batches (hr_core.run.batch)
        work = one_pass() if session.batch is None else session.batch.run(one_pass)
        # a flow run cancelled or deleted from the API stops the chunks (flows._cancel)
        await run_watched(work, session.flow_run_id, run_client(), session.halt)
    except FlowRunStopped as exc:
        created.cancel()
        exc.kept = _kept(session)
        raise
    except BaseException as exc:
        created.cancel()
        if not isinstance(exc, Exception):  # a worker's SIGTERM (TerminationSignal), Ctrl-C
            with contextlib.suppress(Exception):  # the manifest says interrupted (resumable)
                _kept(session)
        raise
    finally:
        for watcher in watchers:
            watcher.cancel()
        session.journal.flush()
        await session.close_clients()  # before this loop ends (a later loop cannot)
    await session.settle()  # interrupted, or the store could not be written: stop here
    rows = session.progress(final=True)
    if on_progress is not None:
        for row in rows:
            on_progress(*row)
    session.engine_seconds = loop.time() - started
    await created
    final = asyncio.ensure_future(progress.update(rows))  # while the results are built
    try:
        bench: Benchmark = await write_benchmark(session)
    finally:
        await final
    return bench


@hr_flow(name="hr-benchmark", validate_parameters=False, persist_result=False)
async def benchmark_flow(
    spec: str | None = None,
    name: str | None = None,
    runs: int | None = None,
    fresh: bool = False,
    store: str | None = None,
    resume: bool = True,
    require_valid_judge: JudgePolicy | None = None,
    max_error_rate: float | None = None,
) -> Benchmark:
    """Run a benchmark as a Prefect flow.

    Args:
        spec: path to a YAML ``BenchmarkSpec`` (relative to the working directory).
        name, runs, store, require_valid_judge, max_error_rate: override the spec's.
        fresh: a new, time-stamped run id instead of the spec's.
        resume: continue the run from its journal (``False`` starts it over).

    The parameters are the inputs (a deployment's, the dashboard's "Custom run"); what
    the run decides is reported: the flow run is renamed ``<name>-<run id>`` and tagged,
    its ``<name>-run`` artifact gives the run id, folder, reference hash and each arm's
    fingerprint, and it returns the ``Benchmark``. :func:`hr_benchmark` starts it with
    its inputs as parameters and hands over the rest (callables, the plan).

    Ends Failed (:class:`~hr_core.analysis.health.ErrorRateExceeded`), after writing
    the results, when an arm's share of errors is above ``max_error_rate``.
    """
    invocation = _INVOCATION.get()  # set by run_plan, for this call only
    if invocation is None:
        if spec is None:
            raise SpecError("hr-benchmark needs a spec (a path to a YAML benchmark spec)")
        plan = plan_from_spec(spec, store=store, name=name, fresh=fresh, resume=resume,
                              require_valid_judge=require_valid_judge, runs=runs,
                              max_error_rate=max_error_rate)
        invocation = Invocation(plan, None)
        await label_flow_run(f"{plan.name}-{plan.run_id}", benchmark_tags(plan.name))
    return await _benchmark(invocation)


async def _benchmark(invocation: Invocation) -> Benchmark:
    """The flow's body: limits, the session, the run, the health check."""
    if invocation.limits:
        await ensure_provider_limits(invocation.limits)
        providers = [limit.provider for limit in invocation.limits]
        invocation.plan.arms = limit_arms(invocation.plan.arms, providers)
    flow_run_id = flow_run.get_id()
    session = BenchmarkSession(invocation.plan, lock=invocation.lock)
    session.flow_run_id = None if flow_run_id is None else str(flow_run_id)
    session.batch_options = invocation.batch_options
    try:
        with spec_import_path(invocation.plan.import_dir), _untagged_tasks():
            bench = await _run(session, invocation.on_progress, invocation.submit)
    except StoreWriteError as exc:  # an expected stop: a failed flow run, no traceback
        return Failed(message=f"StoreWriteError: {exc}", data=exc)  # type: ignore[return-value]
    except BatchesSubmitted as exc:  # submit_only: the flow run did what it was asked
        invocation.submitted = exc
        return Completed(message=str(exc))  # type: ignore[return-value]
    except FlowRunStopped as exc:  # cancelled: the flow run ends Cancelled, the call raises
        invocation.stopped = exc
        if not isinstance(exc, BenchmarkCancelled):  # deleted: no state to report (Abort)
            raise Abort(f"{type(exc).__name__}: {exc}") from None
        return Cancelled(message=f"{type(exc).__name__}: {exc}",  # type: ignore[return-value]
                         data=exc)
    finally:
        session.close()
    _check_health(bench, invocation.plan)
    halted = halted_benchmark(bench)
    if halted is not None:  # an endpoint down or out of quota: a partial run, not finished
        get_run_logger().error(visible(str(halted), newlines=False))
        return Failed(message=f"EndpointsHalted: {visible(str(halted), newlines=False)}",  # type: ignore[return-value]
                      data=halted)
    return bench


def publishing(shown: StatusFn | None, progress: ProgressPublisher) -> StatusFn:
    """An ``on_status`` that also shows every polled batch's counts as the flow run's
    progress artifact (besides ``shown``, the caller's: the terminal's lines)."""
    statuses: dict[str, tuple[str, BatchStatus]] = {}
    sending: set[asyncio.Future[None]] = set()

    def publish(label: str, status: BatchStatus) -> None:
        if shown is not None:
            shown(label, status)
        statuses[status.batch_id] = (label, status)
        update = asyncio.ensure_future(progress.batches(list(statuses.values())))
        sending.add(update)  # kept until sent (a task only weakly referenced may vanish)
        update.add_done_callback(sending.discard)

    return publish


def _kept(session: BenchmarkSession) -> str:
    """Flush the journal and mark the manifest ``interrupted``; what was kept (one line),
    and the batches that keep running at the provider with how to collect or cancel them."""
    kept = session.interrupt().split("; run the same benchmark again")[0]
    note = None if session.batch is None else session.batch.interrupt_note()
    return kept if note is None else f"{kept}; {note}"


def _untagged_tasks() -> TagsContext:
    """The flow's task runs (chunks, write-results) carry no tags; the flow run keeps its own.

    Prefect acquires a tag concurrency slot for every tagged task run (an API call once its
    5-second "no limits" cache has expired, seconds of idle wall time in one
    ``hr_benchmark`` call in three: issue 25); hr's limits are its own
    (:mod:`tasks.limits`), so an untagged task run skips that wait.
    """
    return TagsContext(current_tags=set())


def _check_health(bench: Benchmark, plan: BenchmarkPlan) -> None:
    """Log each arm's errors and budget stops as WARNING lines (the dashboard's Logs tab);
    fail the flow run when an arm erred above ``max_error_rate`` (results are written)."""
    health = bench.health(plan.max_error_rate, arms=list(plan.arms))  # computed once
    logger = get_run_logger()
    for line in health.warnings():
        logger.warning(line, extra={"hr_digest": True})
    if health.breaches:
        raise ErrorRateExceeded(health.failure_message(plan.name), benchmark=bench,
                                health=health) from None


async def call_flow(named: Any, invocation: Invocation, parameters: dict[str, Any],
                wait: bool = False) -> Benchmark:
    """Lock the run folder (``wait``: until the run holding it ends), then run the flow with
    API clients that share one TLS context (``flows.clients``)."""
    plan = invocation.plan
    lock = invocation.lock = RunStore(plan.store, plan.name, plan.run_id).lock
    await asyncio.to_thread(lock.acquire, wait, _say_waiting)
    token = _INVOCATION.set(invocation)
    try:
        with spec_import_path(invocation.plan.import_dir):
            async with prefect_clients():
                with tags(*benchmark_tags(invocation.plan.name)):
                    bench: Benchmark = await named(**parameters)
    except (Exception, Abort) as exc:
        stopped = invocation.stopped  # a deleted flow run (Abort), or a parent's
        if stopped is None or exc is stopped:
            raise
        raise stopped from None
    finally:
        _INVOCATION.reset(token)
        lock.release()
    if invocation.submitted is not None:  # submit_only: the batches run at the provider
        raise invocation.submitted
    return bench


def _say_waiting(message: str) -> None:
    print(f"hr: {message}", file=sys.stderr, flush=True)
