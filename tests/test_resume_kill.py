"""Kill a running benchmark with SIGKILL at several points, restart it, compare.

Checks: no duplicate rows, nothing journaled before a kill is lost or run again,
at most the last unflushed ~second is recomputed, and the final table equals an
uninterrupted run's. The light path (``BenchmarkSession.run``, the same engine,
journal and store without Prefect) is killed three times; the Prefect flow path
once, and its orphaned ephemeral API server is then stopped by PID.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from fault_support import alive, descendants

from hr_core.store.journal import Journal

N_ITEMS = 1200
DELAY_S = 0.01
CONCURRENCY = 4
RUNS_PER_S = CONCURRENCY / DELAY_S

SCRIPT = textwrap.dedent(
    """
    import asyncio, os, sys
    from hr_core import hr_reference
    from hr_core.run.session import BenchmarkSession, plan_benchmark

    CALLS = os.environ.get("HR_KILL_CALLS")

    async def arm(payload):
        if CALLS:
            with open(CALLS, "a") as log:
                log.write(f"{payload['n']}\\n")
        await asyncio.sleep(DELAY)
        n = payload["n"]
        return f"answer {n}" if n % 10 < 7 else f"wrong {n}"

    def reference():
        return hr_reference([{"id": f"i{n}", "n": n, "label": f"answer {n}"}
                             for n in range(N_ITEMS)])

    def main(mode, store):
        if mode == "flow":
            from flows import hr_benchmark
            hr_benchmark({"arm": arm}, reference(), store=store, name="kill",
                         concurrency=CONCURRENCY, chunk_size=400)
        else:
            plan = plan_benchmark({"arm": arm}, reference(), store=store, name="kill",
                                  concurrency=CONCURRENCY, chunk_size=400)
            BenchmarkSession(plan).run_sync()

    if __name__ == "__main__":
        main(sys.argv[1], sys.argv[2])
    """
)


def _write_script(folder: Path) -> Path:
    path = folder / "kill_script.py"
    path.write_text(
        f"N_ITEMS = {N_ITEMS}\nDELAY = {DELAY_S}\nCONCURRENCY = {CONCURRENCY}\n" + SCRIPT)
    return path


@pytest.fixture()
def script(tmp_path: Path) -> Path:
    return _write_script(tmp_path)


def _env(tmp_path: Path, calls: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(HR_KILL_CALLS=str(calls), PREFECT_HOME=str(tmp_path / "prefect-home"),
               PREFECT_LOGGING_LEVEL="ERROR", PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="120",
               PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    return env


def _journal(store: Path) -> Path | None:
    found = list(store.glob("kill/*/journal.jsonl"))
    return found[0] if found else None


def _lines(path: Path | None) -> int:
    return 0 if path is None or not path.exists() else path.read_bytes().count(b"\n")


def _kill_when(proc: subprocess.Popen[bytes], store: Path, at_lines: int,
               timeout: float, after_s: float = 0.0) -> tuple[int, list[int]]:
    """SIGKILL ``proc`` ``after_s`` after its journal holds ``at_lines`` runs.

    Returns the journal's lines after the kill and the processes below ``proc``.
    """
    deadline = time.monotonic() + timeout
    while _lines(_journal(store)) < at_lines:
        assert proc.poll() is None, "the benchmark finished before it could be killed"
        assert time.monotonic() < deadline, "the benchmark made no progress"
        time.sleep(0.02)
    time.sleep(after_s)  # between two flushes: the runs since the last one are lost
    orphans = descendants(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    return _lines(_journal(store)), orphans


def _stop(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    """The runs table of one uninterrupted run of the script (both tests compare with it)."""
    folder = tmp_path_factory.mktemp("uninterrupted")
    store = folder / "reference-run"
    subprocess.run([sys.executable, str(_write_script(folder)), "light", str(store)],
                   check=True, env=_env(folder, folder / "reference-calls.log"), timeout=120)
    return pd.read_parquet(next(store.glob("kill/*/runs.parquet")))


def _check(final: pd.DataFrame, expected: pd.DataFrame, journaled: list[dict],
           calls: list[int], kills: int) -> None:
    keys = ["arm", "item_id", "run"]
    assert not final.duplicated(keys).any()
    assert len(final) == N_ITEMS and final["failure_kind"].ne("budget_stop").all()
    pd.testing.assert_frame_equal(final.drop(columns="latency_s"),
                                  expected.drop(columns="latency_s"))
    by_item = final.set_index("item_id")
    for before in journaled:  # nothing finished is lost or changed
        for (_, item_id, _), record in before.items():
            assert by_item.loc[item_id, "output"] == record.output
    extra = len(calls) - len(set(calls))
    print(f"kill test: {kills} kill(s), journaled at kills {[len(j) for j in journaled]}, "
          f"{len(calls)} arm calls for {N_ITEMS} runs ({extra} repeated)")
    assert set(calls) == set(range(N_ITEMS))
    # at most the runs of the last unflushed second (plus those in flight) are run again
    assert extra <= kills * (RUNS_PER_S * 1.0 + CONCURRENCY)


def test_kill_nine_at_several_points_then_resume_equals_an_uninterrupted_run(
    script: Path, tmp_path: Path, expected: pd.DataFrame,
) -> None:
    store, calls = tmp_path / "store", tmp_path / "calls.log"
    snapshots: list[tuple[dict, int]] = []  # (journal after a kill, arm calls so far)
    points = [(1, 0.0), (300, 0.25), (800, 0.45)]  # (journaled runs, then seconds)
    for at_lines, after_s in points:
        proc = subprocess.Popen([sys.executable, str(script), "light", str(store)],
                                env=_env(tmp_path, calls))
        lines, _ = _kill_when(proc, store, at_lines, timeout=60, after_s=after_s)
        done = Journal(_journal(store)).read()  # type: ignore[arg-type]
        assert lines >= at_lines and len(done) >= at_lines
        for earlier, _ in snapshots:
            assert set(earlier) <= set(done)
        snapshots.append((done, calls.read_text().count("\n")))
    subprocess.run([sys.executable, str(script), "light", str(store)], check=True,
                   env=_env(tmp_path, calls), timeout=120)
    call_lines = [int(x) for x in calls.read_text().split()]
    for done, calls_before in snapshots:  # a restart never calls the arm on a journaled run
        journaled_items = {int(item_id[1:]) for _, item_id, _ in done}
        assert not set(call_lines[calls_before:]) & journaled_items
    final = pd.read_parquet(next(store.glob("kill/*/runs.parquet")))
    _check(final, expected, [done for done, _ in snapshots], call_lines, kills=len(points))
    # a finished benchmark started again calls no arm
    subprocess.run([sys.executable, str(script), "light", str(store)], check=True,
                   env=_env(tmp_path, calls), timeout=120)
    assert calls.read_text().count("\n") == len(call_lines)


def test_kill_nine_of_the_prefect_flow_then_resume(script: Path, tmp_path: Path,
                                                   expected: pd.DataFrame) -> None:
    store, calls = tmp_path / "store", tmp_path / "calls.log"
    proc = subprocess.Popen([sys.executable, str(script), "flow", str(store)],
                            env=_env(tmp_path, calls))
    orphans: list[int] = []
    try:
        _, orphans = _kill_when(proc, store, 400, timeout=180, after_s=0.3)
        assert orphans, "the flow process had no ephemeral API server below it"
        deadline = time.monotonic() + 10  # the watchdog stops it (hr_server/guard.py)
        while any(alive(p) for p in orphans) and time.monotonic() < deadline:
            time.sleep(0.05)
        survivors = [p for p in orphans if alive(p)]
        assert survivors == [], "the temporary server (or its watchdog) outlived kill -9"
    finally:
        if proc.poll() is None:
            proc.kill()
        _stop(orphans)
    done = Journal(_journal(store)).read()  # type: ignore[arg-type]
    assert len(done) >= 400
    restart = subprocess.Popen([sys.executable, str(script), "flow", str(store)],
                               env=_env(tmp_path, calls))
    try:
        restart.wait(timeout=240)
        assert restart.returncode == 0
    finally:
        if restart.poll() is None:
            _stop(descendants(restart.pid))
            restart.kill()
    final = pd.read_parquet(next(store.glob("kill/*/runs.parquet")))
    call_lines = [int(x) for x in calls.read_text().split()]
    _check(final, expected, [done], call_lines, kills=1)
