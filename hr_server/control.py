"""The hr server: one local Prefect server that hr starts in the background and reuses.

``hr server start`` runs ``prefect server start`` on 127.0.0.1 in its own
process group (so ``stop`` ends it and every process it started), with the UI
pointed at its own API port and analytics off, and records its PID and port in
``$PREFECT_HOME/hr-server.json`` (its log: ``$PREFECT_HOME/hr-server.log``).
Every ``hr`` command and ``hr_benchmark``/``hr_compare``/``hr_judge_validate``
then talk to it (``flows.clients``) unless ``PREFECT_API_URL`` is set; without
it they start Prefect's temporary server, as Prefect does, and say once that
``hr server start`` makes runs faster and keeps them in the dashboard.

``hr run`` never starts the server on its own: a command leaves no process
behind. Runs made without it are stored in the same ``PREFECT_HOME``
database, so the dashboard of a server started later shows them too.

This module imports neither Prefect nor the network at import time: ``hr
server status`` answers in a fraction of a second.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from hr_core.core.process import group_alive, pid_alive
from hr_server.database import check_database
from hr_server.errors import ServerError
from hr_server.ports import free_port, healthy, listens, port_free
from hr_server.private import (
    AUTH_FILE,
    PROFILES_FILE,
    UMASK,
    auth_string,
    ensure_auth_string,
    make_home,
    open_private,
    tighten,
    write_private,
    write_profile,
)
from hr_server.quiet import quiet_defaults

__all__ = [
    "DEFAULT_PORT",
    "STATE_FILE",
    "ServerError",
    "ServerState",
    "ServerStatus",
    "api_env_to_preset",
    "prefect_home",
    "server_status",
    "start_server",
    "state_path",
    "stop_server",
]

STATE_FILE = "hr-server.json"
LOG_FILE = "hr-server.log"
DEFAULT_PORT = 4200  # Prefect's own default, when free

Status = Literal["running", "not-responding", "stale", "stopped"]


@dataclass(frozen=True)
class ServerState:
    """What ``hr server start`` recorded about the server it started."""

    pid: int
    port: int
    home: str
    log: str
    started_at: str

    @property
    def url(self) -> str:
        """The dashboard (Prefect UI)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        """The Prefect API (``PREFECT_API_URL``)."""
        return f"{self.url}/api"

    def auth(self) -> str | None:
        """The API secret (``PREFECT_API_AUTH_STRING``; ``hr_server.private``), ``None``
        when this ``PREFECT_HOME`` has none (a server started by an hr before it)."""
        return auth_string(Path(self.home))


@dataclass(frozen=True)
class ServerStatus:
    """``status`` of the recorded server (``state`` is ``None`` when none is recorded)."""

    status: Status
    state: ServerState | None
    path: Path

    def describe(self) -> str:
        """One line for the terminal."""
        s = self.state
        if s is None or self.status == "stopped":
            return "no hr server is running (`hr server start` starts one)"
        if self.status == "running":
            return f"hr server running: dashboard {s.url} (API {s.api_url}, pid {s.pid})"
        if self.status == "not-responding":
            return (f"hr server pid {s.pid} is running but does not answer on {s.api_url} "
                    f"(log: {s.log}); `hr server stop` then `hr server start`")
        return (f"the hr server recorded in {self.path} (pid {s.pid}, port {s.port}) is "
                f"gone; `hr server start` starts a new one (log: {s.log})")


def prefect_home() -> Path:
    """Prefect's home folder: ``$PREFECT_HOME``, else ``~/.prefect`` (Prefect's default)."""
    return Path(os.environ.get("PREFECT_HOME") or "~/.prefect").expanduser()


def state_path(home: Path | None = None) -> Path:
    """Where the hr server's PID and port are recorded."""
    return (home or prefect_home()) / STATE_FILE


_STARTED: dict[int, subprocess.Popen[bytes]] = {}  # servers this process started (reaped)


def process_alive(pid: int) -> bool:
    """Whether ``pid`` runs (:func:`hr_core.core.process.pid_alive`); a server this process
    started that has ended is reaped first (its ``Popen`` keeps its exit status)."""
    proc = _STARTED.get(pid)
    if proc is not None and proc.poll() is not None:
        _STARTED.pop(pid, None)
        return False
    return pid_alive(pid)


