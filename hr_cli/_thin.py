"""The thin ``hr`` client: hand a command to the warm runner (``hr_cli.runner``) when it is up.

Standard library only, and nothing of hr that would import it: ``hr run`` through
the runner imports neither Prefect nor pandas. The client passes its own
terminal (file descriptors 0, 1 and 2, by ``SCM_RIGHTS``) with the command, its
working directory, environment and ``sys.path``; the runner's child writes
straight to that terminal (progress bars included). SIGINT, SIGTERM and SIGHUP
received here are forwarded to the child; the client exits with the child's
status. When no runner answers, or it declines (another Python, other Prefect
settings), :func:`run_in_runner` returns ``None`` and ``hr`` runs the command
itself, as it always did.
"""

from __future__ import annotations

import _socket  # not socket.py: its selectors, array and enum are ~1/3 of the client's imports
import json
import os
import signal
import stat
import struct
import sys

TYPE_CHECKING = False  # typing and pathlib are not imported by the thin client
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

__all__ = ["MAGIC", "THIN_COMMANDS", "run_in_runner", "socket_path", "wants_runner"]

MAGIC = b"HR1"
THIN_COMMANDS = frozenset({"run", "demo", "rescore", "compare", "summary", "report", "show",
                           "diff", "plan"})
"""The commands the runner runs (and ``judge validate``, and any ``--help``)."""
_MAX_UNIX_PATH = 100  # sun_path holds 108 bytes on Linux, 104 on macOS


def _home(env: Any = None, home: str | None = None) -> str:
    env = os.environ if env is None else env
    return os.path.abspath(os.path.expanduser(home or env.get("PREFECT_HOME") or "~/.prefect"))


def _socket_file(home: str) -> str:
    path = os.path.join(home, "hr-runner", "sock")
    if len(os.fsencode(path)) <= _MAX_UNIX_PATH:
        return path
    import hashlib  # OpenSSL: only for a long home (~5-10 ms of the client's start)
    import tempfile

    digest = hashlib.sha256(os.fsencode(home)).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), f"hr-runner-{os.getuid()}-{digest}", "sock")


def socket_path(home: Path | None = None) -> Path:
    """Where the runner of this ``PREFECT_HOME`` listens: ``$PREFECT_HOME/hr-runner/sock``,
    or, when that path is too long for a Unix socket, a folder of the temporary directory
    named by the home's hash (both owner-only, 0700)."""
    from pathlib import Path

    return Path(_socket_file(_home(home=None if home is None else str(home))))


def owner_only(path: str) -> bool:
    """``path`` (a socket) and its folder belong to this user and nobody else may use them."""
    try:
        folder, sock = os.lstat(os.path.dirname(path)), os.lstat(path)
    except OSError:
        return False
    uid = os.getuid()
    return (stat.S_ISDIR(folder.st_mode) and folder.st_uid == uid
            and not folder.st_mode & 0o077 and stat.S_ISSOCK(sock.st_mode)
            and sock.st_uid == uid)


def wants_runner(argv: list[str]) -> bool:
    """Whether this command line is one the runner runs: those above, the read-only
    commands (their pandas is imported there) and every ``--help`` (typer and rich are);
    never ``hr server`` (it starts and stops the runner)."""
    if os.environ.get("HR_RUNNER", "") in ("0", "off", "no"):
        return False
    if not argv or "--help" in argv or "-h" in argv:
        return True
    return argv[0] in THIN_COMMANDS or argv[:2] == ["judge", "validate"]


def _terminal_fds() -> list[int]:
    fds = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:  # closed: the child gets /dev/null there, as a closed fd reads
            fd = os.open(os.devnull, os.O_RDWR)
        fds.append(fd)
    return fds


def _request(argv: list[str]) -> bytes:
    umask = os.umask(0o022)
    os.umask(umask)
    return json.dumps({
        "argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "path": sys.path,
        "executable": sys.executable, "prefix": sys.prefix, "umask": umask,
    }).encode()


def _connect(path: str) -> _socket.socket | None:
    if not owner_only(path):
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(5.0)
        sock.connect(path)
    except OSError:  # a stale socket (runner gone) or a full backlog: run here
        sock.close()
        return None
    return sock


class _Lines:
    """Lines read from the runner's connection (what ``socket.makefile`` would give)."""

    def __init__(self, sock: _socket.socket) -> None:
        self.sock, self.buffer = sock, b""

    def readline(self) -> bytes:
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(4096)
            if not chunk:
                line, self.buffer = self.buffer, b""
                return line
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line + b"\n"


def _send_all(sock: _socket.socket, data: bytes, fds: list[int] | None = None) -> None:
    """``sendall``, the descriptors (``SCM_RIGHTS``) with the first bytes when given."""
    view = memoryview(data)
    if fds is not None:
        rights = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack(f"{len(fds)}i", *fds))]
        view = view[sock.sendmsg([view], rights):]
    sock.sendall(view)


def run_in_runner(argv: list[str]) -> int | None:
    """Run ``hr ARGV`` in the warm runner; its exit status, or ``None`` to run it here.

    Example:
        >>> run_in_runner(["run", "spec.yaml"])  # doctest: +SKIP
        0
    """
    sock = _connect(_socket_file(_home()))
    if sock is None:
        return None
    try:
        body = _request(argv)
        try:
            _send_all(sock, MAGIC + struct.pack(">I", len(body)), _terminal_fds())
            _send_all(sock, body)
            del body  # the environment (keys included) lives in memory only
            reader = _Lines(sock)
            sock.settimeout(None)
            first = reader.readline().decode(errors="replace").split(maxsplit=1)
        except OSError:
            return None
        if first[:1] != ["started"]:
            if os.environ.get("HR_DEBUG", "") not in ("", "0") and first:
                print(f"hr: the warm runner declined ({' '.join(first)}); running here",
                      file=sys.stderr)
            return None
        return _follow(sock, reader)
    finally:
        sock.close()


def _follow(sock: _socket.socket, reader: _Lines) -> int:
    """Forward signals to the child until the runner (or the child) reports its status."""
    def forward(signum: int, frame: Any) -> None:
        try:  # noqa: SIM105 (contextlib is one import more for the client)
            sock.sendall(f"signal {signum}\n".encode())
        except OSError:
            pass

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, forward)
    while True:
        try:
            line = reader.readline()
        except OSError:
            line = b""
        if not line:
            print("hr: the warm runner stopped before the command ended (`hr server stop` "
                  "or a crash); run it again to resume", file=sys.stderr)
            return 1
        words = line.decode(errors="replace").split()
        if words[:1] == ["exit"] and len(words) == 2 and words[1].lstrip("-").isdigit():
            return int(words[1])
