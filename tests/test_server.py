"""``hr server start|stop|status``: a real server, a run seen through its API, no process left.

Every command runs as a real ``hr`` process with its own ``PREFECT_HOME``; the
server is stopped by its process group even when a test fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from server_support import gone, health_server, hr_env

from flows.clients import TEMPORARY_STARTUP_TIMEOUT_S
from hr_server.control import ServerError, server_status, start_server, state_path, stop_server
from hr_server.ports import free_port

HR = str(Path(sys.executable).with_name("hr"))
EXAMPLES = Path(__file__).resolve().parents[1] / "hr_core" / "examples"


def _hr(home: Path, *args: str, cwd: Path | None = None,
        timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HR, *args], env=hr_env(home), cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, check=False)


@pytest.fixture()
def home(tmp_path: Path) -> Iterator[Path]:
    """A PREFECT_HOME whose recorded server is killed (its process group) after the test."""
    folder = tmp_path / "prefect-home"
    folder.mkdir()
    yield folder
    with contextlib.suppress(FileNotFoundError, ValueError, KeyError):
        pid = int(json.loads(state_path(folder).read_text())["pid"])
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


PID_ARM = """
import os

def whoami(payload):
    with open(os.environ["HR_PIDS"], "a") as log:
        log.write(f"{os.getpid()}\\n")
    return "NOT_IN_DOCUMENT"
"""


def _spec(folder: Path) -> Path:
    lines = (EXAMPLES / "docqa_reference.jsonl").read_text().splitlines()[:6]
    (folder / "ref.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "pid_arm.py").write_text(PID_ARM)
    spec = folder / "spec.yaml"
    spec.write_text("name: server-check\nreference: ref.jsonl\narms:\n"
                    "  keyword: hr_core.examples.demo_arms:keyword_overlap\n"
                    "  whoami: pid_arm:whoami\n")
    return spec


def _hr_run(home: Path, folder: Path,
            marker: str) -> tuple[subprocess.CompletedProcess[str], set[int], int]:
    """``hr run`` of :func:`_spec`; its output, the PIDs its arm calls ran in, its PID."""
    pids = folder / f"pids-{time.monotonic_ns()}.txt"
    env = hr_env(home, HR_TEST_MARKER=marker, HR_PIDS=str(pids), PYTHONPATH=os.pathsep.join(
        [str(folder), *filter(None, [os.environ.get("PYTHONPATH")])]))
    args = [HR, "run", str(_spec(folder)), "--store", str(folder / "results"), "--fresh"]
    with subprocess.Popen(args, env=env, cwd=folder, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as proc:
        try:
            out, err = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
    done = subprocess.CompletedProcess(args, proc.returncode, out, err)
    ran_in = {int(line) for line in pids.read_text().split()} if pids.exists() else set()
    return done, ran_in, proc.pid


def test_runs_without_then_with_the_server_are_in_its_dashboard_and_stop_leaves_nothing(
    home: Path, tmp_path: Path,
) -> None:
    marker = f"{os.getpid()}-{time.monotonic_ns()}"
    try:
        # a first run with a new PREFECT_HOME and no server: the hint, no traceback, and
        # its temporary server gone when it ends (issue 13: an orphan and a uvicorn race)
        first, first_pids, first_pid = _hr_run(home, tmp_path, marker)
        assert first.returncode == 0, first.stdout + first.stderr
        assert first_pids == {first_pid}
        assert "starting a temporary Prefect server" in first.stdout
        assert "`hr server start` makes runs faster" in first.stdout
        output = (first.stdout + first.stderr).lower()
        assert "traceback" not in output and "address already in use" not in output
        assert _processes_with(f"HR_TEST_MARKER={marker}") == []

        started = _hr(home, "server", "start", "--timeout", "180")
        assert started.returncode == 0, started.stdout + started.stderr
        state = json.loads(state_path(home).read_text())
        pid, api = state["pid"], f"http://127.0.0.1:{state['port']}/api"
        assert f"dashboard http://127.0.0.1:{state['port']}" in started.stdout
        status = _hr(home, "server", "status")
        assert status.returncode == 0 and f"http://127.0.0.1:{state['port']}" in status.stdout
        again = _hr(home, "server", "start")
        assert again.returncode == 0 and "already running" in again.stdout
        assert json.loads(state_path(home).read_text())["pid"] == pid

        # no command daemon beside the server (issue 31 item 6): hr run, with the server up,
        # runs its arms in its own process; no runner record or socket exists, and every
        # process of this PREFECT_HOME is the server's (its process group)
        assert sorted(p.name for p in home.iterdir() if "runner" in p.name) == []
        ours = _processes_with(f"PREFECT_HOME={home}\0")
        assert pid in ours and {os.getpgid(p) for p in ours} == {pid}
        second, second_pids, second_pid = _hr_run(home, tmp_path, marker)
        assert second.returncode == 0, second.stdout + second.stderr
        assert second_pids == {second_pid}
        # Prefect's offline telemetry noise is off in the server hr started (issue 10)
        server_env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert b"PREFECT_SERVER_ANALYTICS_ENABLED=false" in server_env
        assert b"DO_NOT_TRACK=1" in server_env
        assert "Failed to send telemetry" not in (home / "hr-server.log").read_text()
        assert "telemetry" not in (first.stdout + first.stderr + second.stdout
                                   + second.stderr).lower()
        assert "the hr server" in second.stdout
        assert "temporary" not in second.stdout + second.stderr
        # both runs are in the server's database: the dashboard shows the earlier one too
        # the API asks for the secret, found as a user finds it: the profile `hr`
        profile = tomllib.loads((home / "profiles.toml").read_text())["profiles"]["hr"]
        assert profile["PREFECT_API_URL"] == api
        login = tuple(profile["PREFECT_API_AUTH_STRING"].split(":", 1))
        runs = httpx.post(f"{api}/flow_runs/filter", auth=login, json={
            "flow_runs": {"name": {"like_": "server-check"}}}, timeout=30).json()
        assert [r["state_type"] for r in runs] == ["COMPLETED", "COMPLETED"]
        ui = httpx.get(f"http://127.0.0.1:{state['port']}/ui-settings", timeout=30).json()
        assert ui["api_url"] == api  # the dashboard reaches the API on the port it runs on

        stopped = _hr(home, "server", "stop")
        assert stopped.returncode == 0 and f"pid {pid}" in stopped.stdout
        assert gone(pid), f"process (group) {pid} still there"
        assert not state_path(home).exists()
        after = _hr(home, "server", "status")
        assert after.returncode == 1 and "no hr server is running" in after.stdout
    finally:
        for leftover in _processes_with(f"HR_TEST_MARKER={marker}"):
            with contextlib.suppress(ProcessLookupError):
                os.kill(leftover, signal.SIGKILL)


def test_a_stale_record_is_reported_by_status_and_replaced_without_waiting(home: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    state_path(home).write_text(json.dumps({
        "pid": dead.pid, "port": 1, "home": str(home), "log": "hr-server.log",
        "started_at": "2026-01-01T00:00:00+00:00"}))
    began = time.monotonic()
    status = _hr(home, "server", "status")
    assert status.returncode == 1
    assert f"(pid {dead.pid}, port 1) is gone" in " ".join(status.stdout.split())
    assert server_status(home).status == "stale"
    assert stop_server(home).status == "stale" and not state_path(home).exists()
    assert time.monotonic() - began < 30


def test_a_taken_port_is_refused_at_once_and_nothing_is_left(home: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(ServerError, match=f"port {port} on 127.0.0.1 is taken"):
            start_server(home, port=port, timeout=5)
    assert not state_path(home).exists()


def test_a_record_that_is_not_json_names_the_file(home: Path) -> None:
    state_path(home).write_text("{not json")
    done = _hr(home, "server", "status")
    assert done.returncode == 2
    assert f"hr: error: {state_path(home)}: not a record of the hr server" in done.stderr


def _processes_with(marker: str) -> list[int]:
    """PIDs whose environment holds ``marker`` (children inherit it: a temporary server too)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if marker.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
    return found


