"""Prefect's temporary server as hr starts it (hr_server.temporary): its own process, once.

Before, ``flows.clients.use_prefect_api`` started it through Prefect's
``SubprocessASGIServer``, whose module imports the server stack (FastAPI,
SQLAlchemy, the routers) into the run's process: ~45 MB at the peak of a 1M-run
benchmark. A real ``hr_benchmark`` in a fresh process, no hr server: the run talks to
one server that hr started (two threads asking at once get the same one), the server
stack is not imported by the end of the process (checked by its last ``atexit``
handler), and after it exits neither the server nor its watchdog is left (by PID).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from server_support import hr_env

from hr_core.core.process import pid_alive

ROOT = Path(__file__).resolve().parents[1]

_SCRIPT = textwrap.dedent("""
    import atexit, json, os, sys, threading
    from pathlib import Path

    def last():  # registered first: runs after every other atexit handler
        print("SERVER-STACK", "prefect.server.api.server" in sys.modules, flush=True)
    atexit.register(last)

    from flows import hr_benchmark
    from hr_server.temporary import start_temporary, temporary_api_url
    import hr_server.temporary as temporary

    assert temporary_api_url() is None
    bench = hr_benchmark({"echo": lambda p: p}, [{"id": f"i{k}", "input": f"x{k}",
                          "label": f"x{k}"} for k in range(8)], store=sys.argv[1])
    got = []
    threads = [threading.Thread(target=lambda: got.append(start_temporary(60)))
               for _ in range(4)]
    for t in threads: t.start()
    for t in threads: t.join()
    server = temporary._server[0]
    import httpx
    asked = {name: httpx.post(server.api_url + "/flow_runs/filter", json={}, auth=auth,
                              timeout=30).status_code
             for name, auth in (("none", None), ("secret", tuple(server.auth.split(":", 1))))}
    me = os.getpid()
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                cmd = (entry / "cmdline").read_bytes().split(b"\\0")
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                children.append({"pid": int(entry.name), "uvicorn": b"uvicorn" in cmd})
    print("STATE", json.dumps({
        "runs": int(bench.summary()["runs"].iloc[0]),
        "same": all(g is server for g in got), "url": temporary_api_url(),
        "server": server.process.pid, "children": children, "asked": asked}), flush=True)
""")


def test_a_run_with_a_temporary_server_imports_no_server_stack_and_leaves_nothing(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = hr_env(home, PYTHONPATH=str(ROOT), PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="180")
    done = subprocess.run([sys.executable, "-c", _SCRIPT, str(tmp_path / "store")], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=420, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "starting a temporary Prefect server" in done.stderr
    state = json.loads(done.stdout.split("STATE ", 1)[1].splitlines()[0])
    pids = [child["pid"] for child in state["children"]]
    try:
        assert state["runs"] == 8
        assert state["same"]  # four threads asking at once: the one server
        assert state["url"].startswith("http://127.0.0.1:") and state["url"].endswith("/api")
        # one uvicorn below the run, hr's own (Prefect started none of its own)
        assert [c["pid"] for c in state["children"] if c["uvicorn"]] == [state["server"]]
        assert "SERVER-STACK False" in done.stdout  # before: True
        # private as the hr server (issue 31 item 1): a secret of its own, owner-only files
        assert state["asked"] == {"none": 401, "secret": 200}  # before: 200 without it
        assert stat.S_IMODE((home / "prefect.db").stat().st_mode) == 0o600  # before: 0o644
        deadline = time.monotonic() + 15  # exited: nothing of the run is left
        while any(pid_alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [pid for pid in pids if pid_alive(pid)] == []
    finally:
        for pid in pids:
            if pid_alive(pid):
                os.kill(pid, 9)


def test_a_server_that_cannot_start_is_named_in_one_line_at_once(
        tmp_path: Path) -> None:
    """A server whose app cannot load exits at once: one hr error naming it, no wait for
    the start-up timeout."""
    home = tmp_path / "home"
    home.mkdir()
    code = ("import hr_server.temporary as t, sys\n"
            "t._command = lambda port: ([sys.executable, '-c', 'raise SystemExit(1)'], {})\n"
            "try:\n    t.start_temporary(120)\nexcept Exception as exc:\n"
            "    print(type(exc).__name__, exc)\n")
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], env=hr_env(home, PYTHONPATH=str(ROOT)),
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("ServerError Prefect's temporary server (127.0.0.1:")
    assert "exited with status 1" in done.stdout and "`hr server start`" in done.stdout
    assert time.monotonic() - began < 60