def is_prefect_server(pid: int) -> bool:
    """The process looks like ``prefect server start`` (guards against a reused PID)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no /proc (macOS): trust the record
    return b"server" in cmdline and b"start" in cmdline


def _read_state(path: Path) -> ServerState | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return ServerState(**{k: data[k] for k in ("pid", "port", "home", "log", "started_at")})
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ServerError(f"{path}: not a record of the hr server ({exc}); delete it and run "
                          "`hr server start`") from None


def server_status(home: Path | None = None, *, check_health: bool = True) -> ServerStatus:
    """The recorded server's status: running, not-responding, stale (PID gone) or stopped.

    Never waits longer than ``hr_server.ports.HEALTH_TIMEOUT_S``.

    Example:
        >>> server_status().status in ("running", "not-responding", "stale", "stopped")
        True
    """
    path = state_path(home)
    state = _read_state(path)
    if state is None:
        return ServerStatus("stopped", None, path)
    if not process_alive(state.pid) or not is_prefect_server(state.pid):
        return ServerStatus("stale", state, path)
    if check_health and not healthy(state.port):
        return ServerStatus("not-responding", state, path)
    return ServerStatus("running", state, path)


def configured_elsewhere() -> bool:
    """Whether Prefect may find an API URL in a profile or a settings file (then it decides)."""
    if any(Path(name).is_file() for name in (".env", "prefect.toml")):
        return True
    with contextlib.suppress(OSError, ValueError):
        if "[tool.prefect" in Path("pyproject.toml").read_text(encoding="utf-8"):
            return True
    profiles = Path(os.environ.get("PREFECT_PROFILES_PATH")
                    or prefect_home() / "profiles.toml").expanduser()
    try:
        data = tomllib.loads(profiles.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        return True
    active = os.environ.get("PREFECT_PROFILE") or data.get("active") or "ephemeral"
    profile = data.get("profiles", {}).get(active, {})
    return not isinstance(profile, dict) or "PREFECT_API_URL" in profile


def api_env_to_preset() -> dict[str, str]:
    """The hr server's API URL and secret, to set as ``PREFECT_API_URL`` and
    ``PREFECT_API_AUTH_STRING`` before Prefect is imported.

    Empty when Prefect is imported already, when the URL is set (environment,
    profile or a settings file in this folder) or when no hr server answers; only
    the secret when ``PREFECT_API_URL`` names the hr server and no secret is set.
    Setting them up front spares each flow call a settings copy.
    """
    if "prefect" in sys.modules:
        return {}
    explicit = os.environ.get("PREFECT_API_URL")
    try:
        status = server_status(check_health=not explicit)
        state = status.state
        if state is None or status.status not in ("running", "not-responding"):
            return {}
        if explicit:
            secret = state.auth()
            if explicit.rstrip("/") != state.api_url or secret is None or os.environ.get(
                    "PREFECT_API_AUTH_STRING"):
                return {}
            return {"PREFECT_API_AUTH_STRING": secret}
        if status.status != "running" or configured_elsewhere():
            return {}
        secret = state.auth()
    except Exception:  # a bad record is reported where the API is chosen (flows.clients)
        return {}
    env = {"PREFECT_API_URL": state.api_url}
    if secret is not None:
        env["PREFECT_API_AUTH_STRING"] = secret
    return env


def _prefect_command() -> list[str]:
    beside = Path(sys.executable).with_name("prefect")
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("prefect")
    if found is None:
        raise ServerError("the `prefect` command is not installed beside this Python; "
                          "reinstall hr (`make install`)")
    return [found]


def log_tail(log: Path, lines: int = 12) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


def _log_since(log: Path, offset: int) -> str:
    """What the log holds from byte ``offset`` on (this start's part)."""
    try:
        with log.open("rb") as handle:
            handle.seek(offset)
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _spawn(home: Path, port: int, log: Path, auth: str) -> subprocess.Popen[bytes]:
    """``prefect server start`` on 127.0.0.1:``port``: its own session, umask 077, the
    API secret ``auth`` required (Prefect's basic authentication)."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(
        PREFECT_HOME=str(home),
        PREFECT_SERVER_API_HOST="127.0.0.1",
        PREFECT_SERVER_API_PORT=str(port),
        PREFECT_SERVER_API_AUTH_STRING=auth,
        PREFECT_UI_API_URL=f"http://127.0.0.1:{port}/api",
        PREFECT_UI_URL=f"http://127.0.0.1:{port}",
    )

    quiet_defaults(env)  # analytics off unless the user chose them
    with open_private(log) as handle:
        handle.write(f"\n--- hr server start {datetime.now(UTC).isoformat()} port {port}\n"
                     .encode())
        handle.flush()
        return subprocess.Popen(
            [*_prefect_command(), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
            stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT, env=env,
            cwd=str(home), start_new_session=True, umask=UMASK,
        )


def _write_state(path: Path, state: ServerState) -> None:
    write_private(path, json.dumps(asdict(state), indent=2) + "\n")


def _kill_group(pid: int, grace: float = 10.0) -> None:
    """SIGTERM the server's process group, SIGKILL what is left after ``grace`` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not process_alive(pid) and not group_alive(pid):
                _STARTED.pop(pid, None)
                return
            time.sleep(0.1)
    proc = _STARTED.pop(pid, None)
    if proc is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=1)


