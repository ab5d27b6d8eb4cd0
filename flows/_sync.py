"""Run a flow call to its end from synchronous code, with or without a running event loop.

``hr_benchmark``, ``hr_compare`` and ``hr_judge_validate`` always return their result:
without an event loop running in the calling thread they run it there
(``asyncio.run``); inside one (a Jupyter cell, an ``async def`` calling the synchronous
function) they run it in a worker thread with an event loop of its own, and the caller
waits for it. Async callers that must not block their loop use the ``*_async`` variants.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["run_to_end"]

T = TypeVar("T")


def run_to_end(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to its end and return its result (or raise its exception).

    Inside a running event loop the work runs in a worker thread (with a copy of the
    caller's context variables, e.g. Prefect's tags) and this thread waits: that loop's
    other tasks wait too. A ``KeyboardInterrupt`` while waiting (interrupting a Jupyter
    cell) cancels the work, waits for it to stop, then is raised.

    Example:
        >>> async def answer() -> int:
        ...     return 42
        >>> run_to_end(answer())
        42
        >>> async def from_a_loop() -> int:
        ...     return run_to_end(answer())
        >>> asyncio.run(from_a_loop())
        42
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass  # no loop here: run it in this thread (outside the except: no chained context)
    else:
        return _in_worker_thread(coro)
    return asyncio.run(coro)


def _in_worker_thread(coro: Coroutine[Any, Any, T]) -> T:
    context = contextvars.copy_context()
    outcome: Future[T] = Future()
    started = threading.Event()
    running: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]]] = []

    async def main() -> T:
        task = asyncio.current_task()
        assert task is not None
        running.append((asyncio.get_running_loop(), task))
        started.set()
        return await coro

    def work() -> None:
        try:
            outcome.set_result(context.run(asyncio.run, main()))
        except BaseException as exc:  # handed to the waiting caller, raised there
            outcome.set_exception(exc)
        finally:
            started.set()

    thread = threading.Thread(target=work, name="hr-flow-call", daemon=True)
    thread.start()
    try:
        return outcome.result()
    except KeyboardInterrupt:
        started.wait()
        for loop, task in running:
            with contextlib.suppress(RuntimeError):  # its loop has closed: the work ended
                loop.call_soon_threadsafe(task.cancel)
        thread.join()  # a second Ctrl-C leaves it
        raise
