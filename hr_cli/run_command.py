"""``hr run SPEC.yaml``: the benchmark through the Prefect flow, with a progress bar per
arm, then the summary, the report and the paths (``hr demo`` runs its spec through
:func:`run_benchmark` too). The flows are imported once the spec has been read: a
mistake in it is reported before Prefect's import (bench/README.md has its cost)."""

from __future__ import annotations

import logging
import shlex
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from hr_cli.api_watch import WatchedApi, watching_api
from hr_cli.batch_commands import status_printer
from hr_cli.commands import load_spec_with_overrides, print_results
from hr_cli.literal import line, lit
from hr_cli.progress import ArmProgress
from hr_cli.signals import interruptible
from hr_core.analysis.health import ErrorRateExceeded
from hr_core.core.errors import FlowRunStopped
from hr_core.models.ratelimit.reach import EndpointsHalted, halted_benchmark
from hr_core.run.batch.pending import BatchesSubmitted
from hr_core.run.stopping import StopRule
from hr_server.control import ServerError, prepare_prefect, server_status
from hr_server.temporary import temporary_api_url

__all__ = ["quiet_prefect_console", "run_benchmark", "run_spec"]


_SAID_BY_HR = ("ErrorRateExceeded", "StoreWriteError", "BenchmarkCancelled", "FlowRunDeleted")
"""Errors that end a flow run and that ``hr`` prints itself as one line."""


class _TerseConsole(logging.Filter):
    """On the terminal only (the dashboard keeps every log): drop the flow's per-arm error
    lines (``hr run`` prints them itself, after the summary) and the traceback of an
    exceeded ``max_error_rate`` or an unwritable store (``hr`` prints it as one line)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "hr_digest", False):
            return False
        exc = record.exc_info[1] if record.exc_info else None
        message = record.getMessage()
        deleted = sys.modules.get("flows._cancel")  # once loaded: a flow run ran
        if deleted is not None and deleted.was_deleted(getattr(record, "flow_run_id", None)):
            return False  # a deleted flow run's end: hr says it (flows._cancel)
        return type(exc).__name__ not in _SAID_BY_HR and not any(
            name in message for name in _SAID_BY_HR)


def quiet_prefect_console() -> None:
    """Install :class:`_TerseConsole` on Prefect's console handlers (after Prefect set them)."""
    loggers = [logging.getLogger(), *(
        logger for name, logger in logging.Logger.manager.loggerDict.items()
        if name.startswith("prefect") and isinstance(logger, logging.Logger))]
    for logger in loggers:
        for handler in logger.handlers:
            if "Console" in type(handler).__name__ and not any(
                    isinstance(f, _TerseConsole) for f in handler.filters):
                handler.addFilter(_TerseConsole())


def run_benchmark(console: Console, spec: Any, *, fresh: bool = False,
                  max_error_rate: float | None = None, wait: bool = False,
                  submit_only: bool = False) -> Any:
    """Run a ``BenchmarkSpec`` through the Prefect flow with live progress bars.

    Ctrl-C or SIGTERM stops it within seconds, journal flushed (``hr_cli.signals``);
    ``wait``: wait for another process running the same spec to finish.

    Batched arms and judges (``batch: true``): the batches' counts are printed as they
    change; ``submit_only``: the batches are submitted and ``None`` is returned after a
    line saying how to collect them.

    Raises:
        ErrorRateExceeded: an arm erred above ``max_error_rate`` (its ``benchmark``
            holds the written results).
    """
    console.print(f"[bold]Running[/] {lit(spec.name or 'benchmark')}: {len(spec.arms)} arm(s), "
                  f"{spec.runs} run(s) per item ...")
    prepare_prefect()
    # lazy for start-up: Prefect (a long import) after the spec was read and checked, and
    # after prepare_prefect set what Prefect reads as it is imported
    import flows.clients

    api = flows.clients.announce_api(lambda note, kind: console.print(
        line(note), style="yellow" if kind == "temporary" else "dim", markup=False))
    quiet_prefect_console()
    with interruptible(), watching_api(_watched(api), _resume_command(spec, fresh)), \
            ArmProgress(console) as progress:
        try:
            bench = flows.hr_benchmark(spec, fresh=fresh, on_progress=progress,
                                       max_error_rate=max_error_rate, wait=wait,
                                       batch={"submit_only": submit_only,
                                              "on_status": status_printer(console)})
        except BatchesSubmitted as exc:  # --submit-only: nothing more to do now
            console.print(f"hr: {line(str(exc))}", markup=False)
            return None
        except ErrorRateExceeded as exc:  # the results are written: show them, then fail
            if exc.benchmark is None:
                raise
            _mark_budget_stops(progress, exc.benchmark)
            raise
        except FlowRunStopped as exc:  # cancelled or deleted from the Prefect API
            exc.resume = _resume_command(spec, fresh)
            raise
        _mark_budget_stops(progress, bench)
    if submit_only:  # nothing was left to a batch: the run is made
        console.print("hr: --submit-only: no call waits for a batch (no arm or judge has "
                      "batch: true, or every batched call is answered); the run is complete",
                      style="yellow", markup=False)
    return bench


