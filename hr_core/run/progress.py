"""What a benchmark reports as it runs: the ``on_progress`` callback's form, and old forms
adapted to it."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["ProgressFn", "ProgressRow", "progress_callback"]

ProgressFn = Callable[[str, int, int, int, int], None]
"""``on_progress(arm, done, total, failures, errors)``: runs done of ``total`` (journaled
earlier ones included); ``failures`` of them with a failure kind other than an error
(wrong, refusal, parse failure, not in document) and ``errors`` of them errors (the arm
raised or reported ``ok=False``). The last call, when the benchmark has run, counts the
runs a budget stopped as done (so every arm reaches its total) but neither as failures
nor errors; ``Benchmark.summary()`` has them in its ``budget_stop`` column."""

ProgressRow = tuple[str, int, int, int, int]
"""``(arm, done, total, failures, errors)``, the arguments of :data:`ProgressFn`."""

def progress_callback(on_progress: Any) -> ProgressFn | None:
    """``on_progress`` as a :data:`ProgressFn`; a callback written for the four first
    arguments ``(arm, done, total, failures)`` gets those (then ``failures`` counts errors
    too, as it did before errors were counted apart).

    Example:
        >>> progress_callback(lambda arm, done, total, failures: print(failures))("a", 3, 9, 1, 2)
        3
    """
    if on_progress is None:
        return None
    try:
        inspect.signature(on_progress).bind(*range(5))
    except TypeError:
        def four(arm: str, done: int, total: int, failures: int, errors: int) -> None:
            on_progress(arm, done, total, failures + errors)
        return four
    except ValueError:  # no signature (a builtin): the current form
        pass
    return on_progress  # type: ignore[no-any-return,unused-ignore]
