"""The first chunks of a benchmark start while Prefect creates its flow run (issue 25).

Before a flow's body runs, Prefect creates the flow run: the flow upsert, the flow
run, its name, the ``Running`` state and a read-back, ~0.1 s of API round trips on
a quiet machine during which a benchmark used to do nothing. A Python call of
``hr_benchmark`` (``flows.benchmark``) now opens the run (lock, journal, chunks)
and starts each arm's first chunks (the ones the flow starts first) meanwhile:
:meth:`Prefetch.start`. When the flow run is ``Running`` its body adopts the session
(:meth:`Prefetch.adopt`: the flow run's id goes into the manifest), and each
prefetched chunk's ``run-chunk`` task run takes its chunk over
(:meth:`Prefetch.hand_over`): from then on the prefetch starts no new call, the
calls it started finish and are recorded, and the task run makes the chunk's other
runs in its own run context. The runs, their order in the runs table and every
result are the same; each chunk is still a task run of the flow run.

**Run context.** A call the prefetch started runs before the flow run exists, so
Prefect's run context is not there (``FlowRunContext.get()`` is ``None``,
``get_run_logger()`` raises). hr's own arms never read it (``hr_core`` does not
import Prefect), but an arm of the user's might, so an arm whose module holds
anything of Prefect's (:func:`reaches_prefect`: ``from prefect import
get_run_logger``, ``import prefect``, a Prefect task as the arm) is never
prefetched: its calls all run inside its task runs, as before. An arm reaching
Prefect only through another module is not seen by that rule: its first calls (up
to ``concurrency`` of them, those started before the hand-over) run without a run
context; pass it from a module that imports Prefect to keep every call inside.

``on_progress`` callbacks come from the flow body's watcher, as before (the first one
a quarter of a second after the flow run is Running).

**Where it applies.** Only the default in-process path prefetches; these run as
before: provider limits (:mod:`tasks.limits`, their slots are taken through the
flow run's client), a Dask or Ray task runner, sequential ``stop`` mode, a re-score
of stored outputs, a journal with unscored rows (they are re-scored first), and a
deployment's or schedule's flow run (no Python call).

**When it ends without the flow run** (the API refuses or cannot be reached, the
call is cancelled or interrupted before the flow body): :meth:`Prefetch.finish`
cancels the prefetched chunks and waits for them, flushes the journal (every
finished run is kept), marks the manifest ``interrupted`` and releases the run;
the caller sees the flow call's own error.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import sys
import types
from collections.abc import Iterator, Sequence
from typing import Any, overload

from hr_core.data.reference import Item
from hr_core.run.arms import Arm
from hr_core.run.interrupt import reassert_handlers
from hr_core.run.session import BenchmarkPlan, BenchmarkSession
from hr_core.store.journal import FLUSH_INTERVAL_S
from hr_core.store.lock import RunLock
from hr_core.store.manifest import write_manifest

__all__ = ["Prefetch", "reaches_prefect"]

def _prefect_name(name: Any) -> bool:
    return isinstance(name, str) and (name == "prefect" or name.startswith("prefect."))


def _of_prefect(value: Any) -> bool:
    """Whether ``value`` is a Prefect module, or a function, class or object of Prefect's."""
    if isinstance(value, types.ModuleType):
        return _prefect_name(value.__name__)
    if _prefect_name(type(value).__module__):
        return True
    try:
        return _prefect_name(getattr(value, "__module__", None))
    except Exception:  # an object whose attributes misbehave: not Prefect's
        return False


def reaches_prefect(arm: Arm) -> bool:
    """Whether an arm may read Prefect's run context: it is a Prefect object (a task, a
    flow), or the module its function comes from holds something of Prefect's.

    hr's LLM arms never do (``hr_core`` does not import Prefect).

    Example:
        >>> from hr_core.run.arms import normalise_arms
        >>> reaches_prefect(normalise_arms({"up": str.upper})["up"])
        False
    """
    fn = arm.fn
    if fn is None:
        return False
    while isinstance(fn, functools.partial):
        fn = fn.func
    if _of_prefect(fn):
        return True
    with contextlib.suppress(ValueError):  # a __wrapped__ loop: look at fn itself
        fn = inspect.unwrap(fn)
    namespace = getattr(fn, "__globals__", None)
    if namespace is None:  # a callable object: its __call__'s module
        call = getattr(type(fn), "__call__", None)  # noqa: B004
        namespace = getattr(call, "__globals__", None)
    if namespace is None:
        module = sys.modules.get(getattr(type(fn), "__module__", "") or "")
        namespace = vars(module) if module is not None else {}
    return any(_of_prefect(value) for value in list(namespace.values()))


class _Split(Sequence[tuple[Item, int]]):
    """A chunk's ``(item, run)`` pairs, taken in order by the prefetch until
    :meth:`rest` hands what is left to the task run (never a pair twice): iterating
    takes them (the chunk's workers share one iterator)."""

    __slots__ = ("pairs", "taken")

    def __init__(self, pairs: list[tuple[Item, int]]) -> None:
        self.pairs = pairs
        self.taken = 0

    def __len__(self) -> int:
        return len(self.pairs)

    @overload
    def __getitem__(self, index: int) -> tuple[Item, int]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[tuple[Item, int]]: ...

    def __getitem__(self, index: int | slice) -> Any:
        return self.pairs[index]

    def __iter__(self) -> Iterator[tuple[Item, int]]:
        pairs = self.pairs
        while self.taken < len(pairs):
            pair = pairs[self.taken]
            self.taken += 1
            yield pair

    def rest(self) -> list[tuple[Item, int]]:
        """The pairs not taken yet; from now on the prefetch takes none."""
        rest = self.pairs[self.taken:]
        self.taken = len(self.pairs)
        return rest


