"""The warm runner's process: Prefect, pandas, pyarrow and hr imported once, a child per command.

``python -m hr_cli._warm --api-url URL --server-pid PID`` (started by ``hr server
start``, see ``hr_cli.runner``) imports what ``hr run`` needs, then listens on an
owner-only Unix socket (``hr_cli._thin.socket_path``). For each request it forks
a child that takes the client's terminal (``dup2`` of the passed descriptors),
working directory, umask, environment and ``sys.path``, and runs hr's own
command line in-process (``hr_cli.main``): user modules (arms, scorers) are
imported in the child only, fresh each time, and a child that crashes or calls
``os._exit`` ends alone. The parent reports each child's exit status to its
client and delivers the signals the client forwards.

Forking is only safe while the parent runs one thread: it imports modules and
never starts a Prefect client, an event loop or a thread (checked at start).
A request whose Prefect settings would differ from those imported here (other
``PREFECT_*`` variables, a ``.env``/``prefect.toml`` in its folder, another
Python) is declined: the client then runs the command itself. Requests never
reach the log: it names commands by their first word and exit status only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import linecache
import os
import selectors
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

from hr_cli._thin import MAGIC, THIN_COMMANDS, socket_path
from hr_cli._warm_child import run_child  # imported once here, not in each child

__all__ = ["main", "prefect_key"]

_MAX_REQUEST = 16 << 20
_SERVER_CHECK_S = 2.0
_SETTINGS_FILES = (".env", "prefect.toml")


def prefect_key(env: dict[str, str], api_url: str | None) -> dict[str, str]:
    """What decides Prefect's settings in ``env``, with hr's defaults applied as ``hr``
    applies them before importing Prefect (``hr_cli.quiet``, ``prepare_prefect``, the hr
    server's URL when none is set)."""
    key = {k: v for k, v in env.items() if k.startswith("PREFECT_") or k == "DO_NOT_TRACK"}
    key.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    key.setdefault("DO_NOT_TRACK", "1")
    key.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "WARNING")
    if api_url is not None:
        key.setdefault("PREFECT_API_URL", api_url)
    return key


def _profiles_mtime() -> float | None:
    from hr_cli.server import prefect_home

    path = Path(os.environ.get("PREFECT_PROFILES_PATH")
                or prefect_home() / "profiles.toml").expanduser()
    with contextlib.suppress(OSError):
        return path.stat().st_mtime
    return None


