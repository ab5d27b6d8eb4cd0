"""The warm runner: a real ``hr server start`` (server and runner), ``hr run`` as a thin client.

One server and runner for the module, in their own ``PREFECT_HOME``; each ``hr run``
is a real process. The arms record ``os.getppid()``: a run forked by the runner has
the runner as its parent. The last test stops both and checks every PID is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_support import gone, hr_env

from hr_cli._ports import free_port

HR = str(Path(sys.executable).with_name("hr"))
N_ITEMS = 40
CANARY = "sk-runner-canary-6b1f0c2e"

ARMS = textwrap.dedent("""
    import os, time

    VERSION = "v1"

    def echo(payload):
        with open(os.environ["HR_CALLS"], "a") as log:
            log.write(f"{payload['question']} {os.getppid()} {VERSION}\\n")
        gate = os.environ.get("HR_GATE")
        while gate and int(payload["question"][1:]) >= 5 and not os.path.exists(gate):
            time.sleep(0.02)
        return payload["question"]

    def fails(payload):
        raise RuntimeError("always")

    def crashes(payload):
        os._exit(7)
""")


class Warm:
    """The module's hr server and runner, and ``hr`` processes against them."""

    def __init__(self, home: Path, project: Path) -> None:
        self.home, self.project = home, project

    def env(self, **extra: str) -> dict[str, str]:
        return hr_env(self.home, PYTHONPATH=os.pathsep.join(
                          [str(self.project), *filter(None, [os.environ.get("PYTHONPATH")])]),
                      HR_CALLS=str(self.project / "calls.log"), HR_TEST_SECRET=CANARY,
                      **extra)

    def hr(self, *args: str, timeout: float = 300,
           **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([HR, *args], env=self.env(**extra), cwd=self.project,
                              capture_output=True, text=True, timeout=timeout, check=False)

    def record(self, name: str) -> dict[str, int]:
        return json.loads((self.home / name).read_text())  # type: ignore[no-any-return]

    def calls(self) -> list[list[str]]:
        path = self.project / "calls.log"
        return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def _spec(project: Path, name: str, arms: str, **extra: str) -> str:
    lines = [f"name: {name}", "reference: ref.jsonl", f"arms: {{{arms}}}", "store: store",
             *(f"{k}: {v}" for k, v in extra.items())]
    (project / f"{name}.yaml").write_text("\n".join(lines) + "\n")
    return f"{name}.yaml"


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Warm]:
    home = tmp_path_factory.mktemp("warm-home")
    project = tmp_path_factory.mktemp("warm-project")
    (project / "warm_arms.py").write_text(ARMS)
    with (project / "ref.jsonl").open("w") as handle:
        for k in range(N_ITEMS):
            handle.write(json.dumps({"id": f"i{k}", "question": f"q{k}", "label": f"q{k}"})
                         + "\n")
    w = Warm(home, project)
    pids: list[int] = []
    try:
        # a free port, not 4200: another `hr server start` on 4200 (a concurrent test run)
        # would answer this one's health check while this server fails to bind
        started = w.hr("server", "start", "--timeout", "240", "--port", str(free_port()))
        assert started.returncode == 0, started.stdout + started.stderr
        assert "warm runner ready" in started.stdout, started.stdout
        pids = [w.record("hr-server.json")["pid"], w.record("hr-runner.json")["pid"]]
        yield w
    finally:
        w.hr("server", "stop", timeout=120)
        for pid in pids:  # whatever a failed test left: the groups, by PID
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)


