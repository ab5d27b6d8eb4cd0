"""hr's own server (``hr server start``) for end-to-end tests of schedules and serving.

:class:`HrServer` is :class:`e2e_support.PrefectServer` started the way a user starts
it, ``hr server start --port N`` with its own ``PREFECT_HOME``, and stopped with
``hr server stop`` (then its process group, whatever happened); workers, ``serve``
and CLI calls are spawned through it and stopped by their process groups.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from e2e_support import PrefectServer

__all__ = ["FAST_SCHEDULER", "HR", "HrServer", "scheduled_runs"]

HR = str(Path(sys.executable).with_name("hr"))
FAST_SCHEDULER = {
    # Prefect's own settings: its scheduler loops every 60 s and the loop for newly
    # changed deployments every 5 s; a test waits for neither
    "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "2",
    "PREFECT_SERVER_SERVICES_SCHEDULER_RECENT_DEPLOYMENTS_LOOP_SECONDS": "1",
    "PREFECT_SERVER_SERVICES_SCHEDULER_MIN_RUNS": "1",
    "PREFECT_SERVER_SERVICES_SCHEDULER_MAX_RUNS": "3",
}


class HrServer(PrefectServer):
    """``hr server start`` on a free port with its own ``PREFECT_HOME``.

    Args:
        home: its ``PREFECT_HOME``.
        cwd: where the processes spawned through it run (the project root).
        server_env: extra environment of the server (e.g. :data:`FAST_SCHEDULER`).
    """

    def __init__(self, home: Path, cwd: Path, *, server_env: dict[str, str] | None = None,
                 startup_timeout: float = 180.0) -> None:
        super().__init__(home, cwd, startup_timeout=startup_timeout)
        self.server_env.update(server_env or {})
        self.log_file = home / "hr-server.log"

    def hr(self, *args: str, timeout: float = 240.0) -> subprocess.CompletedProcess[str]:
        """Run ``hr ARGS`` with the server's ``PREFECT_HOME`` (no ``PREFECT_API_URL``)."""
        return subprocess.run([HR, *args], env=self.server_env, cwd=self.cwd,
                              capture_output=True, text=True, timeout=timeout, check=False)

    def __enter__(self) -> HrServer:
        import httpx

        self.home.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(parents=True, exist_ok=True)
        started = self.hr("server", "start", "--port", str(self.port),
                          "--timeout", str(int(self.startup_timeout)),
                          timeout=self.startup_timeout + 60)
        if started.returncode != 0:
            self._kill_recorded()
            raise RuntimeError(f"hr server start exited {started.returncode}:\n"
                               f"{started.stdout}{started.stderr}")
        self.pid = int(json.loads((self.home / "hr-server.json").read_text())["pid"])
        # the server is private: its clients take the secret as a user's do, from the
        # profile `hr` that hr server start wrote (PREFECT_PROFILE=hr, docs/operations.md)
        self.env.pop("PREFECT_API_URL", None)
        self.env["PREFECT_PROFILE"] = "hr"
        secret = (self.home / "hr-server.auth").read_text().strip()
        user, _, password = secret.partition(":")
        self.http = httpx.Client(base_url=self.api_url, timeout=30, auth=(user, password))
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            super().__exit__(*exc)
        finally:
            with contextlib.suppress(Exception):
                self.hr("server", "stop", timeout=60)
            self._kill_recorded()

    def _kill_recorded(self) -> None:
        with contextlib.suppress(FileNotFoundError, ValueError, KeyError):
            pid = int(json.loads((self.home / "hr-server.json").read_text())["pid"])
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(AttributeError, ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)

    def server_log(self, chars: int = 4000) -> str:
        """The end of ``$PREFECT_HOME/hr-server.log``."""
        try:
            return self.log_file.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def deployment(self, name: str) -> dict[str, Any]:
        """The deployment ``flow/name`` as the API returns it."""
        return dict(self.api("GET", f"/deployments/name/{name}"))


def scheduled_runs(server: PrefectServer, deployment_id: str) -> list[dict[str, Any]]:
    """The flow runs the scheduler made for a deployment (``auto_scheduled``), oldest first."""
    rows = server.api("POST", "/flow_runs/filter", json={
        "flow_runs": {"deployment_id": {"any_": [deployment_id]}},
        "sort": "EXPECTED_START_TIME_ASC", "limit": 50})
    return [r for r in rows if r.get("auto_scheduled")]


def wait_until(check: Any, timeout: float, every: float = 0.5) -> Any:
    """Call ``check`` until it returns something true, at most ``timeout`` seconds; its
    last result."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(every)
