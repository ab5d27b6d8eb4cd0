"""Prefect's temporary server, started by hr as a process of its own.

Prefect starts its temporary ("ephemeral") server through
``prefect.server.api.server.SubprocessASGIServer``, whose module imports the whole
server stack (FastAPI, SQLAlchemy, the API's routers: RSS at the peak of a 1M-run
benchmark, and its import time) into the calling process although the
server runs in a subprocess. hr runs the same command itself (``python -m uvicorn
--factory prefect.server.api.server:create_app`` on 127.0.0.1, the UI off, the
same environment Prefect gives it) on a free port, waits for its ``/api/health``
(a raw socket: :func:`hr_server.ports.healthy`), and the caller points
``PREFECT_API_URL`` at it for the flow call (``flows.clients.use_prefect_api``).

One server per process, started under a lock (two threads never start two; a
forked child starts its own), guarded (``hr_server.guard``: it dies with hr, even on
``kill -9``) and stopped at exit (an ``atexit`` handler: ``hr_cli.process_exit`` runs them).
Like Prefect's, it is in hr's process group, so a terminal's Ctrl-C reaches it.

It is private as the hr server is (``hr_server.private``): it runs under umask
077 (the database and whatever else it writes are its owner's only; a
``PREFECT_HOME`` it creates is 0700), and its API asks for a secret of its own,
new in each process (:attr:`TemporaryServer.auth`, given to this process's clients).
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from hr_server.control import ServerError
from hr_server.guard import guard
from hr_server.ports import free_port, healthy, listens
from hr_server.private import UMASK, new_auth_string

__all__ = ["TemporaryServer", "start_temporary", "temporary_api_url"]

_STARTUP_FAILURE = 3  # uvicorn's exit status when it cannot bind (or start) the app
_ATTEMPTS = 3  # ports tried when another process takes the chosen one first
_POLL_S = 0.05
_STOP_GRACE_S = 5.0  # as Prefect's SubprocessASGIServer.stop


@dataclass
class TemporaryServer:
    """The temporary server this process started."""

    process: subprocess.Popen[bytes]
    port: int
    owner: int  # the PID that started it: a forked child does not own its parent's
    auth: str = ""  # its API secret (PREFECT_API_AUTH_STRING), this process's alone

    @property
    def api_url(self) -> str:
        """Its API, for ``PREFECT_API_URL``."""
        return f"http://127.0.0.1:{self.port}/api"

    def stop(self) -> None:
        """SIGTERM it, SIGKILL after 5 s, reap it (as Prefect's own ``stop``)."""
        if self.owner != os.getpid() or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=_STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


_lock = threading.Lock()
_server: list[TemporaryServer] = []  # at most one, this process's


def temporary_api_url() -> str | None:
    """The API URL of this process's temporary server once it runs, else ``None``
    (never starts one)."""
    server = _server[0] if _server else None
    return server.api_url if server is not None and server.owner == os.getpid() else None


def _command(port: int) -> tuple[list[str], dict[str, str]]:
    """The command and environment Prefect's ``SubprocessASGIServer`` runs (Prefect 3)."""
    # lazy for start-up: the quick commands import this module (temporary_api_url), Prefect
    # (a long import) is needed only once a temporary server starts
    import prefect.settings

    args = [sys.executable, "-m", "uvicorn", "--app-dir", str(prefect.__module_path__.parent),
            "--factory", "prefect.server.api.server:create_app", "--host", "127.0.0.1",
            "--port", str(port), "--log-level", "error", "--lifespan", "on"]
    env = {**os.environ, "PREFECT_UI_ENABLED": "0", "PREFECT__SERVER_EPHEMERAL": "1",
           "PREFECT__SERVER_FINAL": "1",
           **prefect.settings.get_current_settings().to_environment_variables(exclude_unset=True)}
    return args, env


def _wait(process: subprocess.Popen[bytes], port: int, deadline: float) -> bool:
    """Wait until the server answers its health check on ``port`` from a socket of hr's
    process group (not another server's); ``False`` when it exited first."""
    group = os.getpgrp()
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        if healthy(port, timeout=1.0) and listens(group, port) is not False:
            return True
        time.sleep(_POLL_S)
    return process.poll() is None and healthy(port, timeout=1.0)


def start_temporary(timeout: float) -> TemporaryServer:
    """This process's temporary server, started now (waiting at most ``timeout`` s for
    its health) unless it runs already. Raises :class:`ServerError` (stopping what it
    started) when the server exits or does not answer in time."""
    with _lock:
        if _server and _server[0].owner == os.getpid():
            return _server[0]
        _server.clear()
        deadline = time.monotonic() + timeout
        auth = new_auth_string()
        for _attempt in range(_ATTEMPTS):
            port = free_port()
            args, env = _command(port)
            env = {**env, "PREFECT_SERVER_API_AUTH_STRING": auth}
            process = subprocess.Popen(args, env=env, umask=UMASK)
            server = TemporaryServer(process, port, os.getpid(), auth)
            if _wait(process, port, deadline):
                _server.append(server)
                if guard(process.pid, stop=server.stop) is None:  # no /proc: no watchdog
                    atexit.register(server.stop)
                return server
            code = process.poll()
            server.stop()
            if code != _STARTUP_FAILURE or time.monotonic() >= deadline:
                break
        why = (f"exited with status {code}" if code is not None
               else f"did not answer in {timeout:.0f} s")
        raise ServerError(
            f"Prefect's temporary server (127.0.0.1:{port}) {why} (its output is above); "
            "`hr server start` runs a lasting one, or raise "
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS")
