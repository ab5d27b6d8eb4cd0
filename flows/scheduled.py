"""The ``hr-scheduled-benchmark`` flow: a fresh run of a spec, then the regression check.

Deployed nightly (``deployments/prefect.yaml``): each scheduled run gets a new
run id, compares itself with the previous completed run of the same spec name in
its store (whatever changed: its log and artifact say what did), publishes a
regression artifact and emits ``hr.regression.detected`` per arm
that got worse, so that a Prefect automation can notify. The artifact ends with the
``hr diff`` against that run (``hr_core.analysis.diff``, computed once: the regression check is
its decisions plus a policy): the fingerprint parts that changed and
the top flipped items per arm; the whole diff page is written beside the new run
(``diff-<previous run id>.html``) and the artifact names its path.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from prefect import get_run_logger
from prefect.blocks.system import Secret
from prefect.runtime import flow_run
from prefect.states import Cancelled

from flows.benchmark import plan_from_spec
from flows.benchmark_call import run_plan
from flows.hrflow import hr_flow
from flows.labels import benchmark_tags, label_flow_run
from flows.runners import TaskRunnerKind, make_task_runner
from hr_core.analysis.benchmark import Benchmark
from hr_core.analysis.health import ErrorRateExceeded
from hr_core.analysis.verdict import sequential_note
from hr_core.core.errors import BenchmarkCancelled, HrError
from hr_core.core.safe import visible
from hr_core.models.ratelimit.reach import halted_benchmark
from hr_core.store.folder import flow_run_run_id
from tasks.limits import ProviderLimit
from tasks.regression import check_regression, publish_regression

__all__ = ["RegressionDetected", "hr_scheduled_benchmark"]


class RegressionDetected(HrError, RuntimeError):
    """A scheduled run found an arm significantly worse than in the previous run."""


async def _export_secrets(secrets: Mapping[str, str] | None) -> None:
    """Put Prefect Secret blocks into this process's environment (``{ENV_VAR: block}``)."""
    if not secrets:
        return

    for variable, block in secrets.items():
        secret: Any = await Secret.aload(block)
        os.environ[variable] = str(secret.get())


@hr_flow(name="hr-scheduled-benchmark", persist_result=False)
async def hr_scheduled_benchmark(
    spec: str,
    store: str | None = None,
    threshold: float = 0.05,
    fail_on_regression: bool = False,
    task_runner: TaskRunnerKind = "threads",
    address: str | None = None,
    n_workers: int | None = None,
    secrets: dict[str, str] | None = None,
    provider_limits: list[ProviderLimit] | None = None,
) -> dict[str, Any]:
    """Run a benchmark spec under a fresh run id, then check it for regressions.

    Args:
        spec: path to a YAML ``BenchmarkSpec`` (relative to the deployment's
            working directory).
        store: results folder or fsspec URL (default: the spec's ``store``).
        threshold: the smallest accuracy drop (0..1) that counts as a regression,
            in addition to ``hr diff``'s decision ``worse`` (the paired difference's
            interval below zero; the stop rule's confidence sequence for a run with one).
        fail_on_regression: make the flow run fail when an arm regressed.
        task_runner: ``threads`` (default), ``dask`` or ``ray``.
        address: the Dask scheduler or Ray address; none starts a local cluster.
        n_workers: workers of a local Dask cluster.
        secrets: environment variables to fill from Prefect Secret blocks, e.g.
            ``{"OPENAI_API_KEY": "openai-api-key"}``; the values are never logged
            nor stored.
        provider_limits: global concurrency / rate limits per provider, shared
            with every other deployment calling it, e.g.
            ``[{"provider": "openai", "concurrency": 8, "per_second": 5}]``.

    Returns:
        The run id and folder, the previous run compared with, the arms that
        regressed, the diff page's path and what changed since the previous run, by
        fingerprint part (both ``None`` for a first run).

    Raises:
        EndpointsHalted: a model endpoint was halted (unreachable, quota exhausted): the
            partial run is not checked for regressions; the flow run fails saying so.

    Example (not run as a doctest: it needs a server, a model or a run)::

            import asyncio
            asyncio.run(hr_scheduled_benchmark("nightly.yaml", store="s3://b/hr"))
        {'run_id': '20261130T020000Z-1a2b3c', ..., 'regressions': [], 'diff_page': ..., ...}
    """
    logger = get_run_logger()
    await _export_secrets(secrets)
    runner = None if task_runner == "threads" else make_task_runner(
        task_runner, address=address, n_workers=n_workers)
    # a retry or re-run of this flow run resumes its own run (same flow run id, same run
    # id); a new scheduled run has a new flow run id and starts fresh


    run_id = None
    if flow_run.id:
        scheduled = flow_run.scheduled_start_time
        run_id = flow_run_run_id(str(flow_run.id), scheduled)
    plan = plan_from_spec(spec, store=store, fresh=True, run_id=run_id)
    # named and tagged like an ad-hoc run, not with the scheduler's random name; the run's
    # facts (run id, reference hash, arms) are its hr-benchmark subflow run's artifact
    await label_flow_run(f"{plan.name}-{plan.run_id}", benchmark_tags(plan.name))
    failure: ErrorRateExceeded | None = None
    try:
        bench: Benchmark = await run_plan(plan, task_runner=runner,
                                          provider_limits=provider_limits or (), spec=spec,
                                          fresh=True)
    except ErrorRateExceeded as exc:  # results written: still check regressions, then fail
        if not isinstance(exc.benchmark, Benchmark):
            raise
        bench, failure = exc.benchmark, exc
    except BenchmarkCancelled as exc:  # this flow run or its benchmark's: ends Cancelled
        return Cancelled(message=f"BenchmarkCancelled: {exc}",  # type: ignore[return-value]
                         data=exc)
    name = str(bench.manifest.name or "benchmark")
    halted = halted_benchmark(bench)
    if halted is not None:  # a partial run (an endpoint down or out of quota): no check
        raise halted
    run_dir = str(bench.run_dir)
    report = check_regression(run_dir, threshold=threshold)  # hr diff once, plus a policy
    diff_markdown = page = changed = None
    if report is not None and report.diff is not None:  # which items broke, what changed
        page = report.diff_page
        diff_markdown, changed = report.diff.to_markdown(page=page), report.diff.what_changed()
    regressed: list[str] = await publish_regression(report, name=name, spec_path=spec,
                                                    note=sequential_note(bench.manifest),
                                                    diff=diff_markdown, changed=changed)
    previous = None if report is None else report.previous_run_id
    logger.info("benchmark %s run %s compared with %s%s: %s", name, bench.run_id,
                previous or "nothing (first run)",
                f" (changed since: {visible(changed, newlines=False)})" if changed else "",
                f"regression in {', '.join(regressed)}" if regressed else "no regression")
    if failure is not None:
        raise failure
    if regressed and fail_on_regression:
        raise RegressionDetected(
            f"benchmark {name!r} run {bench.run_id}: {', '.join(regressed)} regressed against "
            f"run {previous} (see the {name} regression artifact)")
    return {"name": name, "run_id": bench.run_id, "run_dir": run_dir,
            "previous_run_id": previous, "regressions": regressed, "diff_page": page,
            "changed": changed}
