"""Why a run's arms failed, in a few lines: errors per arm, their top messages, budget stops.

One definition used by the terminal (``hr run``), the flow run's logs, the
markdown artifact and the ``max_error_rate`` check. Pure pandas over a
``Benchmark.runs`` table.

Example:
    >>> import pandas as pd
    >>> runs = pd.DataFrame({"arm": ["a", "a", "b"], "failure_kind": ["error", "error", None],
    ...                      "error": ["KeyError: 'questoin'", "KeyError: 'questoin'", None]})
    >>> health = assess_runs(runs, max_error_rate=0.5)
    >>> health.breaches[0].arm, health.breaches[0].top[0]
    ('a', ("KeyError: 'questoin'", 2))
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from hr_core.core.errors import HrError
from hr_core.stats.accuracy import arms_in_order, coverage_warning
from hr_core.store.runs_file import RowTexts

if TYPE_CHECKING:
    from hr_core.analysis.benchmark import Benchmark

__all__ = [
    "ArmErrors",
    "DEFAULT_MAX_ERROR_RATE",
    "ErrorRateExceeded",
    "RunHealth",
    "assess_benchmark",
    "assess_runs",
    "short_message",
]

DEFAULT_MAX_ERROR_RATE = 0.5
"""An arm whose runs (budget stops left out) are errors more often than this fails the run.

A healthy arm errs on a few calls (a timeout, a 5xx after its retries), far below
one in two; an arm whose every call fails (a typo in its prompt, a wrong key, a
server that is down) is at 1.0 and always trips. ``1.0`` never trips."""

_SPACE = re.compile(r"\s+")
MESSAGE_CHARS = 160
"""Error messages are shortened to this many characters (first line, spaces collapsed)."""


class ErrorRateExceeded(HrError, RuntimeError):
    """A benchmark finished (results written) but an arm erred above ``max_error_rate``.

    ``benchmark`` holds the finished ``Benchmark`` (when the run got that far) and
    ``health`` the :class:`RunHealth` that tripped; ``hr run`` exits with status 3.
    """

    def __init__(self, message: str, benchmark: object = None,
                 health: RunHealth | None = None) -> None:
        super().__init__(message)
        self.benchmark = benchmark
        self.health = health


def short_message(message: object, limit: int = MESSAGE_CHARS) -> str:
    """An error message on one line, at most ``limit`` characters (ends with ``...``).

    Example:
        >>> short_message("Traceback line\\n  more   detail", limit=20)
        'Traceback line more…'
    """
    text = _SPACE.sub(" ", str(message)).strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class ArmErrors:
    """One arm's errors: how many of the runs it made, and the most frequent messages."""

    arm: str
    errors: int
    runs_made: int
    budget_stops: int
    top: tuple[tuple[str, int], ...] = ()

    @property
    def rate(self) -> float:
        """Errors over the runs made (budget stops left out); NaN when none was made."""
        return self.errors / self.runs_made if self.runs_made else math.nan

    def line(self) -> str:
        """``keyword: 69 errors in 69 runs (100%); top: KeyError: 'questoin' (69x)``."""
        top = "; ".join(f"{message} ({count}x)" for message, count in self.top)
        rate = "" if math.isnan(self.rate) else f" ({self.rate:.0%})"
        return (f"{self.arm}: {self.errors} error(s) in {self.runs_made} run(s){rate}"
                + (f"; top: {top}" if top else ""))


@dataclass(frozen=True)
class RunHealth:
    """Errors and budget stops of every arm, and the arms above ``max_error_rate``."""

    arms: tuple[ArmErrors, ...]
    max_error_rate: float
    breaches: tuple[ArmErrors, ...] = field(default=())

    @property
    def budget_stopped(self) -> tuple[ArmErrors, ...]:
        """The arms a budget stopped before every run was made."""
        return tuple(a for a in self.arms if a.budget_stops)

    @property
    def with_errors(self) -> tuple[ArmErrors, ...]:
        """The arms with at least one error, most errors first."""
        return tuple(sorted((a for a in self.arms if a.errors), key=lambda a: -a.errors))

    def ordered(self, arms: Sequence[str]) -> RunHealth:
        """The same figures of ``arms`` only, in their order (no recount)."""
        of = {a.arm: a for a in self.arms}
        order = [of[arm] for arm in arms if arm in of]
        return RunHealth(tuple(order), self.max_error_rate,
                         tuple(a for a in order if a in self.breaches))

    def warnings(self) -> list[str]:
        """One line per arm with errors and per budget-stopped arm (for terminals and logs)."""
        lines = [a.line() for a in self.with_errors]
        lines += [str(coverage_warning(a.arm, a.runs_made, a.runs_made + a.budget_stops))
                  for a in self.budget_stopped]
        return lines

    def failure_message(self, name: str = "benchmark") -> str:
        """Why the run failed: each arm above the limit with its rate and top error."""
        parts = [f"{a.arm} {a.errors}/{a.runs_made} ({a.rate:.0%})"
                 + (f", top error: {a.top[0][0]}" if a.top else "") for a in self.breaches]
        return (f"{name}: error rate above max_error_rate={self.max_error_rate:g} in "
                f"{len(self.breaches)} arm(s): " + "; ".join(parts)
                + ". The results are written; fix the arm (or raise max_error_rate) and run again")


def assess_runs(runs: pd.DataFrame, max_error_rate: float = DEFAULT_MAX_ERROR_RATE,
                top: int = 3, arms: list[str] | None = None,
                texts: RowTexts | None = None) -> RunHealth:
    """Count each arm's errors and budget stops; find the arms above ``max_error_rate``.

    Args:
        runs: a ``Benchmark.runs`` table (``arm``, ``failure_kind``, ``error``).
        max_error_rate: the share of an arm's runs made (0..1) that may be errors.
        top: how many distinct messages to keep per arm (most frequent first).
        arms: the arms in display order (default: as they appear in ``runs``).
        texts: reads the ``error`` of the erred runs when ``runs`` lacks the column (a
            stored table read without its texts).
    """
    order = arms if arms is not None else [str(a) for a in arms_in_order(runs)]
    kinds = runs["failure_kind"]
    result = []
    for arm in order:
        mine = runs["arm"] == arm
        stops = int((mine & (kinds == "budget_stop")).sum())
        made = int(mine.sum()) - stops
        erred = (mine & (kinds == "error")).to_numpy(dtype=bool)
        if "error" in runs.columns:
            messages = runs.loc[erred, "error"]
        elif texts is not None:
            messages = pd.Series(texts.get(np.flatnonzero(erred), "error"), dtype="str")
        else:
            messages = pd.Series(dtype=object)
        shortened = messages.fillna("(no message)").map(short_message)
        counts = shortened.value_counts(sort=True)
        result.append(ArmErrors(arm, int(erred.sum()), made, stops,
                                tuple((str(m), int(c)) for m, c in counts.head(top).items())))
    breaches = tuple(a for a in result
                     if a.runs_made and a.errors and a.rate > max_error_rate)
    return RunHealth(tuple(result), float(max_error_rate), breaches)


def assess_benchmark(bench: Benchmark, max_error_rate: float = DEFAULT_MAX_ERROR_RATE,
                     top: int = 3, arms: list[str] | None = None) -> RunHealth:
    """:func:`assess_runs` of a ``Benchmark``: a stored run's small columns and the error
    messages of its erred runs only (not every run's texts)."""
    texts = bench.row_texts()
    runs = bench.columns(["arm", "failure_kind"] if texts is not None
                         else ["arm", "failure_kind", "error"])
    return assess_runs(runs, max_error_rate, top, arms, texts=texts)
