"""Task runners for the benchmark flow: threads (default), a Dask cluster, or Ray.

The benchmark submits O(arms x chunks) tasks (SPEC section 11), so what a
``DaskTaskRunner`` adds per submitted task stays small next to a chunk's work.
"""

from __future__ import annotations

import importlib.util
from typing import Any, Literal, get_args

from prefect.task_runners import TaskRunner, ThreadPoolTaskRunner

from hr_core.core.errors import HrError

__all__ = ["TASK_RUNNER_KINDS", "TaskRunnerError", "TaskRunnerKind", "make_task_runner"]

TaskRunnerKind = Literal["threads", "dask", "ray"]
"""``threads``: one process, a thread pool (default); ``dask``: prefect-dask on an
existing cluster (``address``) or a local one; ``ray``: prefect-ray (optional extra)."""

TASK_RUNNER_KINDS: tuple[str, ...] = get_args(TaskRunnerKind)


class TaskRunnerError(HrError, ValueError):
    """A task runner was asked for that cannot be built (unknown kind, missing extra)."""


def _require(module: str, extra: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise TaskRunnerError(
            f"task runner {extra!r} needs the {module!r} package: "
            f"install it with `pip install 'hr[{extra}]'`"
        )


def make_task_runner(
    kind: str = "threads",
    address: str | None = None,
    n_workers: int | None = None,
    *,
    processes: bool = True,
) -> TaskRunner[Any]:
    """Build the task runner for a benchmark flow.

    Args:
        kind: ``"threads"``, ``"dask"`` or ``"ray"``.
        address: for ``dask``, the scheduler address of an existing cluster
            (``"tcp://10.0.0.5:8786"``); for ``ray``, the Ray address
            (``"ray://head:10001"``). ``None`` starts a local cluster.
        n_workers: threads for ``threads``; workers of a local Dask cluster
            (default 2). Ignored with ``address``.
        processes: local Dask cluster only: worker processes (``True``) or
            threads in this process (``False``, faster to start).

    Returns:
        A Prefect task runner, for ``flow.with_options(task_runner=...)`` or the
        benchmark's ``task_runner`` option.

    Raises:
        TaskRunnerError: an unknown kind, or the extra for it is not installed.

    Example:
        >>> type(make_task_runner("threads", n_workers=4)).__name__
        'ThreadPoolTaskRunner'
        >>> runner = make_task_runner("dask", address="tcp://127.0.0.1:8786")
        >>> type(runner).__name__
        'DaskTaskRunner'
    """
    if kind == "threads":
        if address is not None:
            raise TaskRunnerError("task runner 'threads' takes no address (use kind='dask')")
        return ThreadPoolTaskRunner(max_workers=n_workers)
    if kind == "dask":
        _require("prefect_dask", "dask")
        from prefect_dask import DaskTaskRunner  # lazy: an optional extra (hr[dask])

        if address is not None:
            return DaskTaskRunner(address=address)
        return DaskTaskRunner(
            cluster_class="distributed.LocalCluster",
            cluster_kwargs={
                "n_workers": n_workers or 2,
                "threads_per_worker": 1 if processes else 2,
                "processes": processes,
                "dashboard_address": ":0",
            },
        )
    if kind == "ray":
        _require("prefect_ray", "ray")
        from prefect_ray import RayTaskRunner  # lazy: an optional extra (hr[ray])

        return RayTaskRunner(address=address) if address else RayTaskRunner()
    raise TaskRunnerError(
        f"unknown task runner {kind!r}: use one of {', '.join(TASK_RUNNER_KINDS)}"
    )
