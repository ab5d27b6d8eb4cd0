"""``hr server start | stop | status`` (the server itself: ``hr_server.control``)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from hr_server.control import ServerState, ServerStatus, server_status, start_server, stop_server
from hr_server.health import server_problem
from hr_server.private import AUTH_FILE, PROFILE, PROFILES_FILE

__all__ = ["start", "status", "stop"]


def start(console: Console, *, port: int | None, timeout: float) -> ServerState:
    """Start the server (or find it running) and print its dashboard URL."""

    def waiting(state: ServerState) -> None:
        console.print(f"Starting the hr server on port {state.port} (pid {state.pid}) ... "
                      f"[dim](about 10-30 s the first time; log: {state.log})[/]")

    def taken(port: int) -> None:
        console.print(f"hr: port {port} is in use (another process took it as the server "
                      "started); trying another free port", style="yellow", markup=False)

    state, started = start_server(port=port, timeout=timeout, on_wait=waiting,
                                  on_port_taken=taken)
    verb = "started" if started else "already running"
    console.print(f"[green]hr server {verb}[/]: dashboard [bold]{state.url}[/] "
                  f"(API {state.api_url}, pid {state.pid})")
    if started:
        console.print("hr commands and hr_benchmark use it from now on; "
                      "`hr server stop` stops it.")
    if state.auth() is not None:  # the secret itself only in `status`, not in start's logs
        console.print(f"Its API asks for a secret: `hr server status` shows it (the dashboard "
                      f"asks for it); the prefect CLI gets it with PREFECT_PROFILE={PROFILE}.",
                      markup=False)
    return state


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
    (``hr_server.health``: no service failing in its log, no schedule without runs)."""
    current = server_status()
    style = "green" if current.status == "running" else "yellow"
    console.print(current.describe(), style=style, markup=False, soft_wrap=True)
    if current.status != "running":
        raise SystemExit(1)
    _login(console, current)

    state = current.state
    problem = None if state is None else server_problem(
        log=state.log, api_url=state.api_url, started_at=state.started_at, pid=state.pid,
        auth=state.auth())
    if problem is not None:  # it answers, but does not work
        console.print(f"hr server: {problem}", style="red", markup=False, soft_wrap=True)
        raise SystemExit(1)


def _login(console: Console, current: ServerStatus) -> None:
    """How to log in to the dashboard: the API secret (its owner is the one asking)."""
    state = current.state
    secret = None if state is None else state.auth()
    if state is None or secret is None:
        console.print("its API asks for no secret (started by an earlier hr): `hr server stop` "
                      "then `hr server start` makes it private", style="yellow", markup=False)
        return
    console.print(f"dashboard login (the auth string Prefect asks for): {secret}\n"
                  f"kept in {Path(state.home) / AUTH_FILE}; prefect CLI and Python client: "
                  f"PREFECT_PROFILE={PROFILE} (profile in {Path(state.home) / PROFILES_FILE})",
                  markup=False, soft_wrap=True)
