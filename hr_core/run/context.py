"""The run an arm is called for: arm name, item id and run index, readable by arm code.

The engine sets a context variable around every arm call (async arms, sync arms in
the thread pool, LLM arms, and chunks run on a Dask/Ray worker), so an arm can tell
which run it serves, e.g. to seed its randomness so that the same spec gives the same
results in any process while the runs of one item still differ.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import NamedTuple

__all__ = ["RunContext", "current_run", "run_context"]


class RunContext(NamedTuple):
    """Which run an arm is called for.

    Attributes:
        arm: the arm's name in the benchmark.
        item_id: the item's id in the reference set.
        run: the run index, 1..runs.
    """

    arm: str
    item_id: str
    run: int


CURRENT_RUN: ContextVar[RunContext | None] = ContextVar("hr_current_run", default=None)


def current_run() -> RunContext | None:
    """The run the calling arm serves, or ``None`` outside a benchmark's arm call.

    Example:
        >>> current_run() is None
        True
        >>> def arm(payload):
        ...     run = current_run()
        ...     return f"{payload} (run {run.run})" if run else payload
    """
    return CURRENT_RUN.get()


@contextmanager
def run_context(arm: str, item_id: str, run: int) -> Iterator[RunContext]:
    """Call arm code as the engine does for one run, e.g. to test an arm on its own.

    Example:
        >>> with run_context("mine", "q1", 2):
        ...     current_run().run
        2
    """
    context = RunContext(arm, item_id, run)
    token = CURRENT_RUN.set(context)
    try:
        yield context
    finally:
        CURRENT_RUN.reset(token)
