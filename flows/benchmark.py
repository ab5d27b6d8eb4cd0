"""The ``hr-benchmark`` flow: load reference -> run arms in chunks -> score -> write -> report."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any

from prefect import get_run_logger, tags
from prefect.context import TagsContext
from prefect.exceptions import Abort
from prefect.runtime import flow_run
from prefect.states import Cancelled, Failed
from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from flows._cancel import run_watched
from flows._invocation import InvocationVar
from flows._spec_plan import plan_from_spec
from flows._sync import run_to_end
from flows.clients import prefect_clients, with_run_name
from flows.hrflow import hr_flow
from flows.labels import benchmark_tags, label_flow_run, publish_run_facts
from hr_core.analysis.benchmark import Benchmark
from hr_core.analysis.health import ErrorRateExceeded
from hr_core.core.checks import callable_arg, path_arg
from hr_core.core.errors import (
    BenchmarkCancelled,
    FlowRunStopped,
    HrTypeError,
    SpecError,
    StoreWriteError,
)
from hr_core.run.budget import Budget
from hr_core.run.session import (
    BenchmarkPlan,
    BenchmarkSession,
    JudgePolicy,
    ProgressFn,
    apply_judge_policy,
    plan_benchmark,
    progress_callback,
)
from hr_core.run.spec import BenchmarkSpec, spec_import_path
from hr_core.scoring.scorer import Scorer
from hr_core.stats.slices import check_slice_fields
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

__all__ = ["benchmark_flow", "flow_parameters", "hr_benchmark", "hr_benchmark_async",
           "plan_from_spec", "run_plan"]

PROGRESS_INTERVAL_S = 1.0
CALLBACK_INTERVAL_S = 0.25


class _Invocation:
    """What one flow run needs that is not a Prefect parameter (callables, the resolved plan).

    The flow's body takes it as its argument (:func:`_benchmark`). A Python call
    (:func:`run_plan`) hands it to the flow run through a context variable, the one
    way into a flow run for what cannot be a parameter; the flow run's parameters are
    the call's inputs (:func:`flow_parameters`).
    """

    __slots__ = ("limits", "lock", "on_progress", "plan", "stopped", "submit")

    def __init__(self, plan: BenchmarkPlan, on_progress: ProgressFn | None,
                 submit: bool = False, limits: Sequence[ProviderLimit] = (),
                 lock: RunLock | None = None) -> None:
        self.plan = plan
        self.on_progress = progress_callback(on_progress)
        self.submit = submit  # chunks go to the flow's task runner (Dask, Ray)
        self.limits = list(limits)  # cross-process provider limits (tasks.limits)
        self.lock = lock  # the run folder's lock, taken before the flow starts
        self.stopped: FlowRunStopped | None = None  # its flow run was cancelled or deleted


_INVOCATION: InvocationVar[_Invocation] = InvocationVar(__name__, "_INVOCATION")


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
    started = loop.time()
    try:
        if session.unscored():
            await rescore_benchmark(session)
        chunks = run_chunks_submitted(session) if submit else _run_chunks(session)
        # a flow run cancelled or deleted from the API stops the chunks (flows._cancel)
        await run_watched(chunks, session.flow_run_id, run_client(), session.halt)
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
        invocation = _Invocation(plan, None)
        await label_flow_run(f"{plan.name}-{plan.run_id}", benchmark_tags(plan.name))
    return await _benchmark(invocation)


async def _benchmark(invocation: _Invocation) -> Benchmark:
    """The flow's body: limits, the session, the run, the health check."""
    if invocation.limits:
        await ensure_provider_limits(invocation.limits)
        providers = [limit.provider for limit in invocation.limits]
        invocation.plan.arms = limit_arms(invocation.plan.arms, providers)
    flow_run_id = flow_run.get_id()
    session = BenchmarkSession(invocation.plan, lock=invocation.lock)
    session.flow_run_id = None if flow_run_id is None else str(flow_run_id)
    try:
        with spec_import_path(invocation.plan.import_dir), _untagged_tasks():
            bench = await _run(session, invocation.on_progress, invocation.submit)
    except StoreWriteError as exc:  # an expected stop: a failed flow run, no traceback
        return Failed(message=f"StoreWriteError: {exc}", data=exc)  # type: ignore[return-value]
    except FlowRunStopped as exc:  # cancelled: the flow run ends Cancelled, the call raises
        invocation.stopped = exc
        if not isinstance(exc, BenchmarkCancelled):  # deleted: no state to report (Abort)
            raise Abort(f"{type(exc).__name__}: {exc}") from None
        return Cancelled(message=f"{type(exc).__name__}: {exc}",  # type: ignore[return-value]
                         data=exc)
    finally:
        session.close()
    _check_health(bench, invocation.plan)
    return bench


