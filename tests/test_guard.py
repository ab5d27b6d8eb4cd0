"""hr_server/guard.py: the watchdog beside a server hr starts is gone when hr is.

A CI run found a process of hr's left a moment after ``hr run`` had exited: the
watchdog only learns that hr ended when the pipe closes, and on a loaded
machine it may not even have started by then.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _with_marker(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def _script(body: str) -> str:
    return textwrap.dedent("""
        import subprocess, sys
        from hr_server.guard import guard
        served = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    """) + textwrap.dedent(body)


def _run(body: str, marker: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, HR_GUARD_MARKER=marker, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", _script(body)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)


def test_a_normal_exit_stops_the_server_and_leaves_no_watchdog() -> None:
    marker = f"HR_GUARD_MARKER=normal-{os.getpid()}-{time.monotonic_ns()}"
    try:
        done = _run("guard(served.pid)\nserved.terminate()\nserved.wait()\n",
                    marker.split("=", 1)[1])
        assert done.returncode == 0, done.stderr
        assert _with_marker(marker) == []  # at once: neither the server nor its watchdog
    finally:
        for pid in _with_marker(marker):
            os.kill(pid, 9)


def test_a_killed_process_still_has_its_server_stopped() -> None:
    marker = f"HR_GUARD_MARKER=killed-{os.getpid()}-{time.monotonic_ns()}"
    try:
        done = _run("guard(served.pid)\nimport os, time\ntime.sleep(1)\n"
                    "os.kill(os.getpid(), 9)\n", marker.split("=", 1)[1])
        assert done.returncode == -9, done.stderr
        deadline = time.monotonic() + 15
        while _with_marker(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _with_marker(marker) == []
    finally:
        for pid in _with_marker(marker):
            os.kill(pid, 9)