def start_server(home: Path | None = None, port: int | None = None, *, timeout: float = 120.0,
                 on_wait: Any = None, on_port_taken: Any = None) -> tuple[ServerState, bool]:
    """Start the hr server in the background (or find it running); ``(state, started)``.

    ``port`` ``None`` takes 4200 when free, else any free port; a port that is
    taken raises ``ServerError``. A port another process takes between that check
    and the server's bind (two starts at once) is told to ``on_port_taken(port)``
    and another free port is tried; the port given as ``port`` is not replaced:
    ``ServerError`` says it is in use. Waits until ``/api/health`` answers, at most
    ``timeout`` seconds; a server that exits or never answers is stopped (its
    whole process group) and reported with the end of its log. A record whose
    process is gone is replaced.

    The server is private (``hr_server.private``): ``home`` created 0700 when
    it is created here, every file of it that hr or the server writes 0600, the
    API behind this ``home``'s secret, and the profile ``hr`` of its
    ``profiles.toml`` rewritten with the API URL and secret (also when the server
    runs already).

    Example (not run as a doctest: it needs a server, a model or a run)::

            state, started = start_server()
            state.url
        'http://127.0.0.1:4200'
    """
    home = make_home((home or prefect_home()).expanduser())
    tighten(home, (STATE_FILE, LOG_FILE, AUTH_FILE, PROFILES_FILE))
    current = server_status(home, check_health=False)
    if current.state is not None and current.status != "stale":
        state = current.state
        if _wait_healthy(state, None, min(timeout, 30.0)):
            secret = state.auth()
            if secret is not None:
                write_profile(home, state.api_url, secret)
            return state, False
        raise ServerError(ServerStatus("not-responding", state, current.path).describe())

    path, log = current.path, home / LOG_FILE
    check_database(home)
    secret = ensure_auth_string(home)
    if port is not None and not port_free(port):
        raise ServerError(f"port {port} on 127.0.0.1 is taken by another process; choose "
                          "another with `hr server start --port N`, or leave --port out")
    attempts = 1 if port is not None else 3
    for attempt in range(attempts):
        chosen = port or (DEFAULT_PORT if attempt == 0 and port_free(DEFAULT_PORT)
                          else free_port())
        offset = log.stat().st_size if log.exists() else 0
        proc = _spawn(home, chosen, log, secret)
        _STARTED[proc.pid] = proc
        state = ServerState(pid=proc.pid, port=chosen, home=str(home), log=str(log),
                            started_at=datetime.now(UTC).isoformat(timespec="seconds"))
        _write_state(path, state)  # a concurrent `hr server start` finds it starting
        if on_wait is not None:
            on_wait(state)
        if _wait_healthy(state, proc, timeout):
            write_profile(home, state.api_url, secret)
            return state, True
        exited = proc.poll() is not None
        _kill_group(proc.pid)
        path.unlink(missing_ok=True)
        if exited and _port_taken(chosen, _log_since(log, offset)):
            if port is not None:
                raise ServerError(f"port {port} is in use: another process took it as the "
                                  "server started; choose another with `hr server start "
                                  "--port N`, or leave --port out")
            if on_port_taken is not None:
                on_port_taken(chosen)
            continue
        why = "exited" if exited else f"did not answer in {timeout:.0f} s"
        raise ServerError(f"the Prefect server on port {chosen} {why} (log: {log}):\n"
                          f"{log_tail(log)}")
    raise ServerError(f"the Prefect server could not bind a port in {attempts} attempts: "
                      f"other processes took each as it started (log: {log})")


def _port_taken(port: int, log: str) -> bool:
    """Whether a server that exited failed because another process holds ``port``: its
    log says so (Prefect's own check or uvicorn's bind, anywhere in this start's part,
    however long the traceback after it), or the port is taken now (its group is gone)."""
    return "already in use" in log.lower() or not port_free(port)


def _wait_healthy(state: ServerState, proc: subprocess.Popen[bytes] | None,
                  timeout: float) -> bool:
    """Wait for the server's health check; for one started here (``proc``), the answer
    counts only when the port's listening socket is its process group's: another
    server holding the port answers too, while ours fails to bind it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (proc is not None and proc.poll() is not None) or not process_alive(state.pid):
            return False
        if healthy(state.port, timeout=1.0) and (
                proc is None or listens(state.pid, state.port) is not False):
            return True
        time.sleep(0.2)
    return False


def stop_server(home: Path | None = None) -> ServerStatus:
    """Stop the recorded hr server and every process of its group; forget the record.

    Returns the status it had (``stopped`` when there was none). A stale record
    (its process gone) is only removed.
    """
    current = server_status(home, check_health=False)
    state = current.state
    if state is not None:
        if current.status != "stale" or group_alive(state.pid):
            _kill_group(state.pid)  # a stale leader's group may still hold its uvicorn
            if process_alive(state.pid) or group_alive(state.pid):
                raise ServerError(f"the hr server (pid {state.pid}) did not stop; kill its "
                                  f"process group: kill -9 -{state.pid}")
        current.path.unlink(missing_ok=True)
    return current


def prepare_prefect(verbose: bool = False) -> None:
    """Before Prefect is imported: no analytics (the demo is offline), the hr server's API
    when it runs and nothing else is configured, and, unless
    ``verbose``, Prefect's console logs at WARNING so they do not tear the progress bars
    (the dashboard still receives every log). ``PREFECT_*`` variables set by the user win.
    """
    quiet_defaults()
    os.environ.update(api_env_to_preset())  # the hr server, when it runs, and its secret
    if not verbose:
        os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