class Runner:
    """The listening parent: accepts requests, forks children, reports their ends."""

    def __init__(self, api_url: str | None, server_pid: int) -> None:
        self.api_url, self.server_pid = api_url, server_pid
        self.key = prefect_key(dict(os.environ), api_url)
        self.profiles = _profiles_mtime()
        self.path = socket_path()
        self.selector = selectors.DefaultSelector()
        self.children: dict[int, tuple[socket.socket | None, int]] = {}  # pid: (conn, pidfd)
        self.listener: socket.socket | None = None
        self.stopping = False
        self.wake_r, self.wake_w = socket.socketpair()

    def listen(self) -> None:
        """Bind the socket in an owner-only folder, owner-only itself."""
        folder = self.path.parent
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(folder, 0o700)
        if folder.stat().st_uid != os.getuid():
            raise SystemExit(f"hr runner: {folder} belongs to another user; not listening")
        self.path.unlink(missing_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            listener.bind(str(self.path))
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        listener.listen(64)
        listener.setblocking(False)
        self.listener = listener
        self.selector.register(listener, selectors.EVENT_READ, "accept")
        for sock in (self.wake_r, self.wake_w):
            sock.setblocking(False)
        self.selector.register(self.wake_r, selectors.EVENT_READ, "wake")
        signal.set_wakeup_fd(self.wake_w.fileno(), warn_on_full_buffer=False)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.stopping = True

    def serve(self) -> None:
        """Until SIGTERM (or the hr server is gone) and every child has ended."""
        checked = time.monotonic()
        terminated_at: float | None = None
        while True:
            if self.stopping and self.listener is not None:
                self._close_listener()
                terminated_at = time.monotonic()
                for pid in self.children:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGTERM)
            if self.listener is None and not self.children:
                return
            if terminated_at is not None and time.monotonic() - terminated_at > 10:
                for pid in self.children:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
            for key, _ in self.selector.select(timeout=1.0):
                try:
                    self._event(key)
                except Exception as exc:  # one bad event must not end the runner
                    print(f"hr runner: error handling an event: {type(exc).__name__}: {exc}",
                          flush=True)
            if time.monotonic() - checked > _SERVER_CHECK_S:
                checked = time.monotonic()
                if self.listener is not None and not self._server_alive():
                    print("hr runner: the hr server is gone; stopping", flush=True)
                    self._close_listener()

    def _server_alive(self) -> bool:
        from hr_core._process import pid_alive

        return pid_alive(self.server_pid)

    def _close_listener(self) -> None:
        if self.listener is not None:
            self.selector.unregister(self.listener)
            self.listener.close()
            self.listener = None
            with contextlib.suppress(OSError):
                self.path.unlink()

    def _event(self, key: selectors.SelectorKey) -> None:
        what = key.data
        if what == "wake":
            with contextlib.suppress(OSError):
                self.wake_r.recv(512)
        elif what == "accept" and self.listener is not None:
            with contextlib.suppress(BlockingIOError):
                conn, _ = self.listener.accept()
                self._accept(conn)
        elif isinstance(what, tuple) and what[0] == "exit" and what[1] in self.children:
            self._reap(what[1])
        elif (isinstance(what, tuple) and what[0] == "conn"
              and self.children.get(what[1], (None,))[0] is key.fileobj):
            # (not when this select also returned the child's end, reaped just before:
            # its client, told the status by the child, may have left already)
            self._message(what[1], key.fileobj)

    def _accept(self, conn: socket.socket) -> None:
        fds: list[int] = []
        try:
            conn.settimeout(10.0)
            if not self._same_user(conn):
                conn.close()
                return
            head, fds, _, _ = socket.recv_fds(conn, 7, 3)
            while 0 < len(head) < 7:
                head += conn.recv(7 - len(head))
            if head[:3] != MAGIC or len(fds) != 3:
                raise ValueError("not an hr request")
            size = struct.unpack(">I", head[3:7])[0]
            if size > _MAX_REQUEST:
                raise ValueError("request too large")
            body = bytearray()
            while len(body) < size:
                chunk = conn.recv(min(1 << 20, size - len(body)))
                if not chunk:
                    raise ValueError("request cut short")
                body += chunk
            request = json.loads(bytes(body))
            del body
        except (OSError, ValueError):  # a probe (hr server start waits for one), or garbage
            for fd in fds:
                os.close(fd)
            conn.close()
            return
        reason = self._decline(request)
        if reason is not None:
            for fd in fds:
                os.close(fd)
            with contextlib.suppress(OSError):
                conn.sendall(f"declined {reason}\n".encode())
            conn.close()
            return
        self._fork(conn, fds, request)

    @staticmethod
    def _same_user(conn: socket.socket) -> bool:
        if not hasattr(socket, "SO_PEERCRED"):
            return True  # macOS: the folder's 0700 is the check
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", creds)[1] == os.getuid()

    def _decline(self, request: dict[str, Any]) -> str | None:
        """Why this request cannot run here (``None``: it can)."""
        if request.get("executable") != sys.executable or request.get("prefix") != sys.prefix:
            return "another-python"
        env = request.get("env")
        if not isinstance(env, dict) or prefect_key(env, self.api_url) != self.key:
            return "other-prefect-settings"
        cwd = Path(str(request.get("cwd", "")))
        if any((cwd / name).is_file() for name in _SETTINGS_FILES):
            return "prefect-settings-file"
        with contextlib.suppress(OSError, UnicodeDecodeError):
            if "[tool.prefect" in (cwd / "pyproject.toml").read_text(encoding="utf-8"):
                return "prefect-settings-file"
        if _profiles_mtime() != self.profiles:
            return "profiles-changed"
        if not self._server_alive():
            return "server-gone"
        return None

    def _fork(self, conn: socket.socket, fds: list[int], request: dict[str, Any]) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        linecache.clearcache()  # empty in every child: clearing it there copies its pages
        pid = os.fork()
        if pid == 0:  # the child: never returns
            keep = {conn.fileno(), *fds}
            self._close_all(keep)
            run_child(fds, request, self.api_url, status_fd=conn.fileno())
        for fd in fds:
            os.close(fd)
        word = str((request.get("argv") or ["(help)"])[0])
        known = THIN_COMMANDS | {"judge", "server", "--help", "-h"}
        print(f"hr runner: pid {pid} hr {word if word in known else '...'}", flush=True)
        pidfd = os.pidfd_open(pid)
        self.children[pid] = (conn, pidfd)
        self.selector.register(pidfd, selectors.EVENT_READ, ("exit", pid))
        conn.setblocking(False)
        self.selector.register(conn, selectors.EVENT_READ, ("conn", pid))
        with contextlib.suppress(OSError):
            conn.sendall(f"started {pid}\n".encode())

    def _close_all(self, keep: set[int]) -> None:
        """In a new child: close what is the parent's (sockets of other clients, pidfds)."""
        signal.set_wakeup_fd(-1)
        for sock in (self.listener, self.wake_r, self.wake_w):
            if sock is not None:
                sock.close()
        for other, pidfd in self.children.values():
            if other is not None and other.fileno() not in keep:
                other.close()
            os.close(pidfd)
        self.selector.close()

    def _message(self, pid: int, conn: socket.socket) -> None:
        try:
            data = conn.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:  # the client is gone: stop its run as SIGTERM would (resumable)
            self.selector.unregister(conn)
            conn.close()
            self.children[pid] = (None, self.children[pid][1])
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            return
        for line in data.decode(errors="replace").splitlines():
            words = line.split()
            if words[:1] == ["signal"] and len(words) == 2 and words[1].isdigit():
                signum = int(words[1])
                if signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signum)

    def _reap(self, pid: int) -> None:
        conn, pidfd = self.children.pop(pid)
        self.selector.unregister(pidfd)
        os.close(pidfd)
        _, status, usage = os.wait4(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        code = 128 - code if code < 0 else code  # killed by signal N: 128 + N, as a shell
        print(f"hr runner: pid {pid} exit {code} cpu {usage.ru_utime + usage.ru_stime:.2f} s",
              flush=True)
        if conn is not None:
            self.selector.unregister(conn)
            with contextlib.suppress(OSError):
                conn.setblocking(True)
                conn.sendall(f"exit {code}\n".encode())
            conn.close()


_PRELOAD = (
    "flows", "flows.compare", "flows.judge_validate", "hr_cli.app", "hr_cli.commands",
    "hr_cli.demo", "hr_cli.show", "hr_cli.plan",
    # what a run imports on its way (found by diffing sys.modules around one `hr run`):
    # each is ~0.5 s of a child's wall on a busy machine when left to it
    "prefect.engine", "prefect.flow_engine", "prefect.task_engine",
    "prefect.utilities.visualization", "prefect.telemetry.run_telemetry",
    "prefect.concurrency.v1.context", "prefect._internal.control_listener",
    "anyio._backends._asyncio", "anyio.streams.memory", "anyio.streams.stapled",
    "anyio.streams.tls", "encodings.idna", "stringprep", "fsspec.implementations.chained",
    "pyarrow.parquet", "pyarrow.dataset", "pyarrow.pandas_compat", "pyarrow.csv",
    "pandas.io.formats.csvs", "pandas.core.methods.to_dict",
    "pandas.core.arrays.arrow.extension_types", "hr_core.models.openai_client",
    "hr_core.report.figures", "rich._emoji_codes", "typer._adapters",
    "typer._click.decorators",
)
"""Modules imported before forking: hr's, Prefect's and their dependencies, never user code."""


def _warm_up(api_url: str | None) -> None:
    """Set the environment as ``hr`` does before Prefect, then import what commands need."""
    from hr_cli.commands import prepare_prefect

    prepare_prefect()
    if api_url is not None:
        os.environ["PREFECT_API_URL"] = api_url
    from hr_cli.gcpause import import_paused

    for name in _PRELOAD[:5]:
        import_paused(name)
    for name in _PRELOAD[5:]:  # a speed-up only: one renamed or gone is left to the child
        try:
            import_paused(name)
        except ImportError as exc:
            print(f"hr runner: not preloaded: {name} ({exc})", flush=True)
    from hr_cli import click_command
    from hr_cli.app import app

    click_command(app)


def main(argv: list[str] | None = None) -> None:
    """Import, check there is one thread, listen, serve."""
    parser = argparse.ArgumentParser(prog="python -m hr_cli._warm")
    parser.add_argument("--api-url")
    parser.add_argument("--server-pid", type=int, required=True)
    args = parser.parse_args(argv)
    from hr_cli.server import configured_elsewhere

    api_url = None if (os.environ.get("PREFECT_API_URL") or configured_elsewhere()
                       ) else args.api_url
    started = time.monotonic()
    _warm_up(api_url)
    if threading.active_count() != 1:
        names = [t.name for t in threading.enumerate()]
        raise SystemExit(f"hr runner: {len(names)} threads after the imports ({names}); "
                         "forking would be unsafe, not listening")
    runner = Runner(api_url, args.server_pid)
    runner.listen()
    print(f"hr runner: pid {os.getpid()} ready in {time.monotonic() - started:.1f} s on "
          f"{runner.path}", flush=True)
    runner.serve()
    print("hr runner: stopped", flush=True)


if __name__ == "__main__":
    main()
