"""Real ``hr run`` processes under faults: Ctrl-C to the process group, SIGTERM, two runs of
one spec at once, a stale lock, an unwritable store. Every process is checked gone by PID.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fault_support import alive, descendants, mounted, remount, stop_pids

HR = str(Path(sys.executable).with_name("hr"))
ROOT = Path(__file__).resolve().parents[1]
N_ITEMS = 60

ARMS = textwrap.dedent("""
    import os, time

    def slow(payload):
        with open(os.environ["HR_CALLS"], "a") as log:
            log.write(payload["question"] + "\\n")
        gate = os.environ.get("HR_GATE")  # items from q10 on wait until this file exists
        while gate and int(payload["question"][1:]) >= 10 and not os.path.exists(gate):
            time.sleep(0.02)
        time.sleep(float(os.environ.get("HR_DELAY", "0.05")))
        return payload["question"]
""")


@pytest.fixture(scope="module")
def api_url(prefect_harness: None) -> str:
    """The session's Prefect API, given to the ``hr`` processes (no server start each)."""
    from prefect.settings import PREFECT_API_URL

    return str(PREFECT_API_URL.value())


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    (tmp_path / "fault_arms.py").write_text(ARMS)
    with (tmp_path / "ref.jsonl").open("w") as handle:
        for k in range(N_ITEMS):
            handle.write(json.dumps({"id": f"i{k}", "question": f"q{k}", "label": f"q{k}"}) + "\n")
    for name in ("one", "other"):
        (tmp_path / f"{name}.yaml").write_text(textwrap.dedent(f"""
            name: {name}
            reference: ref.jsonl
            arms: {{slow: fault_arms:slow}}
            concurrency: 2
            store: store
        """))
    return tmp_path


