"""``hr server start | stop | status`` (the server itself: ``hr_cli.server``)."""

from __future__ import annotations

from rich.console import Console

from hr_cli.server import ServerState, server_status, start_server, stop_server

__all__ = ["start", "status", "stop"]


def start(console: Console, *, port: int | None, timeout: float) -> ServerState:
    """Start the server (or find it running) and print its dashboard URL."""

    def waiting(state: ServerState) -> None:
        console.print(f"Starting the hr server on port {state.port} (pid {state.pid}) ... "
                      f"[dim](about 10-30 s the first time; log: {state.log})[/]")

    state, started = start_server(port=port, timeout=timeout, on_wait=waiting)
    verb = "started" if started else "already running"
    console.print(f"[green]hr server {verb}[/]: dashboard [bold]{state.url}[/] "
                  f"(API {state.api_url}, pid {state.pid})")
    if started:
        console.print("hr commands and hr_benchmark use it from now on; "
                      "`hr server stop` stops it.")
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
    """Print the status line; exit 1 unless the server runs and answers."""
    current = server_status()
    style = "green" if current.status == "running" else "yellow"
    console.print(current.describe(), style=style, markup=False, soft_wrap=True)
    if current.status != "running":
        raise SystemExit(1)
