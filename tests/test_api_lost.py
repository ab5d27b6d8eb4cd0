"""The Prefect server dies mid-run: hr stops in seconds with one line, and a rerun resumes.

The end-to-end test kills a real ``hr server start`` server by PID (its process group)
while ``hr run`` runs; the others run the API watch (``hr_cli.api_watch``) against
real HTTP servers and processes on 127.0.0.1. Every process is stopped by PID.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fault_support import alive, descendants, stop_pids
from server_support import health_server, hr_env

from hr_cli.api_watch import EXIT_API_LOST, LOST_AFTER_S, WatchedApi, watch_api
from hr_server.control import state_path
from hr_server.ports import free_port

HR = str(Path(sys.executable).with_name("hr"))
N_ITEMS = 300

ARMS = """
import os, time

def slow(question):
    with open(os.environ["HR_CALLS"], "a") as log:
        log.write(question + "\\n")
    time.sleep(0.05)
    return "a" + question
"""


@contextlib.contextmanager
def _watching(api: WatchedApi) -> Iterator[tuple[threading.Event, list[str]]]:
    """The watch in a thread; yields (lost, whys): ``lost`` is set when it calls on_lost."""
    lost, whys, done = threading.Event(), [], threading.Event()

    def on_lost(url: str, why: str) -> None:
        whys.append(why)
        lost.set()

    thread = threading.Thread(target=watch_api, args=(lambda: api, on_lost, done), daemon=True)
    thread.start()
    try:
        yield lost, whys
    finally:
        done.set()
        thread.join(timeout=30)
        assert not thread.is_alive(), "the watch thread did not end"


def test_a_server_that_answered_then_refuses_is_lost_after_a_few_seconds() -> None:
    with health_server() as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/api"
        with _watching(WatchedApi(url)) as (lost, whys):
            time.sleep(2.5)  # answered a few times
            assert not lost.is_set()
            server.shutdown()
            server.server_close()  # the port refuses from now on
            closed = time.monotonic()
            assert lost.wait(60), "a refusing server was never counted as lost"
            took = time.monotonic() - closed
    print(f"lost {took:.1f} s after the port closed")
    assert took >= LOST_AFTER_S - 0.5
    assert whys == [f"connection refused for {LOST_AFTER_S:.0f} s"]


def test_a_dead_server_process_is_lost_at_once_even_if_its_port_answers() -> None:
    """The hr server's PID is watched too: another process on its port does not hide it."""
    fake = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)",
                             "server", "start"])  # looks like `prefect server start`
    try:
        deadline = time.monotonic() + 60  # exec'd: until then /proc shows pytest's command
        while b"server" not in Path(f"/proc/{fake.pid}/cmdline").read_bytes():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        with health_server() as server:
            url = f"http://127.0.0.1:{server.server_address[1]}/api"
            with _watching(WatchedApi(url, pid=fake.pid, answered=True)) as (lost, whys):
                time.sleep(1.5)
                assert not lost.is_set()
                fake.kill()
                fake.wait(timeout=30)
                assert lost.wait(30)
    finally:
        stop_pids([fake.pid])
    assert whys == [f"the hr server's process {fake.pid} is gone"]


def test_a_server_still_starting_or_slow_to_answer_is_not_lost() -> None:
    """Refusals before a first answer (a temporary server starting) and timeouts (a busy
    server) never count."""
    closed = f"http://127.0.0.1:{free_port()}/api"
    with socket.socket() as silent:  # accepts connections (the backlog), never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        slow = f"http://127.0.0.1:{silent.getsockname()[1]}/api"
        with _watching(WatchedApi(closed)) as (starting, _), \
                _watching(WatchedApi(slow, answered=True)) as (busy, _):
            time.sleep(LOST_AFTER_S + 3)
            assert not starting.is_set() and not busy.is_set()


# -- the case: a real hr server killed by PID mid-run ------------------------------


