"""Threads for sync arms that can be abandoned (a call past its timeout, an interrupt).

``concurrent.futures.ThreadPoolExecutor`` joins its threads when the interpreter
exits, so one sync arm that never returns keeps the process alive for ever. These
threads are daemons: a call that is given up on is left behind, another thread
takes its place, and the process still exits.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

__all__ = ["DaemonPool"]

_Work = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class DaemonPool(Executor):
    """A thread pool of daemon threads; :meth:`abandon` replaces a thread stuck in a call.

    Example:
        >>> pool = DaemonPool(2)
        >>> pool.submit(sum, [1, 2]).result()
        3
        >>> pool.shutdown()
    """

    def __init__(self, max_workers: int, thread_name_prefix: str = "hr-arm") -> None:
        self._queue: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._limit = max_workers
        self._threads: list[threading.Thread] = []
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._prefix = thread_name_prefix
        self._closed = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot submit to a pool that was shut down")
            self._queue.put((future, fn, args, kwargs))
            if not self._idle.acquire(blocking=False) and len(self._threads) < self._limit:
                thread = threading.Thread(target=self._work, daemon=True,
                                          name=f"{self._prefix}-{len(self._threads)}")
                self._threads.append(thread)
                thread.start()
        return future

    def _work(self) -> None:
        while True:
            work = self._queue.get()
            if work is None:
                return
            future, fn, args, kwargs = work
            del work
            if future.set_running_or_notify_cancel():
                try:
                    result = fn(*args, **kwargs)
                except BaseException as exc:  # the caller's future gets it
                    future.set_exception(exc)
                else:
                    future.set_result(result)
            del future, fn, args, kwargs
            self._idle.release()

    def abandon(self) -> None:
        """A call will not come back (timed out): allow one more thread in its place."""
        with self._lock:
            self._limit += 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Let idle threads end; threads stuck in a call are daemons and are left behind."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            threads = list(self._threads)
        for _ in threads:
            self._queue.put(None)
        if wait:
            for thread in threads:
                thread.join(timeout=0.1)
