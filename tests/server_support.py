"""What the tests of ``hr server`` share: an ``hr`` process's
environment with its own ``PREFECT_HOME``, a real ``/api/health`` server, and whether
a server's process (group) is gone.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from hr_core.core.process import group_alive, pid_alive

__all__ = ["gone", "health_server", "hr_env"]


def hr_env(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment for an ``hr`` command run with ``PREFECT_HOME=home``:
    no other ``PREFECT_*`` setting, no ``DO_NOT_TRACK`` (turning analytics off is hr's
    job); ``COLUMNS=200`` unless ``extra`` says otherwise; then ``extra``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PREFECT_") and k != "DO_NOT_TRACK"}
    env.update(PREFECT_HOME=str(home), COLUMNS="200")
    env.update(extra)
    return env


class _Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"true")

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def health_server() -> Iterator[http.server.ThreadingHTTPServer]:
    """A real HTTP server on 127.0.0.1 (a free port) answering every ``GET`` (so
    ``/api/health``) with 200 ``true``, as Prefect's does; closed after (closing it
    inside the block is allowed)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def gone(pid: int) -> bool:
    """Neither the process ``pid`` nor any process of its group runs."""
    return not pid_alive(pid) and not group_alive(pid)