def test_hr_run_through_the_runner_streams_its_output_and_imports_no_prefect(
        warm: Warm) -> None:
    runner = warm.record("hr-runner.json")
    sock = Path(str(runner["socket"]))
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o700
    done = subprocess.run(
        [sys.executable, "-X", "importtime", HR, "run", _spec(warm.project, "ok", "echo: "
                                                             "warm_arms:echo")],
        env=warm.env(), cwd=warm.project, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Summary: ok" in done.stdout and "Results: store/ok/" in done.stdout
    assert {ppid for _, ppid, _ in warm.calls()} == {str(runner["pid"])}
    imported = {line.split("|")[-1].strip().split(".")[0]
                for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert imported and not imported & {"prefect", "pandas", "pyarrow", "hr_core", "numpy"}
    # hr rescore is run by the runner too (its log names each command's first word)
    run_dir = next((warm.project / "store" / "ok").glob("*/"))
    rescored = warm.hr("rescore", str(run_dir.relative_to(warm.project)), "--scorer",
                       "exact_raw")
    assert rescored.returncode == 0, rescored.stdout + rescored.stderr
    assert "hr rescore" in (warm.home / "hr-runner.log").read_text()
    helped = warm.hr("--help")  # a stored page (hr_cli._fast_help): no runner needed
    assert helped.returncode == 0 and "Usage: hr" in helped.stdout
    assert "hr --help" not in (warm.home / "hr-runner.log").read_text()
    helped = warm.hr("--help", HR_FULL_HELP="1")  # the full app's: the runner has it imported
    assert helped.returncode == 0 and "Usage: hr" in helped.stdout
    assert "hr --help" in (warm.home / "hr-runner.log").read_text()
    # a user mistake and an error rate above max_error_rate: their own statuses
    missing = warm.hr("run", "no-such.yaml")
    assert missing.returncode == 2 and "no-such.yaml" in missing.stderr
    failing = warm.hr("run", _spec(warm.project, "bad", "fails: warm_arms:fails"))
    assert failing.returncode == 3, failing.stdout + failing.stderr
    assert "max_error_rate" in failing.stderr
    # the secret in the environment reached neither the runner's log nor any file
    for path in [*warm.home.rglob("*"), *(warm.project / "store").rglob("*")]:
        if path.is_file() and path.suffix != ".db" and "prefect.db" not in path.name:
            assert CANARY.encode() not in path.read_bytes(), path


def test_ctrl_c_to_the_client_stops_the_run_with_130_and_it_resumes(warm: Warm) -> None:
    spec = _spec(warm.project, "slow", "echo: warm_arms:echo", concurrency="2")
    gate = warm.project / "gate"
    proc = subprocess.Popen([HR, "run", spec], env=warm.env(HR_GATE=str(gate)),
                            cwd=warm.project, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        journal: list[Path] = []
        while not journal or len(journal[0].read_text().splitlines()) < 5:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no progress"
            journal = list((warm.project / "store" / "slow").glob("*/journal.jsonl"))
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGINT)  # the client only: the runner forwards it
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, out + err
    assert "hr: interrupted" in err and "Traceback" not in out + err
    manifest = json.loads(next(journal[0].parent.glob("manifest.json")).read_text())
    assert manifest["status"] == "interrupted"
    done_before = {json.loads(line)["item_id"] for line in journal[0].read_text().splitlines()}
    gate.write_text("")
    called = len(warm.calls())
    again = warm.hr("run", spec)
    assert again.returncode == 0, again.stdout + again.stderr
    rerun = {f"i{q[1:]}" for q, _, _ in warm.calls()[called:]}
    assert rerun and not rerun & done_before  # only the rest ran


def test_a_crashing_arm_ends_its_run_only_and_an_edited_module_is_imported_again(
        warm: Warm) -> None:
    runner = warm.record("hr-runner.json")["pid"]
    crashed = warm.hr("run", _spec(warm.project, "crash", "crashes: warm_arms:crashes"))
    assert crashed.returncode == 7, crashed.stdout + crashed.stderr
    assert not gone(runner)
    spec = _spec(warm.project, "edit", "echo: warm_arms:echo")
    first = warm.hr("run", spec)
    module = warm.project / "warm_arms.py"
    module.write_text(module.read_text().replace('VERSION = "v1"', 'VERSION = "v2-edited"'))
    called = len(warm.calls())
    second = warm.hr("run", spec, "--fresh")
    assert first.returncode == 0 and second.returncode == 0, second.stdout + second.stderr
    assert {v for _, ppid, v in warm.calls()[called:]} == {"v2-edited"}
    assert {ppid for _, ppid, _ in warm.calls()[called:]} == {str(runner)}


def test_server_stop_stops_the_runner_and_leaves_no_process(warm: Warm) -> None:
    server = warm.record("hr-server.json")["pid"]
    runner = warm.record("hr-runner.json")
    stopped = warm.hr("server", "stop", timeout=120)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert gone(server) and gone(runner["pid"])
    assert not (warm.home / "hr-runner.json").exists()
    assert not Path(str(runner["socket"])).exists()
    # a stale socket (a runner killed by SIGKILL leaves it): hr runs the command itself,
    # as without the runner (here with a temporary server)
    path = Path(str(runner["socket"]))
    path.parent.mkdir(mode=0o700, exist_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stale:
        stale.bind(str(path))
    os.chmod(path, 0o600)
    cold = warm.hr("run", _spec(warm.project, "cold", "echo: warm_arms:echo"),
                   PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="180")
    assert cold.returncode == 0, cold.stdout + cold.stderr
    assert "temporary Prefect server" in cold.stdout
