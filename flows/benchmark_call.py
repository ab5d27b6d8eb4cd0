"""Calling a benchmark from Python: ``hr_benchmark`` (always returns the ``Benchmark``),
``hr_benchmark_async`` (a coroutine) and ``run_plan`` (the nightly's call), over the
``hr-benchmark`` flow of :mod:`flows.benchmark`."""

from __future__ import annotations

import os
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any

from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from flows._spec_plan import plan_from_spec
from flows._sync import run_to_end
from flows.benchmark import Invocation, benchmark_flow, call_flow, flow_parameters
from flows.clients import with_run_name
from hr_core.analysis.benchmark import Benchmark
from hr_core.core.checks import callable_arg, path_arg
from hr_core.core.errors import (
    HrTypeError,
    SpecError,
)
from hr_core.run.batch.adapters import batched
from hr_core.run.budget import Budget
from hr_core.run.session import (
    BenchmarkPlan,
    JudgePolicy,
    ProgressFn,
    apply_judge_policy,
    plan_benchmark,
)
from hr_core.run.spec import BenchmarkSpec
from hr_core.scoring.scorer import Scorer
from hr_core.stats.slices import check_slice_fields
from tasks.limits import ProviderLimit

__all__ = ["hr_benchmark", "hr_benchmark_async", "run_plan"]



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
    batch: Mapping[str, Any] | None = None,
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
        batch: options of the batch engine, for arms and judges with ``batch: true``
            (:mod:`hr_core.run.batch`): ``{"submit_only": True}`` submits the
            pending requests as batches and raises
            :class:`~hr_core.run.batch.pending.BatchesSubmitted` (a later call
            collects them), ``poll_s`` (seconds between polls, default 30),
            ``on_status`` (called with a model's label and each
            :class:`~hr_core.models.batch_api.BatchStatus` polled). Not a Prefect
            parameter.

    Raises:
        ErrorRateExceeded: an arm erred above ``max_error_rate`` (see above).
        EndpointsHalted: a model endpoint was halted (unreachable, quota exhausted): the
            results so far are written (its ``benchmark``), the flow run ends Failed with
            the one line naming the endpoint and the runs not made; the same call again
            makes them once the endpoint answers.

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
        slices=slices, batch=batch))


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
    batch: Mapping[str, Any] | None = None,
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
                    spec=_spec_path(arms), fresh=fresh, wait=wait, batch=batch)


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
             fresh: bool = False, wait: bool = False, batch: Mapping[str, Any] | None = None
             ) -> Coroutine[Any, Any, Benchmark]:
    """The ``hr-benchmark`` flow run of a resolved plan (named ``<name>-<run id>``, tagged
    ``hr`` and the name, with its real parameters), to await; see :func:`hr_benchmark`."""
    named = with_run_name(benchmark_flow, f"{plan.name}-{plan.run_id}", task_runner)
    submit = task_runner is not None and not isinstance(task_runner, ThreadPoolTaskRunner)
    if submit and plan.stop is not None:
        raise SpecError("stop (sequential mode) runs its batches in the flow's own process; "
                        "run it without a Dask or Ray task runner")
    if submit and any(batched(plan.arms, plan.scorer)):
        raise SpecError("batch: true runs its batches in the flow's own process; run it "
                        "without a Dask or Ray task runner")
    invocation = Invocation(plan, on_progress, submit, provider_limits)
    invocation.batch_options = dict(batch or {})
    return call_flow(named, invocation, flow_parameters(plan, spec, fresh), wait)