def _prefect_db(home: Path, revision: str) -> Path:
    """A Prefect SQLite database at schema ``revision`` (what alembic records)."""
    import sqlite3

    path = home / "prefect.db"
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
        db.execute("INSERT INTO alembic_version VALUES (?)", (revision,))
        db.commit()
    return path


def test_a_database_of_another_prefect_version_is_named_before_any_server_starts(
        home: Path, tmp_path: Path) -> None:
    """Before: `hr server start` failed with the log's alembic traceback, and `hr run` with a
    temporary server waited 90 s and said `internal error: RuntimeError: Timed out`."""
    versions = (Path(sys.executable).parents[1] / "lib").glob(
        "python3*/site-packages/prefect/server/database/_migrations/versions/sqlite/*.py")
    known = sorted(p.name.split("_")[4] for p in versions)[0]
    other = tmp_path / "other-home"
    other.mkdir()
    _prefect_db(other, known)  # a revision this Prefect knows: no error
    check = ("from pathlib import Path; from hr_server.database import check_database as c; "
             "c(Path('.'))")
    assert subprocess.run([sys.executable, "-c", check], env=hr_env(other), cwd=other,
                          capture_output=True, text=True, check=False).returncode == 0
    path = _prefect_db(home, "ffffffffffff")

    done = _hr(home, "server", "start")
    assert done.returncode != 0
    assert f"{path} was made by another Prefect version" in done.stderr
    assert "set PREFECT_HOME to another folder" in done.stderr
    assert not state_path(home).exists()  # no server was started
    started = time.monotonic()
    done = _hr(home, "run", str(_spec(tmp_path)), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"{path} was made by another Prefect version" in done.stderr
    assert "internal error" not in done.stderr
    # no wait for a server that cannot start: before, hr run waited out the temporary
    # server's start-up timeout (TEMPORARY_STARTUP_TIMEOUT_S, 90 s) and then failed; the
    # two commands together once took 86 s on a loaded machine, so only hr run is timed
    assert time.monotonic() - started < TEMPORARY_STARTUP_TIMEOUT_S


def test_a_health_check_answered_by_another_server_is_not_taken_for_ours(
    home: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two ``hr server start`` at once could both take port 4200 as free; the one that
    lost the bind had its health check answered by the other's server and said it was
    started (a runner beside it then stopped with it). A real foreign HTTP server holds
    the port here; hr's check that the port is free is made to say yes, as in the race."""
    import hr_server.control as server_module

    with health_server() as foreign:
        taken = foreign.server_address[1]
        monkeypatch.setattr(server_module, "DEFAULT_PORT", taken)
        free = server_module.port_free
        monkeypatch.setattr(server_module, "port_free",
                            lambda port: True if port == taken else free(port))
        state, started = start_server(home, timeout=180)
        try:
            assert started and state.port != taken  # ours, on another port
            assert f"http://127.0.0.1:{state.port}" in server_status(home).describe()
        finally:
            stop_server(home)


def _first_port(log: Path, proc: subprocess.Popen[str], after: str,
                timeout: float = 180) -> int:
    """The port of the first server ``hr server start`` spawned (its log's start line),
    once the log's text after that line holds ``after``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        text = log.read_text() if log.exists() else ""
        found = re.search(r"--- hr server start \S+ port (\d+)\n", text)
        if found and after in text[found.end():]:
            return int(found.group(1))
        time.sleep(0.01)
    raise AssertionError(f"hr server start spawned no server, or its log lacks {after!r}")


@pytest.mark.parametrize(("explicit", "after"), [
    (False, "Check out the dashboard"),  # after Prefect's own check: uvicorn's bind fails
    (True, ""),  # before it: Prefect's check fails
])
def test_a_port_taken_under_the_start_is_named_and_another_is_tried(
        home: Path, explicit: bool, after: str) -> None:
    """Another process binds the port after hr's check, before the server's bind (two
    starts at once). Before: the retry looked for "already in use" in the log's last 12
    lines, which uvicorn's and Prefect's shutdown traceback pushed out: exit 2 and a cut
    traceback; and no line said what happened. Now: "port N is in use", then another
    free port (exit 0), or, for the port given with --port, that line alone (exit 2)."""
    args = [HR, "server", "start", "--timeout", "240"]
    if explicit:
        args += ["--port", str(free_port())]
    with subprocess.Popen(args, env=hr_env(home), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as proc:
        try:
            port = _first_port(home / "hr-server.log", proc, after)
            with socket.socket() as taker:
                taker.bind(("127.0.0.1", port))
                taker.listen()
                out, err = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
    try:
        said = " ".join((out + err).split())
        log = (home / "hr-server.log").read_text()
        assert f"port {port} is in use" in said, out + err + log[-6000:]
        assert "Traceback" not in out + err and "File " not in out + err
        if explicit:
            assert proc.returncode == 2 and len(err.strip().splitlines()) == 1, out + err
            assert not state_path(home).exists()
            return
        assert proc.returncode == 0, out + err
        state = json.loads(state_path(home).read_text())
        assert state["port"] != port and f"dashboard http://127.0.0.1:{state['port']}" in said
        assert server_status(home).status == "running"
    finally:
        stop_server(home)


def test_every_revision_prefect_declares_is_known_whatever_its_file_is_named(
        tmp_path: Path) -> None:
    """A database left at any of this Prefect's own schema revisions (a kill -9 while a
    temporary server migrated it) is Prefect's to upgrade, not "another version's": before,
    revisions were read from the migration files' names, and a file named after its slug
    (``..._add_automation_tags_bb2345678901.py``) made `hr run` refuse its own database."""
    versions = next((Path(sys.executable).parents[1] / "lib").glob(
        "python3*/site-packages/prefect/server/database/_migrations/versions/sqlite"))
    declared = sorted(m.group(1) for p in versions.glob("*.py")
                      for m in [re.search(r'^revision = "(\w+)"', p.read_text(), re.M)] if m)
    assert "bb2345678901" in declared
    _prefect_db(tmp_path, declared[0])
    check = ("import sqlite3, sys; from pathlib import Path; "
             "from hr_server.database import check_database as c\n"
             "for revision in sys.argv[1:]:\n"
             "    with sqlite3.connect('prefect.db') as db:\n"
             "        db.execute('UPDATE alembic_version SET version_num = ?', (revision,))\n"
             "    c(Path('.'))\n")
    done = subprocess.run([sys.executable, "-c", check, *declared], env=hr_env(tmp_path),
                          cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-1500:]