def _resume_command(spec: Any, fresh: bool) -> str | None:
    """The command that resumes this benchmark: the ``hr run`` being run (its options
    decide the run id), else ``hr run <spec>``; ``None`` for a fresh run (a new run id
    each time: running it again starts over)."""

    if fresh:
        return None
    if sys.argv[1:2] == ["run"]:
        return shlex.join(["hr", *sys.argv[1:]])
    source = getattr(spec, "source", None)
    return None if source is None else shlex.join(["hr", "run", str(source)])


def _watched(api: Any) -> Any:
    """What the API watch looks at (``hr_cli.api_watch``): the hr server's URL and PID
    (health-checked when it was chosen), an explicit URL, or the temporary server's once
    it runs (counted once it has answered)."""
    if api.url:
        try:
            status = server_status(check_health=False)
        except ServerError:  # a bad record: prefect_api said so; watch the URL alone
            status = None
        state = None if status is None or status.status != "running" else status.state
        if state is not None and state.api_url == api.url:
            return lambda: WatchedApi(api.url, pid=state.pid, answered=True)
        return lambda: WatchedApi(str(api.url), answered=True)

    def temporary() -> WatchedApi:
        return WatchedApi(temporary_api_url())  # never started here (thread safety)

    return temporary


def _mark_budget_stops(progress: ArmProgress, bench: Any) -> None:
    """Each arm's budget stops (the summary's ``budget_stop``, counted without building it:
    ``print_results`` builds it once)."""
    runs = bench.columns(["arm", "failure_kind"])  # a stored run: not its texts
    stopped = runs.loc[runs["failure_kind"] == "budget_stop", "arm"].value_counts()
    for arm in bench.arms:
        progress.budget_stop(str(arm), int(stopped.get(arm, 0)))


def run_spec(console: Console, spec: Path, *, runs: int | None, store: str | Path | None,
             fresh: bool,
             budget_calls: int | None, budget_cost: float | None,
             concurrency: int | None, max_error_rate: float | None = None,
             wait: bool = False, shared_cache: bool = False,
             stop_when_clear: bool = False, submit_only: bool = False) -> None:
    """``hr run SPEC.yaml``: run, print the summary, write the report, print the paths.

    An arm erring above ``max_error_rate``: the same, then ``ErrorRateExceeded``
    (``hr`` prints it and exits with status 3); an endpoint halted (unreachable, quota
    exhausted): the same, then ``EndpointsHalted`` (status 9, the runs not made wait for
    the next ``hr run``).
    """
    budget = {k: v for k, v in (("max_calls", budget_calls), ("max_cost_usd", budget_cost))
              if v is not None}
    loaded = load_spec_with_overrides(spec, runs=runs, store=store, concurrency=concurrency,
                                      budget=budget, max_error_rate=max_error_rate,
                                      shared_cache=True if shared_cache else None)
    if stop_when_clear and loaded.stop is None:
        loaded = loaded.model_copy(update={"stop": StopRule()})
    try:
        bench = run_benchmark(console, loaded, fresh=fresh, wait=wait, submit_only=submit_only)
        if bench is None:  # --submit-only: the batches run at the provider
            return
    except ErrorRateExceeded as exc:
        if exc.benchmark is not None:
            print_results(console, exc.benchmark)
            halted = halted_benchmark(exc.benchmark)
            if halted is not None:
                console.print(f"hr: warning: {line(str(halted))}", style="yellow", markup=False)
        raise
    except EndpointsHalted as exc:  # the flow run ended Failed: its results are written
        if exc.benchmark is not None:
            print_results(console, exc.benchmark)
        raise
    print_results(console, bench)
