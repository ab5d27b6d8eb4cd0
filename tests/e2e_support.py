"""A real ``prefect server start`` for end-to-end tests, and the processes around it.

Everything runs through ``.venv/bin/prefect`` in its own process group, with its
own ``PREFECT_HOME``, and is stopped by PID (the group) even when a test fails.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from hr_server.ports import free_port  # re-exported

__all__ = ["PrefectServer", "free_port", "stop_group"]

PREFECT = str(Path(sys.executable).with_name("prefect"))


def stop_group(proc: subprocess.Popen[Any], grace: float = 10.0) -> None:
    """Stop a process and its group: SIGINT twice, then SIGTERM, then SIGKILL."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGINT, 0.5), (signal.SIGINT, grace / 2),
                      (signal.SIGTERM, grace / 2), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    # Children left behind in the group (a flow run's process) go too.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


class PrefectServer:
    """A Prefect server on 127.0.0.1:<free port> with its own home, and CLI helpers.

    Use as a context manager: it waits for ``/api/health`` on entry and stops the
    server and every process started through it on exit.
    """

    def __init__(self, home: Path, cwd: Path, *, startup_timeout: float = 120.0) -> None:
        self.home = home
        self.cwd = cwd
        self.port = free_port()
        self.api_url = f"http://127.0.0.1:{self.port}/api"
        self.startup_timeout = startup_timeout
        self.logs = home / "logs"
        self._procs: list[subprocess.Popen[Any]] = []
        base = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        base.update(
            PREFECT_HOME=str(home),
            PREFECT_SERVER_ANALYTICS_ENABLED="false",
            PREFECT_LOGGING_LEVEL="INFO",
            PREFECT_CLI_WRAP_LINES="false",
            COLUMNS="200",
        )
        self.server_env = dict(base)
        self.env = dict(base, PREFECT_API_URL=self.api_url)

    def __enter__(self) -> PrefectServer:
        self.logs.mkdir(parents=True, exist_ok=True)
        self.server = self.spawn(
            ["server", "start", "--host", "127.0.0.1", "--port", str(self.port), "--no-ui"],
            log="server", env=self.server_env,
        )
        self._wait_healthy()
        self.http = httpx.Client(base_url=self.api_url, timeout=30)
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in reversed(self._procs):
            stop_group(proc)
        if hasattr(self, "http"):
            self.http.close()

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.server.poll() is not None:
                raise RuntimeError(f"prefect server exited early:\n{self.log_tail('server')}")
            try:
                if httpx.get(f"{self.api_url}/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        raise TimeoutError(f"prefect server not healthy in {self.startup_timeout} s:\n"
                           f"{self.log_tail('server')}")

    def spawn(self, args: Sequence[str], *, log: str, env: dict[str, str] | None = None,
              program: str = PREFECT) -> subprocess.Popen[Any]:
        """Start ``prefect ARGS`` (or ``program ARGS``) in its own process group.

        Its output goes to ``logs/<log>.log``; it is stopped on exit.
        """
        handle = (self.logs / f"{log}.log").open("ab")
        proc = subprocess.Popen(
            [program, *args], cwd=self.cwd, env=env or self.env, stdout=handle,
            stderr=subprocess.STDOUT, start_new_session=True,
        )
        handle.close()
        self._procs.append(proc)
        return proc

    def cli(self, *args: str, timeout: float = 60.0) -> str:
        """Run ``prefect --no-prompt ARGS`` to the end; its output, or an error with it."""
        proc = self.spawn(["--no-prompt", *args], log="cli")
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop_group(proc)
            raise
        if code != 0:
            raise RuntimeError(f"prefect {' '.join(args)} exited {code}:\n{self.log_tail('cli')}")
        return self.log_tail("cli")

    def wait_for_log(self, log: str, text: str, timeout: float = 60.0) -> None:
        """Wait until ``text`` shows in ``logs/<log>.log``."""
        deadline = time.monotonic() + timeout
        while text not in self.log_tail(log, chars=1_000_000):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{text!r} not in {log}.log after {timeout} s:\n"
                                   f"{self.log_tail(log)}")
            time.sleep(0.25)

    def wait_for_state(self, flow_run_id: str, final: set[str], timeout: float = 90.0) -> str:
        """Poll a flow run until its state type is one of ``final``; that state type."""
        deadline = time.monotonic() + timeout
        while True:
            state = str(self.api("GET", f"/flow_runs/{flow_run_id}")["state"]["type"])
            if state in final or time.monotonic() > deadline:
                return state
            time.sleep(0.5)

    def log_tail(self, log: str, chars: int = 4000) -> str:
        path = self.logs / f"{log}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def api(self, method: str, path: str, **kwargs: Any) -> Any:
        """Call the REST API; the decoded JSON reply.

        A busy SQLite server answers 503 now and then (database locked): retried.
        """
        for attempt in range(8):
            response = self.http.request(method, path, **kwargs)
            if response.status_code not in (502, 503, 504):
                break
            time.sleep(0.25 * (attempt + 1))
        response.raise_for_status()
        return response.json()
