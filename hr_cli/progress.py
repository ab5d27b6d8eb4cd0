"""A live progress bar per arm: done/total, rate, time left, wrong answers and errors so far."""

from __future__ import annotations

import threading
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from hr_cli.literal import line

__all__ = ["ArmProgress"]


class _RateColumn(ProgressColumn):
    """Runs per second, as rich estimates it from recent updates."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("  –  runs/s" if speed is None else f"{speed:6.1f} runs/s", style="cyan")


class _FailuresColumn(ProgressColumn):
    """Wrong answers (and other failure kinds) and errors so far, apart, and ``budget stop``
    for a stopped arm."""

    def render(self, task: Task) -> Text:
        failures = int(task.fields.get("failures", 0))
        errors = int(task.fields.get("errors", 0))
        text = Text(f"{failures} wrong/failed", style="yellow" if failures else "dim")
        text.append("  ")
        text.append(f"{errors} errors", style="bold red" if errors else "dim")
        stopped = int(task.fields.get("budget_stopped", 0))
        if stopped:
            text.append(f"  budget stop ({stopped} runs)", style="yellow")
        return text


class ArmProgress:
    """Rich progress bars fed by the engine's ``on_progress(arm, done, total, failures,
    errors)`` (failures: wrong answers, refusals, parse failures...; errors apart).

    The callback may come from any thread; bars appear as arms report. An arm whose
    budget stopped it is marked with :meth:`budget_stop` when the benchmark is done.

    Example:
        >>> with ArmProgress(Console(quiet=True)) as progress:
        ...     progress("keyword", 3, 10, 1, 0)
        ...     progress.budget_stop("keyword", 7)
        >>> progress.done["keyword"], progress.stopped["keyword"]
        (3, 7)
    """

    def __init__(self, console: Console) -> None:
        self._progress = Progress(
            TextColumn("{task.description:<18}", style="bold", markup=False),  # data
            BarColumn(bar_width=32),
            MofNCompleteColumn(),
            _RateColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            _FailuresColumn(),
            console=console,
            transient=False,
            refresh_per_second=8,
        )
        self._tasks: dict[str, TaskID] = {}
        self._lock = threading.Lock()
        self.done: dict[str, int] = {}
        self.stopped: dict[str, int] = {}

    def __enter__(self) -> ArmProgress:
        self._progress.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._progress.stop()

    def __call__(self, arm: str, done: int, total: int, failures: int, errors: int = 0) -> None:
        with self._lock:
            task = self._tasks.get(arm)
            if task is None:
                task = self._progress.add_task(line(arm), total=total, failures=failures,
                                               errors=errors)
                self._tasks[arm] = task
            self._progress.update(task, completed=done, total=total, failures=failures,
                                  errors=errors)
            self.done[arm] = done

    def budget_stop(self, arm: str, runs: int) -> None:
        """Mark ``arm``'s bar: its budget stopped ``runs`` runs (they count as done)."""
        with self._lock:
            task = self._tasks.get(arm)
            if task is not None and runs:
                self._progress.update(task, budget_stopped=runs)
                self.stopped[arm] = runs