class Runs:
    """``hr run`` processes of one test, each in its own process group; all stopped after."""

    def __init__(self, project: Path, api_url: str | None) -> None:
        self.project = project
        self.api_url = api_url
        self.procs: list[subprocess.Popen[str]] = []
        self.seen: list[int] = []  # every PID below an hr process, stopped after the test

    def env(self, delay: float, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
        env.update(PYTHONPATH=f"{self.project}{os.pathsep}{ROOT}", HR_DELAY=str(delay),
                   HR_CALLS=str(self.project / "calls.log"), COLUMNS="200",
                   HR_JOURNAL_DIR=str(self.project / "fallback"),
                   PREFECT_LOGGING_LEVEL="WARNING")
        env.update(extra)
        if self.api_url is not None:
            env["PREFECT_API_URL"] = self.api_url
        return env

    def start(self, *args: str, delay: float = 0.05, stderr: Any = subprocess.PIPE,
              **extra: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen([HR, "run", *args], cwd=self.project, text=True,
                                env=self.env(delay, **extra), stdout=subprocess.PIPE,
                                stderr=stderr, start_new_session=True)
        self.procs.append(proc)
        return proc

    def watch(self, proc: subprocess.Popen[str]) -> None:
        self.seen += [p for p in descendants(proc.pid) if p not in self.seen]

    def stop_all(self) -> list[int]:
        left = []
        for proc in self.procs:
            if proc.poll() is None:
                self.watch(proc)
                proc.kill()
                left.append(proc.pid)
            proc.wait(timeout=30)
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
        return left + stop_pids(self.seen)


@pytest.fixture()
def runs(project: Path, api_url: str) -> Iterator[Runs]:
    together = Runs(project, api_url)
    yield together
    assert together.stop_all() == [], "a process was left behind"


def _journal(project: Path, name: str = "one") -> Path | None:
    found = list((project / "store" / name).glob("*/journal.jsonl"))
    return found[0] if found else None


def _journaled(project: Path, name: str = "one") -> list[str]:
    path = _journal(project, name)
    if path is None or not path.exists():
        return []
    return [json.loads(line)["item_id"] for line in path.read_text().splitlines() if line]


def _wait_journal(project: Path, proc: subprocess.Popen[str], lines: int,
                  timeout: float = 120, runs: Runs | None = None) -> None:
    deadline = time.monotonic() + timeout
    while len(_journaled(project)) < lines:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no progress"
        if runs is not None:
            runs.watch(proc)
        time.sleep(0.05)


def _calls(project: Path, name: str = "calls.log") -> list[str]:
    path = project / name
    return path.read_text().split() if path.exists() else []


def _finish(proc: subprocess.Popen[str], timeout: float = 180) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


# -- Ctrl-C and SIGTERM ---------------------------------------------------------------------


def test_ctrl_c_to_the_process_group_with_a_temporary_server_stops_within_seconds(
        project: Path, tmp_path: Path, api_url: str) -> None:
    """The issue's case: Prefect's temporary server (a child of hr) gets the Ctrl-C too."""
    runs = Runs(project, api_url=None)
    try:
        proc = runs.start("one.yaml", delay=0.2, PREFECT_HOME=str(tmp_path / "home"),
                          PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="180")
        _wait_journal(project, proc, 6, timeout=240, runs=runs)
        runs.watch(proc)
        assert runs.seen, "expected Prefect's temporary server below hr"
        before = len(_journaled(project))
        sent = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        code, out, err = _finish(proc, timeout=60)
        took = time.monotonic() - sent
    finally:
        left = runs.stop_all()
    print(f"Ctrl-C: exit {code} after {took:.1f} s; stderr: {err.strip()[-300:]}")
    assert left == [], "a process (hr or its server) was left behind"
    assert code == 130 and took < 10
    assert "hr: interrupted" in err and "finished run(s)" in err
    assert "Traceback" not in out + err and "ConnectError" not in out + err
    journaled = _journaled(project)
    assert len(journaled) >= before and len(set(journaled)) == len(journaled)
    manifest = json.loads(next((project / "store" / "one").glob("*/manifest.json")).read_text())
    assert manifest["status"] == "interrupted"
    called = len(_calls(project))
    again = Runs(project, api_url)  # resumable: the rest only
    try:
        code, _, err = _finish(again.start("one.yaml", delay=0.0))
    finally:
        assert again.stop_all() == []
    assert code == 0, err
    assert not set(_calls(project)[called:]) & {f"q{i[1:]}" for i in journaled}
    assert sorted(set(_journaled(project))) == sorted(f"i{k}" for k in range(N_ITEMS))


def test_sigterm_flushes_the_journal_exits_143_without_a_traceback_and_resumes(
        runs: Runs, project: Path) -> None:
    proc = runs.start("one.yaml", delay=0.1)
    _wait_journal(project, proc, 6, runs=runs)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    code, out, err = _finish(proc, timeout=60)
    took = time.monotonic() - sent
    print(f"SIGTERM: exit {code} after {took:.1f} s; stderr: {err.strip()[-300:]}")
    assert code == 143 and took < 10
    assert "hr: interrupted (SIGTERM)" in err
    assert "Traceback" not in out + err
    journaled = _journaled(project)
    # the line counts what the journal holds (issue 31: it said 764 where the file held 760)
    assert f": {len(set(journaled))} finished run(s) of {N_ITEMS} are journaled" in err, err
    called = _calls(project)
    assert len(called) - len(journaled) <= 2  # only the calls in flight were not finished
    again = runs.start("one.yaml", delay=0.0)
    code, out, err = _finish(again)
    assert code == 0, err
    assert not set(_calls(project)[len(called):]) & {f"q{i[1:]}" for i in journaled}
    assert sorted(set(_journaled(project))) == sorted(f"i{k}" for k in range(N_ITEMS))


def test_a_garbled_journal_line_is_named_on_the_terminal_and_in_the_manifest(
        runs: Runs, project: Path) -> None:
    # before (issue 31): a garbled line in the middle of a journal was skipped without a
    # word (its run made again, nothing said)
    code, _, err = _finish(runs.start("one.yaml", delay=0.0))
    assert code == 0, err
    journal = _journal(project)
    assert journal is not None
    lines = journal.read_bytes().split(b"\n")
    assert len(lines) == N_ITEMS + 1
    garbled_item = json.loads(lines[29])["item_id"]
    lines[29] = lines[29][:30] + b"\xff\x00 a sector lost"  # line 30
    journal.write_bytes(b"\n".join(lines))
    called = len(_calls(project))
    code, out, err = _finish(runs.start("one.yaml", delay=0.0))
    assert code == 0, err
    # hr's warnings are lines of its console (stdout), as a judge's missing validation is
    assert (f"hr: warning: {journal}: 1 garbled line(s) skipped (line 30): not JSON, and not "
            "the torn last line a killed writer leaves; a run they held is made again") in (
        " ".join(out.split())), out
    manifest = json.loads(journal.with_name("manifest.json").read_text())
    assert manifest["status"] == "completed"
    assert manifest["journal_garbled"] == {"count": 1, "lines": {"journal.jsonl": [30]}}
    assert _calls(project)[called:] == [f"q{garbled_item[1:]}"]  # that run, made again
    assert sorted(_journaled(project)) == sorted(f"i{k}" for k in range(N_ITEMS))


# -- one spec runs once at a time --------------------------------------------------------------


def test_a_second_run_of_the_same_spec_refuses_naming_the_holder_or_waits(
        runs: Runs, project: Path) -> None:
    gate = project / "gate"  # the first run holds on at item 10 until the gate opens
    first = runs.start("one.yaml", delay=0.0, HR_GATE=str(gate))
    _wait_journal(project, first, 2, runs=runs)
    other = runs.start("other.yaml", delay=0.0, HR_CALLS=str(project / "other.log"))
    refused = runs.start("one.yaml")
    waiting_log = project / "waiting.err"
    with waiting_log.open("w") as handle:
        waiting = runs.start("one.yaml", "--wait", stderr=handle)
    deadline = time.monotonic() + 120
    while "hr: waiting" not in waiting_log.read_text():
        assert waiting.poll() is None and time.monotonic() < deadline, waiting_log.read_text()
        time.sleep(0.05)
    code, out, err = _finish(refused)
    assert code == 5, (out, err)
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("hr: error: ")
    assert (f"is being run by PID {first.pid} on {socket.gethostname()} since" in lines[0]
            and "--wait" in lines[0])
    assert first.poll() is None
    gate.touch()
    for proc in (first, waiting, other):
        code, out, err = _finish(proc)
        assert code == 0, (out, err, waiting_log.read_text())
    assert "hr: waiting: store/one/" in waiting_log.read_text()
    assert f"is being run by PID {first.pid}" in waiting_log.read_text()
    calls = _calls(project)
    print(f"two runs of one spec: {len(calls)} arm calls for {N_ITEMS} runs")
    assert sorted(calls) == sorted(f"q{k}" for k in range(N_ITEMS))  # each run called once
    assert len(_calls(project, "other.log")) == N_ITEMS  # another spec ran alongside


def test_a_lock_left_by_a_killed_run_is_taken_over(runs: Runs, project: Path) -> None:
    first = runs.start("one.yaml", delay=0.1)
    _wait_journal(project, first, 2, runs=runs)
    runs.watch(first)
    first.kill()
    first.wait(timeout=30)
    lock = next((project / "store" / "one").glob("*/run.lock"))
    assert json.loads(lock.read_text())["pid"] == first.pid
    assert not alive(first.pid)
    again = runs.start("one.yaml", delay=0.0)
    code, _, err = _finish(again)
    assert code == 0, err
    assert json.loads(lock.read_text())["pid"] == again.pid


# -- an unwritable store -----------------------------------------------------------------------


def test_hr_run_on_a_store_made_read_only_stops_with_one_message(runs: Runs,
                                                                 project: Path) -> None:
    with mounted(project / "store", "8m") as store:
        proc = runs.start("one.yaml", delay=0.1)
        _wait_journal(project, proc, 4, runs=runs)
        remount(store, "ro")
        try:
            code, out, err = _finish(proc)
        finally:
            remount(store, "rw")
        calls = _calls(project)
        print(f"read-only store: exit {code}, {len(calls)} of {N_ITEMS} calls; {err.strip()}")
        assert code == 4
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("hr: error: cannot write ")
        # the first file refused is the journal or the manifest, whichever the run writes
        # first after the remount (the machine's load decides): either is named
        run_folder = _journal(project).parent  # type: ignore[union-attr]
        assert re.search(rf"cannot write {re.escape(str(run_folder))}/"
                         r"(journal\.jsonl|manifest\.json): Read-only file system",
                         lines[0]), lines[0]
        assert len(calls) < N_ITEMS - 10
        assert "internal error" not in err and "Traceback" not in out + err
        code, out, err = _finish(runs.start("one.yaml", delay=0.0))
        assert code == 0, err
        assert sorted(set(_journaled(project))) == sorted(f"i{k}" for k in range(N_ITEMS))


# -- hostile arms, damaged results ---------------------------------------------------------------

HOSTILE = textwrap.dedent("""
    import sys

    def exits(payload):
        if payload["question"] == "q3":
            sys.exit(3)
        return payload["question"]

    async def interrupts(payload):
        if payload["question"] == "q4":
            raise KeyboardInterrupt
        return payload["question"]
""")


def test_arms_that_exit_or_raise_keyboard_interrupt_are_error_rows_of_hr_run(
        runs: Runs, project: Path) -> None:
    (project / "hostile_arms.py").write_text(HOSTILE)
    (project / "hostile.yaml").write_text(textwrap.dedent("""
        name: hostile
        reference: ref.jsonl
        arms: {exits: hostile_arms:exits, interrupts: hostile_arms:interrupts}
        store: store
    """))
    code, out, err = _finish(runs.start("hostile.yaml"))
    assert code == 0, (out, err)
    import pandas as pd

    run_dir = next((project / "store" / "hostile").glob("*/"))
    table = pd.read_parquet(run_dir / "runs.parquet")
    errors = table.dropna(subset=["error"]).set_index("arm")["error"].to_dict()
    assert errors == {"exits": "SystemExit: 3", "interrupts": "KeyboardInterrupt"}
    assert (table["correct"] == True).sum() == 2 * N_ITEMS - 2  # noqa: E712
    # a damaged runs table: one line naming it and the fix, never "internal error"
    (run_dir / "runs.parquet").write_bytes(b"")
    done = subprocess.run([HR, "summary", str(run_dir)], capture_output=True, text=True,
                          timeout=120, env=runs.env(0.0))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert "runs.parquet is corrupt or truncated" in done.stderr
    assert "run the benchmark again" in done.stderr and "internal error" not in done.stderr