def _start_server(env: dict[str, str], home: Path) -> int:
    started = subprocess.run([HR, "server", "start", "--port", str(free_port())], env=env,
                             capture_output=True, text=True, timeout=300, check=False)
    assert started.returncode == 0, started.stdout + started.stderr
    return int(json.loads(state_path(home).read_text())["pid"])


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "slow_arms.py").write_text(ARMS)
    (tmp_path / "ref.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "question": str(i), "label": f"a{i}"}) + "\n"
        for i in range(N_ITEMS)))
    (tmp_path / "spec.yaml").write_text(
        f"name: api-lost\nreference: {{path: ref.jsonl, item: question}}\n"
        f"store: {tmp_path / 'store'}\nconcurrency: 2\narms:\n  slow: slow_arms:slow\n")
    (tmp_path / "prefect-home").mkdir()
    return tmp_path


@pytest.fixture(scope="module")
def api_url(prefect_harness: None) -> str:
    """The session's Prefect API, for the rerun (a second server start costs ~30-60 s)."""
    from prefect.settings import PREFECT_API_URL

    return str(PREFECT_API_URL.value())


def test_a_killed_hr_server_stops_the_run_in_seconds_and_a_rerun_resumes(
        project: Path, api_url: str) -> None:
    home, calls, spec = project / "prefect-home", project / "calls.txt", project / "spec.yaml"
    env = hr_env(home, COLUMNS="120", HR_CALLS=str(calls))
    began = time.monotonic()
    server = _start_server(env, home)
    print(f"hr server start: {time.monotonic() - began:.1f} s")
    run = subprocess.Popen([HR, "run", str(spec)], env=env, cwd=project, text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           start_new_session=True)
    below: list[int] = []
    try:
        deadline = time.monotonic() + 240
        while len(_lines(calls)) < 20:  # early in the run: the first second of the watch
            assert run.poll() is None and time.monotonic() < deadline, run.communicate()
            time.sleep(0.05)
        below = descendants(run.pid)
        print(f"20 calls made {time.monotonic() - began:.1f} s after the start")
        _kill_group(server)  # `hr server start`'s server: its own process group
        killed = time.monotonic()
        out, err = run.communicate(timeout=120)
        took = time.monotonic() - killed
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(timeout=30)
        _kill_group(server)
    print(f"hr exited {took:.1f} s after the server was killed (exit {run.returncode}); "
          f"stderr ({len(err.splitlines())} line(s)): {err!r}")
    assert not alive(server) and stop_pids(below) == [], "a process was left behind"
    assert run.returncode == EXIT_API_LOST, err
    assert took < 60  # the behaviour is within 10 s (measured ~1 s): a generous bound here
    assert err.startswith("hr: the Prefect API at http://127.0.0.1:")
    assert f"the hr server's process {server} is gone" in err
    assert f"run `hr run {spec}` to resume" in err and "hr server start" in err
    assert len(err.splitlines()) == 1 and "Traceback" not in out + err
    assert "Event(" not in out + err and "Error logging to API" not in out + err
    folder = next((project / "store").glob("api-lost/*/"))
    assert json.loads((folder / "manifest.json").read_text())["status"] == "interrupted"
    kept = {json.loads(row)["item_id"] for row in _lines(folder / "journal.jsonl")}
    assert 0 < len(kept) < N_ITEMS
    assert f"finished run(s) of {N_ITEMS} are journaled in {folder}" in err

    called = len(_lines(calls))
    resumed = dict(env, PREFECT_API_URL=api_url)  # any live API resumes: the session's
    done = subprocess.run([HR, "run", str(spec)], env=resumed, cwd=project, text=True,
                          capture_output=True, timeout=300, check=False)
    print(f"resumed: {time.monotonic() - began:.1f} s after the start")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((folder / "manifest.json").read_text())["status"] == "completed"
    again = _lines(calls)[called:]
    assert sorted(again, key=int) == sorted((str(i) for i in range(N_ITEMS)
                                             if f"q{i}" not in kept), key=int)