class Prefetch:
    """One benchmark call's session, opened and started before its flow run is Running.

    Made by the caller (``flows.benchmark._call``) before the flow call;
    :meth:`start` opens the session and starts the first chunks, the flow body
    :meth:`adopt` s it, each prefetched chunk's task run calls :meth:`hand_over`,
    and the caller always ends with :meth:`finish`.
    """

    def __init__(self, plan: BenchmarkPlan, lock: RunLock, in_flight: int = 2) -> None:
        self.session = BenchmarkSession(plan, lock=lock)
        self.in_flight = in_flight
        """Chunks of one arm running at once (the flow's ``CHUNKS_IN_FLIGHT``)."""
        self.error: Exception | None = None
        """What opening the session raised: raised again in the flow run (its state)."""
        self.started: float | None = None
        """When the first chunk started (the event loop's clock), ``None`` if none did."""
        self.adopted = False
        self._begun = False
        self._chunks: dict[int, tuple[_Split, asyncio.Task[int]]] = {}
        self._watchers: list[asyncio.Future[Any]] = []

    def start(self) -> None:
        """Open the session and start each arm's first ``in_flight`` chunks, the ones the
        flow starts first (see the module docstring for the arms and runs that are not
        prefetched). A prefetched chunk that ends before the flow run is Running is not
        followed by another: the work done outside the flow run stays the first chunks'."""
        if self._begun:
            return
        self._begun = True
        session = self.session
        try:
            session.open()
        except Exception as exc:  # the flow run fails with it, as when the flow opened it
            self.error = exc
            return
        first = self._first_chunks()
        if not first:
            return
        self.started = asyncio.get_running_loop().time()
        self._watchers.append(asyncio.ensure_future(session.journal.flush_every(
            FLUSH_INTERVAL_S)))
        for lane in first.values():
            for index in lane[:self.in_flight]:
                split = _Split(session.chunks[index].work())
                self._chunks[index] = (split, asyncio.ensure_future(
                    session.run_chunk(index, split)))

    def _first_chunks(self) -> dict[str, list[int]]:
        """Each arm's chunks of the first round in the order the flow starts them, of the
        arms that may run outside the flow run; none when the run re-scores first (the
        plans that never prefetch, ``stop`` and re-scores of stored outputs, are left out
        by the caller: ``flows.benchmark._prefetches``)."""
        session = self.session
        plan = session.plan
        if not session.rounds or session.halted() or session.unscored():
            return {}
        outside = {arm: not reaches_prefect(plan.arms[arm]) for arm in plan.arms}
        lanes: dict[str, list[int]] = {}
        for index in session.rounds[0]:
            arm = session.chunks[index].arm
            if outside[arm]:
                lanes.setdefault(arm, []).append(index)
        return lanes

    def adopt(self) -> None:
        """The flow run is Running: its body takes the session over (the manifest now
        names the flow run, which the body set as the session's ``flow_run_id``; hr's
        signal handlers go back in, Prefect swapped its own in).

        Raises:
            Exception: what opening the session raised (the flow run fails with it).
        """
        self.start()
        if self.error is not None:
            raise self.error
        for watcher in self._watchers:  # the flow body runs its own
            watcher.cancel()
        session = self.session
        write_manifest(session.store, session.manifest("running"))
        reassert_handlers()
        self.adopted = True

    def holds(self, index: int) -> bool:
        """Whether chunk ``index`` was prefetched and not yet handed over."""
        return index in self._chunks

    async def hand_over(self, index: int) -> int:
        """In chunk ``index``'s task run: the prefetch starts no new call of it; run its
        other runs here and wait for the prefetched calls. Returns the runs finished."""
        split, prefetched = self._chunks.pop(index)
        rest = split.rest()
        if not rest:
            return await prefetched
        mine, theirs = await asyncio.gather(self.session.run_chunk(index, rest), prefetched)
        return int(mine) + int(theirs)

    async def stop(self) -> None:
        """Cancel the prefetched chunks no task run took over, and wait for them."""
        for watcher in self._watchers:
            watcher.cancel()
        left = [task for _, task in self._chunks.values()]
        self._chunks.clear()
        for task in left:
            task.cancel()
        if left or self._watchers:
            await asyncio.gather(*left, *self._watchers, return_exceptions=True)
        self._watchers.clear()

    async def finish(self) -> None:
        """After the flow call, however it ended: nothing prefetched is left running, and a
        session the flow body never adopted is flushed, marked ``interrupted`` (it can be
        resumed), its clients closed and its run released."""
        await self.stop()
        if self.adopted or not self._begun:
            return
        session = self.session
        try:
            if session.opened:
                session.interrupt()  # flush the journal, manifest "interrupted"
                await session.close_clients()
        finally:
            session.close()
