"""``hr server start | stop | status`` (the server itself: ``hr_cli.server``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from hr_cli.runner import RunnerState
from hr_cli.server import ServerState, server_status, start_server, stop_server

__all__ = ["start", "status", "stop"]


def start(console: Console, *, port: int | None, timeout: float) -> ServerState:
    """Start the server (or find it running) and print its dashboard URL."""
    from hr_cli.runner import start_runner

    warm: list[tuple[RunnerState, Any]] = []

    def waiting(state: ServerState) -> None:
        console.print(f"Starting the hr server on port {state.port} (pid {state.pid}) ... "
                      f"[dim](about 10-30 s the first time; log: {state.log})[/]")
        warm.append(start_runner(Path(state.home), state.api_url, state.pid))  # meanwhile

    state, started = start_server(port=port, timeout=timeout, on_wait=waiting)
    verb = "started" if started else "already running"
    console.print(f"[green]hr server {verb}[/]: dashboard [bold]{state.url}[/] "
                  f"(API {state.api_url}, pid {state.pid})")
    _runner_ready(console, warm[-1] if warm else start_runner(
        Path(state.home), state.api_url, state.pid), timeout)
    if started:
        console.print("hr commands and hr_benchmark use it from now on; "
                      "`hr server stop` stops it.")
    return state


def _runner_ready(console: Console, started: tuple[RunnerState, Any], timeout: float) -> None:
    """Wait for the warm runner; a runner that fails is a warning (the server works)."""
    from hr_cli.runner import wait_ready

    runner, proc = started
    if wait_ready(runner, proc, timeout):
        console.print(f"warm runner ready (pid {runner.pid}): hr run starts in a fraction "
                      "of a second")
        return
    from hr_cli.runner import stop_runner
    from hr_cli.server import log_tail

    stop_runner(Path(runner.log).parent)  # the log is in PREFECT_HOME
    console.print(f"hr: warning: the warm runner did not start (log: {runner.log}); hr "
                  f"commands run without it:\n{log_tail(Path(runner.log))}",
                  style="yellow", markup=False)


def stop(console: Console) -> None:
    """Stop the server; say when there was none, or only a stale record."""
    before = stop_server()
    state = before.state
    if state is None:
        console.print("no hr server is running")
    elif before.status == "stale":
        console.print(f"[yellow]the hr server (pid {state.pid}) was already gone[/]; "
                      f"removed its record {before.path}")
    else:
        console.print(f"hr server stopped (pid {state.pid}, port {state.port})")


def status(console: Console) -> None:
    """Print the status line; exit 1 unless the server runs, answers and works
    (``hr_cli.server_health``: no service failing in its log, no schedule without runs)."""
    current = server_status()
    style = "green" if current.status == "running" else "yellow"
    console.print(current.describe(), style=style, markup=False, soft_wrap=True)
    if current.status != "running":
        raise SystemExit(1)
    from hr_cli.server_health import server_problem

    state = current.state
    problem = None if state is None else server_problem(
        log=state.log, api_url=state.api_url, started_at=state.started_at, pid=state.pid)
    if problem is not None:  # it answers, but does not work
        console.print(f"hr server: {problem}", style="red", markup=False, soft_wrap=True)
        raise SystemExit(1)