def _kept(session: BenchmarkSession) -> str:
    """Flush the journal and mark the manifest ``interrupted``; what was kept (one line)."""
    return session.interrupt().split("; run the same benchmark again")[0]


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


async def _call(named: Any, invocation: _Invocation, parameters: dict[str, Any],
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
    return bench


def _say_waiting(message: str) -> None:
    print(f"hr: {message}", file=sys.stderr, flush=True)


def _is_spec(value: Any) -> bool:
    if isinstance(value, BenchmarkSpec):
        return True
    return isinstance(value, str | os.PathLike) and str(value).endswith((".yaml", ".yml"))


def hr_benchmark(
    arms: Mapping[str, Any] | BenchmarkSpec | str | os.PathLike[str],
    reference: Any = None,
    scorer: Scorer | None = None,
    runs: int | None = None,
    *,
    budget: Budget | Mapping[str, Any] | None = None,
    concurrency: int | None = None,
    store: str | os.PathLike[str] | None = None,
    name: str | None = None,
    resume: bool = True,
    fresh: bool = False,
    chunk_size: int | None = None,
    timeout_s: float | None = None,
    wait: bool = False,
    shared_cache: bool | None = None,
    require_valid_judge: JudgePolicy = "warn",
    judge_store: str | os.PathLike[str] = "judges",
    on_progress: ProgressFn | None = None,
    task_runner: TaskRunner[Any] | None = None,
    provider_limits: Sequence[ProviderLimit] = (),
    max_error_rate: float | None = None,
    stop: Mapping[str, Any] | bool | None = None,
    slices: Sequence[str] | None = None,
) -> Benchmark:
    """Run every arm on every item ``runs`` times, score, and store the results.

    Starts the ``hr-benchmark`` Prefect flow (so the run shows in the dashboard) and
    returns the finished :class:`~hr_core.Benchmark`, also when called inside a running
    event loop (a Jupyter cell): the work then runs in a worker thread while the caller
    waits. Async code that must not block its loop awaits :func:`hr_benchmark_async`.

    Args:
        arms: name -> callable (sync or async, given the payload), import path
            ``"pkg.module:function"`` or LLM arm; or a ``BenchmarkSpec`` or a path
            to its YAML: the reference comes from the spec (giving one too is an
            ``HrTypeError``), and ``scorer``, ``runs``, ``budget``, ``concurrency``,
            ``store``, ``chunk_size``, ``timeout_s`` and ``shared_cache``, when given,
            override the spec's (recorded in the manifest's ``overrides``).
        reference: a ``Reference`` or anything ``hr_reference`` reads.
        scorer: the scorer (default ``hr_scorer_exact()``).
        runs: runs per (arm, item) (default 1).
        budget: a ``Budget`` (or its fields as a mapping); runs not done are
            ``budget_stop`` rows and a resume with a larger budget runs them.
        concurrency: runs in flight per arm, sync arms included (default 16).
        store: a folder or fsspec URL (default ``"results"``); results go to
            ``<store>/<name>/<run id>/``.
        name: the benchmark's name (default: the spec's name, else ``"benchmark"``).
        resume: continue the run of the same spec from its journal (the default);
            ``False`` starts it over.
        fresh: a new run id (time-stamped) instead of the spec's, e.g. for schedules:
            it calls every arm and model again (no stored output, no cached reply).
        chunk_size: runs per Prefect task (default 2000).
        timeout_s: seconds each arm call may take (an arm's own wins:
            ``{"arm": fn, "timeout_s": s}`` or an LLM arm's field): a call past it is
            an ``error`` run ("timed out after N s") and the benchmark goes on; a sync
            arm's thread is abandoned (a daemon: it never keeps the process alive).
        wait: when another process is running the same benchmark into the same
            store (its run folder is locked), wait for it to finish instead of
            raising ``RunLockedError`` naming it; then resume.
        require_valid_judge: for a judge scorer without a valid validation record:
            ``"warn"``, ``"refuse"`` (raise ``SpecError`` naming differing fields) or
            ``"ignore"``. The status goes into the manifest.
        judge_store: the folder of judge validation records (``hr_judge_validate``).
        shared_cache: LLM arms' replies are cached per run (a resume replays them, a
            fresh run calls the models); ``True`` shares the store's
            ``responses.sqlite`` between runs instead (the manifest says so).
        on_progress: called about four times a second while running, and once at
            the end, for each arm as ``on_progress(arm, done, total, failures,
            errors)``: runs done (journaled earlier ones included) of ``total``,
            ``failures`` of them with a failure kind other than ``error`` (wrong,
            refusal, parse failure, ...) and ``errors`` of them errors (the arm
            raised or reported ``ok=False``); a callback taking four arguments gets
            the first four. The last call counts runs a budget stopped as done, not
            as failures, so every arm reaches its total. Not a Prefect parameter.
        task_runner: the flow's task runner (``flows.runners.make_task_runner``):
            with Dask or Ray each chunk is submitted to it and runs there; the
            default (``None`` or threads) runs the chunks in the flow's event loop.
        provider_limits: Prefect global concurrency / rate limits per provider,
            shared by every process calling it (``tasks.limits``); created if
            missing, then every LLM arm call on that provider holds a slot.
        max_error_rate: the share of an arm's runs made (0..1) that may be errors
            (default: the spec's, else 0.5). Above it the results are still
            written, then the flow run ends Failed and
            :class:`~hr_core.analysis.health.ErrorRateExceeded` is raised, naming the
            arms and their top error (its ``benchmark`` holds the results); ``1``
            never fails.
        stop: sequential mode (``{"when": "clear", "margin": 0.02, "level": 0.95,
            "min_items": 30, "batch": 20, "seed": 0}``, or ``True`` for these): items
            in a random order fixed by ``seed``, every arm on the same batch, and the
            run stops once an anytime-valid confidence sequence decides the leader's
            comparison with every other arm (``hr_core.run.stopping``). The runs
            not made are no rows (not failures); a run without ``stop`` makes them.
        slices: item fields (payload keys) to give accuracy by, per value
            (:mod:`hr_core.stats.slices`; default: the spec's ``slices``); not part of the run
            id. An item without the field is in the slice ``(missing)``.

    Raises:
        ErrorRateExceeded: an arm erred above ``max_error_rate`` (see above).

    Example (not run as a doctest: it needs a server, a model or a run)::

            bench = hr_benchmark({"upper": str.upper},
                                 [{"id": "q1", "label": "PARIS", "question": "paris"}])
            bench.summary()[["arm", "accuracy"]]
    """
    return run_to_end(hr_benchmark_async(
        arms, reference, scorer, runs, budget=budget, concurrency=concurrency, store=store,
        name=name, resume=resume, fresh=fresh, chunk_size=chunk_size, timeout_s=timeout_s,
        wait=wait, shared_cache=shared_cache, require_valid_judge=require_valid_judge,
        judge_store=judge_store, on_progress=on_progress, task_runner=task_runner,
        provider_limits=provider_limits, max_error_rate=max_error_rate, stop=stop,
        slices=slices))


def hr_benchmark_async(
    arms: Mapping[str, Any] | BenchmarkSpec | str | os.PathLike[str],
    reference: Any = None,
    scorer: Scorer | None = None,
    runs: int | None = None,
    *,
    budget: Budget | Mapping[str, Any] | None = None,
    concurrency: int | None = None,
    store: str | os.PathLike[str] | None = None,
    name: str | None = None,
    resume: bool = True,
    fresh: bool = False,
    chunk_size: int | None = None,
    timeout_s: float | None = None,
    wait: bool = False,
    shared_cache: bool | None = None,
    require_valid_judge: JudgePolicy = "warn",
    judge_store: str | os.PathLike[str] = "judges",
    on_progress: ProgressFn | None = None,
    task_runner: TaskRunner[Any] | None = None,
    provider_limits: Sequence[ProviderLimit] = (),
    max_error_rate: float | None = None,
    stop: Mapping[str, Any] | bool | None = None,
    slices: Sequence[str] | None = None,
) -> Coroutine[Any, Any, Benchmark]:
    """:func:`hr_benchmark` for async code: ``bench = await hr_benchmark_async(...)``.

    The arguments are checked and the run planned at the call (bad ones raise there);
    the coroutine returned runs the flow in the awaiting event loop and gives the
    :class:`~hr_core.Benchmark`. Arguments and errors are :func:`hr_benchmark`'s.
    """
    if store is not None:
        store = path_arg("hr_benchmark", "store", store)
    judge_store = path_arg("hr_benchmark", "judge_store", judge_store)
    callable_arg("hr_benchmark", "on_progress", on_progress, "(arm, done, total, failures, errors)")
    if task_runner is not None and not isinstance(task_runner, TaskRunner):
        raise HrTypeError(f"hr_benchmark: task_runner must be a Prefect task runner "
                          f"(flows.runners.make_task_runner('dask')), not {task_runner!r}")
    if _is_spec(arms):
        if reference is not None:
            raise HrTypeError("hr_benchmark: a benchmark spec names its own reference set; "
                              "pass the spec alone (or arms and a reference without a spec)")
        overrides = {k: v for k, v in (
            ("scorer", scorer), ("runs", runs), ("budget", budget), ("concurrency", concurrency),
            ("chunk_size", chunk_size), ("timeout_s", timeout_s),
            ("shared_cache", shared_cache), ("stop", stop)) if v is not None}
        plan = plan_from_spec(arms, store=store, name=name, fresh=fresh,  # type: ignore[arg-type]
                              resume=resume, require_valid_judge=require_valid_judge,
                              judge_store=judge_store, overrides=overrides)
    else:
        if reference is None:
            raise HrTypeError("hr_benchmark needs a reference set (or a BenchmarkSpec as arms)")
        plan = plan_benchmark(
            arms, reference, scorer, 1 if runs is None else runs, budget=budget,  # type: ignore[arg-type]
            concurrency=16 if concurrency is None else concurrency,
            store="results" if store is None else store, name=name, resume=resume,
            fresh=fresh, chunk_size=chunk_size, timeout_s=timeout_s,
            shared_cache=bool(shared_cache), stop=stop, slices=slices,
        )
        apply_judge_policy(plan, require_valid_judge, judge_store)
    if max_error_rate is not None:
        plan.max_error_rate = _rate(max_error_rate)
    if slices is not None:  # a spec's own, replaced (not part of the run id)
        plan.slices = check_slice_fields(slices, plan.reference)
    return run_plan(plan, on_progress=on_progress, task_runner=task_runner,
                    provider_limits=provider_limits,
                    spec=_spec_path(arms), fresh=fresh, wait=wait)


def _spec_path(arms: Any) -> str | None:
    """The spec file a run came from, as an absolute path (for the flow run's parameters)."""
    source = getattr(arms, "source", None) if isinstance(arms, BenchmarkSpec) else (
        arms if _is_spec(arms) else None)
    return None if source is None else os.path.abspath(source)


def _rate(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise SpecError(f"max_error_rate must be a number from 0 to 1 (the share of an arm's "
                        f"runs that may be errors), not {value!r}")
    return float(value)


def run_plan(plan: BenchmarkPlan, *, on_progress: ProgressFn | None = None,
             task_runner: TaskRunner[Any] | None = None,
             provider_limits: Sequence[ProviderLimit] = (), spec: str | None = None,
             fresh: bool = False, wait: bool = False) -> Coroutine[Any, Any, Benchmark]:
    """The ``hr-benchmark`` flow run of a resolved plan (named ``<name>-<run id>``, tagged
    ``hr`` and the name, with its real parameters), to await; see :func:`hr_benchmark`."""
    named = with_run_name(benchmark_flow, f"{plan.name}-{plan.run_id}", task_runner)
    submit = task_runner is not None and not isinstance(task_runner, ThreadPoolTaskRunner)
    if submit and plan.stop is not None:
        raise SpecError("stop (sequential mode) runs its batches in the flow's own process; "
                        "run it without a Dask or Ray task runner")
    return _call(named, _Invocation(plan, on_progress, submit, provider_limits),
                 flow_parameters(plan, spec, fresh), wait)
