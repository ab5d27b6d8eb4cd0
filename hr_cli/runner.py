"""The warm hr runner beside the hr server: started by ``hr server start``, stopped by ``stop``.

One process (``hr_cli._warm``) that has imported Prefect, pandas, pyarrow and
hr, listening on an owner-only Unix socket of ``PREFECT_HOME``
(``hr_cli._thin.socket_path``). ``hr run``, ``hr demo``, ``hr rescore``, ``hr
compare`` and ``hr judge validate`` then import neither Prefect nor pandas: they
pass their terminal, folder and environment to it, and it runs each command in a
forked child (``hr_cli._warm_child``). Its PID is recorded in
``$PREFECT_HOME/hr-runner.json``, its log is ``hr-runner.log`` (commands named
by their first word only: no arguments, no environment). It runs in its own
process group with its children; stopping it ends them (SIGTERM: their journals
flushed, resumable). It stops by itself when the hr server's process is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from hr_cli._thin import socket_path

__all__ = ["RUNNER_FILE", "RunnerState", "runner_state", "start_runner", "stop_runner",
           "wait_ready"]

RUNNER_FILE = "hr-runner.json"
RUNNER_LOG = "hr-runner.log"


@dataclass(frozen=True)
class RunnerState:
    """What ``hr server start`` recorded about the runner it started."""

    pid: int
    server_pid: int
    socket: str
    log: str
    started_at: str


def _record(home: Path) -> Path:
    return home / RUNNER_FILE


def _is_runner(pid: int) -> bool:
    """``pid`` runs and is an hr runner (guards against a reused PID)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (macOS): trust the record
    return b"hr_cli._warm" in cmdline and stat.rsplit(")", 1)[-1].split()[0] != "Z"


def runner_state(home: Path) -> RunnerState | None:
    """The recorded runner when its process runs, else ``None``."""
    try:
        data = json.loads(_record(home).read_text(encoding="utf-8"))
        state = RunnerState(**{k: data[k] for k in ("pid", "server_pid", "socket", "log",
                                                     "started_at")})
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return state if _is_runner(state.pid) else None


def _answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.settimeout(2.0)
            sock.connect(str(path))
        except OSError:
            return False
    return True


def start_runner(home: Path, api_url: str,
                 server_pid: int) -> tuple[RunnerState, subprocess.Popen[bytes] | None]:
    """Start the runner for the hr server ``server_pid`` (or find it); returns its state
    and the process when started here (:func:`wait_ready` waits for it to listen).
    A runner of another (earlier) server is stopped first."""
    current = runner_state(home)
    if current is not None and current.server_pid == server_pid:
        return current, None
    stop_runner(home)
    home = home.absolute()
    log = home / RUNNER_LOG
    with log.open("ab") as handle:
        handle.write(f"\n--- hr runner start {datetime.now(UTC).isoformat()}\n".encode())
        handle.flush()
        proc = subprocess.Popen(
            [sys.executable, "-m", "hr_cli._warm", "--api-url", api_url,
             "--server-pid", str(server_pid)],
            stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT,
            cwd=str(home), start_new_session=True, env=dict(os.environ, PREFECT_HOME=str(home)))
    state = RunnerState(pid=proc.pid, server_pid=server_pid, socket=str(socket_path(home)),
                        log=str(log), started_at=datetime.now(UTC).isoformat(timespec="seconds"))
    tmp = _record(home).with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(state), indent=2) + "\n", encoding="utf-8")
    tmp.replace(_record(home))
    return state, proc


def wait_ready(state: RunnerState, proc: subprocess.Popen[bytes] | None,
               timeout: float) -> bool:
    """Wait until the runner listens (at most ``timeout`` s); ``False`` when it exited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        if _answers(Path(state.socket)):
            return True
        time.sleep(0.1)
    return False


def stop_runner(home: Path, grace: float = 15.0) -> int | None:
    """Stop the recorded runner and its children (SIGTERM, SIGKILL after ``grace`` s);
    remove its record and socket. Returns its PID when one was running."""
    from hr_core._process import group_alive

    state = runner_state(home)
    pid = state.pid if state is not None else None
    if pid is not None:
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, sig)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and (group_alive(pid) or _is_runner(pid)):
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
                time.sleep(0.05)
            if not group_alive(pid) and not _is_runner(pid):
                break
    _record(home).unlink(missing_ok=True)
    path = socket_path(home)
    with contextlib.suppress(OSError):
        path.unlink()
    with contextlib.suppress(OSError):
        path.parent.rmdir()
    return pid
