"""Ports of 127.0.0.1 for the hr server: free or taken, answering, and whose they are.

Moved out of ``hr_server.control`` (which starts, finds and stops the server) as they are:
a raw-socket health check (no HTTP library to import), whether a port is free, and
whether the socket listening on it belongs to a given process group (Linux ``/proc``),
so that another server's answer on the port is not taken for ours.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

__all__ = ["HEALTH_TIMEOUT_S", "free_port", "healthy", "listens", "port_free"]

HEALTH_TIMEOUT_S = 2.0


def healthy(port: int, timeout: float = HEALTH_TIMEOUT_S) -> bool:
    """``GET /api/health`` answers 200 (a raw socket: no HTTP library to import)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(b"GET /api/health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            head = sock.recv(64)
    except OSError:
        return False
    return head.split(b" ", 2)[1:2] == [b"200"]


def port_free(port: int) -> bool:
    """Whether this process could bind 127.0.0.1:``port`` right now."""
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A port of 127.0.0.1 that nothing listens on right now (the system's choice)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def listens(pgid: int, port: int) -> bool | None:
    """Whether a process of group ``pgid`` holds the socket listening on 127.0.0.1:``port``
    (Linux ``/proc``); ``None`` when that cannot be told."""
    try:
        lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return None
    wanted = {f"0100007F:{port:04X}", f"00000000:{port:04X}"}
    inodes = {f"socket:[{fields[9]}]" for fields in (line.split() for line in lines)
              if len(fields) > 9 and fields[1] in wanted and fields[3] == "0A"}
    if not inodes:
        return False
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[2]) != pgid:
                continue
            if any(os.readlink(fd) in inodes for fd in (entry / "fd").iterdir()):
                return True
        except (OSError, ValueError, IndexError):
            continue
    return False
