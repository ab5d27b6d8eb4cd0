"""A live progress bar per arm: done/total, rate, time left, wrong answers and errors so far;
under the bars, one line per model endpoint in use: its concurrency and its 429s."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from types import TracebackType

from rich.console import Console, RenderableType
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
from hr_core.models.ratelimit.endpoint import rate_limit_report

__all__ = ["ArmProgress", "endpoint_lines"]


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


def endpoint_lines(since: float) -> Text | None:
    """One line per model endpoint used since ``since`` (``time.monotonic()``): its
    concurrency limit now (of its ceiling), the 429s so far, the pace, a halt.

    Example:
        >>> endpoint_lines(time.monotonic() + 60) is None  # none used since
        True
    """
    report = rate_limit_report(since)
    if not report:
        return None
    text = Text()
    for i, endpoint in enumerate(report):
        text.append("\n" if i else "")
        text.append(line(endpoint["endpoint"]), style="dim")
        text.append(f"  concurrency {endpoint['concurrency']}/{endpoint['ceiling']}")
        limited = endpoint["rate_limited"]
        text.append(f"  {limited} x 429", style="yellow" if limited else "dim")
        if endpoint["rpm"]:
            text.append(f"  {endpoint['rpm']:g} req/min", style="dim")
        if endpoint["tpm"]:
            text.append(f"  {endpoint['tpm']:g} tokens/min", style="dim")
        if endpoint["halted"]:
            text.append("  halted: " + line(endpoint["halted"]), style="bold red")
    return text


class _Progress(Progress):
    """Rich's progress bars, then the endpoint lines."""

    def __init__(self, *columns: ProgressColumn | str, since: float, **options: object) -> None:
        self._since = since
        super().__init__(*columns, **options)  # type: ignore[arg-type]

    def get_renderables(self) -> Iterable[RenderableType]:
        yield from super().get_renderables()
        lines = endpoint_lines(self._since)
        if lines is not None:
            yield lines


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
        self._progress = _Progress(
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
            since=time.monotonic(),
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
