"""Giving freed memory back to the operating system between the phases of a big run.

Building ``runs.parquet``, the summary and the report of a million runs frees
hundreds of MB of temporaries (numpy arrays, Arrow buffers). glibc's allocator
and Arrow's keep much of it: at 1M runs the summary left RSS behind that
``malloc_trim`` gave back, so the next phase's peak started that much higher.
:func:`give_back` asks both allocators to return what they hold free.

Arrow allocates through the C library's ``malloc`` once an hr command or run starts
(:func:`use_system_pool`; its default, mimalloc, keeps freed pages for reuse: at 1M runs
the summary and report then peaked higher, and ``release_unused`` did not give them
back). Importing hr_core changes no allocator. A process that set
``ARROW_DEFAULT_MEMORY_POOL`` keeps its choice.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from collections.abc import Callable

import pyarrow as pa

__all__ = ["GIVE_BACK_FROM", "give_back", "use_system_pool"]

GIVE_BACK_FROM = 100_000
"""Rows (runs) from which :func:`give_back` returns memory when told the size of what it
follows: below it a phase's temporaries are a few MB, while each call trims the whole
heap and the next phase faults the pages in again (a 20,000-run write phase called it
~20 times, issue 25)."""


def use_system_pool() -> None:
    """Make Arrow allocate through the C library's ``malloc`` (unless the process set
    ``ARROW_DEFAULT_MEMORY_POOL``): called where a command or a benchmark run starts
    (``hr``, the flows, ``BenchmarkSession.open``), never at import.

    Example:
        >>> use_system_pool()
    """
    if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
        pa.set_memory_pool(pa.system_memory_pool())


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to trim
        return None
    return trim


def give_back(rows: int | None = None) -> None:
    """Return the free memory of Arrow's pool and of glibc's heap to the system (a no-op
    where there is no ``malloc_trim``); what is in use is untouched. ``rows``: the size
    of the table the freed temporaries were made for; nothing is done below
    :data:`GIVE_BACK_FROM`.

    Example:
        >>> give_back()
        >>> give_back(rows=20_000)  # a small run's temporaries: left to the allocator
    """
    if rows is not None and rows < GIVE_BACK_FROM:
        return
    pa.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
