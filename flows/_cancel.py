"""A benchmark whose flow run is cancelled or deleted from the Prefect API stops in seconds.

Prefect acts on a flow run's Cancelling state only in its runners and workers (they
signal the flow run's process); a flow run called in-process (``hr run``,
``hr_benchmark`` from Python, the nightly flow calling its ``hr-benchmark`` subflow)
never sees it and runs to its end. So while a benchmark's chunks run,
:func:`run_watched` looks at its flow run and the flow runs above it (the nightly
parent) every :data:`POLL_S` seconds, one API call a look (the runs by id). When one of
them is Cancelling or Cancelled, or is gone (deleted), the benchmark stops: no new
call starts, the calls in flight are abandoned (``BenchmarkSession.halt``: a sync
arm's thread, a daemon, is left to finish on its own) and :class:`BenchmarkCancelled` or
:class:`FlowRunDeleted` is raised. The flow (``flows.benchmark``) then flushes the
journal, marks the manifest ``interrupted`` and ends Cancelled; a rerun resumes.

A look that fails (the API busy or unreachable) is not a verdict: the next one is
made as usual (a lost API is ``hr_cli.api_watch``'s to say).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from uuid import UUID

from prefect.client.orchestration import PrefectClient
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
from prefect.client.schemas.objects import FlowRun, StateType
from prefect.exceptions import ObjectNotFound

from hr_core.core.errors import BenchmarkCancelled, FlowRunDeleted, FlowRunStopped
from hr_core.core.safe import visible

__all__ = ["POLL_S", "run_watched", "was_deleted"]

T = TypeVar("T")

POLL_S = 1.5
"""Seconds between two looks at the watched flow runs."""

_UNWIND_S = 5.0
"""Seconds the halted chunks get to end (their task runs report their end) before their
task is cancelled."""

_DEPTH = 8
"""Flow runs above the benchmark's that are watched at most (the nightly: one)."""

_STOPPING = (StateType.CANCELLING, StateType.CANCELLED)

_log = logging.getLogger(__name__)

_DELETED: set[str] = set()
"""The flow runs this process found deleted (:func:`was_deleted`)."""


def was_deleted(flow_run_id: object) -> bool:
    """Whether a watch found the flow run ``flow_run_id`` deleted from the API (what
    Prefect logs about it afterwards, ``hr run`` keeps off the terminal: hr says it)."""
    return str(flow_run_id) in _DELETED


def _consume(task: asyncio.Future[Any]) -> None:
    """Retrieve an abandoned task's outcome (no "exception was never retrieved" noise)."""
    if not task.cancelled():
        task.exception()


def _deleted(flow_run_id: UUID, own: UUID) -> FlowRunDeleted:
    _DELETED.update((str(flow_run_id), str(own)))
    which = "" if flow_run_id == own else f", the parent of this benchmark's flow run {own},"
    return FlowRunDeleted(f"the flow run {flow_run_id}{which} was deleted from the Prefect API")


def _cancelled(run: FlowRun, own: UUID) -> BenchmarkCancelled:
    which = "" if run.id == own else f", the parent of this benchmark's flow run {own},"
    name = visible(run.name, newlines=False)
    return BenchmarkCancelled(
        f"the flow run {name!r} ({run.id}){which} was cancelled from the Prefect API (the "
        "dashboard's Cancel or `prefect flow-run cancel`)")


async def _chain(client: PrefectClient, own: UUID) -> list[UUID]:
    """``own`` and the flow runs above it (a subflow's parent, its parent, ...)."""
    ids = [own]
    run = await client.read_flow_run(own)
    while run.parent_task_run_id is not None and len(ids) <= _DEPTH:
        parent = (await client.read_task_run(run.parent_task_run_id)).flow_run_id
        if parent is None or parent in ids:
            break
        ids.append(parent)
        run = await client.read_flow_run(parent)
    return ids


async def _look(client: PrefectClient, ids: list[UUID]) -> FlowRunStopped | None:
    """What stops the benchmark, if anything: a watched flow run gone or cancelling."""
    runs = await client.read_flow_runs(
        flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids)), limit=len(ids))
    found = {run.id: run for run in runs}
    for flow_run_id in ids:
        run = found.get(flow_run_id)
        if run is None:
            return _deleted(flow_run_id, ids[0])
        if run.state is not None and run.state.type in _STOPPING:
            return _cancelled(run, ids[0])
    return None


async def _watch(client: PrefectClient, own: UUID) -> FlowRunStopped:
    """Look every :data:`POLL_S` seconds until a watched flow run stops the benchmark."""
    ids: list[UUID] | None = None
    while True:
        try:
            if ids is None:
                ids = await _chain(client, own)
            stopped = await _look(client, ids)
        except ObjectNotFound:  # deleted before the chain was read
            stopped = _deleted(own, own)
        except Exception as exc:  # a busy or unreachable API: look again
            _log.debug("hr: could not read flow run %s's state: %r", own, exc)
            stopped = None
        if stopped is not None:
            return stopped
        await asyncio.sleep(POLL_S)


async def run_watched(work: Awaitable[T], flow_run_id: str | None,
                      client: PrefectClient | None, halt: Callable[[], object]) -> T:
    """Await ``work`` while the flow run ``flow_run_id`` and those above it are watched.

    When one is cancelled or deleted: ``halt()`` (no new call starts, the calls in flight
    are abandoned), ``work`` gets a few seconds to end (then it is cancelled) and the
    :class:`FlowRunStopped` is raised.
    Without a flow run or a client, ``work`` is simply awaited.
    """
    if flow_run_id is None or client is None:
        return await work
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(_watch(client, UUID(flow_run_id)))
    try:
        await asyncio.wait((task, watch), return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        task.cancel()
        raise
    finally:
        if not watch.done():
            watch.cancel()
            watch.add_done_callback(_consume)
    if task.done():
        return task.result()
    stopped = watch.result()
    halt()  # no new call, the chunks' calls in flight abandoned: the work ends
    await asyncio.wait((task,), timeout=_UNWIND_S)
    if not task.done():  # a chunk that does not end by itself (a Dask or Ray one)
        task.cancel()
    task.add_done_callback(_consume)
    raise stopped
