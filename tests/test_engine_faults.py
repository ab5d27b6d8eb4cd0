"""Faults inside one process: unwritable stores, hostile arms, hanging calls, damaged files.

Read-only and full stores are real: a tmpfs (or loop-mounted) file system,
remounted read-only or filled up while the benchmark runs.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest
from fault_support import mounted, remount

from hr_core import Benchmark, CorruptRunError, StoreWriteError
from hr_core.run.session import BenchmarkSession, plan_benchmark
from hr_core.store.folder import RUNS, RunStore
from hr_core.store.journal import Journal

N = 1500


def _items(n: int = N) -> list[dict[str, Any]]:
    return [{"id": f"i{k}", "n": k, "label": f"a{k}"} for k in range(n)]


class CountingArm:
    """An async arm that logs each call; ``on_call(count)`` runs before it answers."""

    def __init__(self, on_call: Any = None, delay: float = 0.01) -> None:
        self.calls: list[int] = []
        self.on_call = on_call
        self.delay = delay

    async def __call__(self, payload: dict[str, Any]) -> str:
        self.calls.append(payload["n"])
        if self.on_call is not None:
            self.on_call(len(self.calls))
        await asyncio.sleep(self.delay)
        return f"a{payload['n']}"


@pytest.fixture(autouse=True)
def _fallback_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "fallback"
    monkeypatch.setenv("HR_JOURNAL_DIR", str(folder))
    return folder


def _run(arm: Any, store: Path, n: int = N, **options: Any) -> Any:
    plan = plan_benchmark({"arm": arm}, _items(n), store=str(store), name="faults",
                          concurrency=4, **options)
    return BenchmarkSession(plan).run_sync()


# -- 1. store write failures stop the run at once ---------------------------------------


def _check_stopped_then_resumed(store: Path, first: CountingArm, stopped_at: int,
                                error: StoreWriteError, cause: str) -> None:
    journal_path = next(store.glob("faults/*/journal.jsonl"))
    message = str(error)
    print(f"store failure ({cause}) after {stopped_at} calls: {len(first.calls)} of {N} "
          "arms calls made")
    assert f"cannot write {journal_path}: {cause}" in message
    assert "run the benchmark again to resume" in message
    # before: every one of the N runs was called, and the failure came at the end
    assert len(first.calls) < stopped_at + 600, len(first.calls)
    journal = Journal(journal_path)
    assert journal.fallback.exists() and str(journal.fallback) in message
    kept = journal.read()
    assert len(kept) == len(first.calls)  # every finished run is in the journal or fallback


def test_a_store_made_read_only_mid_run_stops_new_calls_and_keeps_finished_runs(
        tmp_path: Path) -> None:
    with mounted(tmp_path / "store", "16m") as store:
        done: list[int] = []

        def read_only_once_journaled(count: int) -> None:
            if not done and count >= 200 and any(store.glob("faults/*/journal.jsonl")):
                remount(store, "ro")
                done.append(count)

        first = CountingArm(read_only_once_journaled)
        with pytest.raises(StoreWriteError) as caught:
            _run(first, store)
        _check_stopped_then_resumed(store, first, done[0], caught.value,
                                    "Read-only file system")
        remount(store, "rw")
        second = CountingArm()
        bench = _run(second, store)
        assert not set(first.calls) & set(second.calls)  # nothing finished is made again
        assert sorted(first.calls + second.calls) == list(range(N))
        assert bench.runs["correct"].all() and len(bench.runs) == N
        assert not Journal(next(store.glob("faults/*/journal.jsonl"))).fallback.exists()


def test_a_full_store_stops_new_calls_and_names_the_journal_and_the_cause(
        tmp_path: Path) -> None:
    with mounted(tmp_path / "store", "192k") as store:
        first = CountingArm()
        with pytest.raises(StoreWriteError) as caught:
            _run(first, store, n=4000)
        print(f"full store: {len(first.calls)} of 4000 arm calls made")
        assert len(first.calls) < 4000
        journal_path = next(store.glob("faults/*/journal.jsonl"))
        assert f"cannot write {journal_path}: No space left on device" in str(caught.value)
        journal = Journal(journal_path)
        assert len(journal.read()) == len(first.calls)
        assert str(journal.fallback) in str(caught.value)


def test_final_results_that_cannot_be_written_name_the_file_and_keep_the_old_one(
        tmp_path: Path) -> None:
    with mounted(tmp_path / "store", "1m") as store:
        run_store = RunStore(store, "faults", "abc")
        small = pd.DataFrame({"x": [1, 2, 3]})
        run_store.write_frame(RUNS, small)
        big = pd.DataFrame({"x": [os.urandom(64).hex() for _ in range(40_000)]})
        with pytest.raises(StoreWriteError, match=r"cannot write .*/faults/abc/runs\.parquet: "
                                                  "No space left on device"):
            run_store.write_frame(RUNS, big)
        pd.testing.assert_frame_equal(run_store.read_frame(RUNS), small)  # never truncated
        assert [p.name for p in (store / "faults" / "abc").iterdir()] == [RUNS]


# -- 2. an arm's SystemExit / KeyboardInterrupt / BaseException is its run's error -------


class Hostile(BaseException):
    pass


def _exits(payload: dict[str, Any]) -> str:  # a sync arm: runs in a thread
    if payload["n"] == 3:
        sys.exit(3)
    return f"a{payload['n']}"


async def _interrupts(payload: dict[str, Any]) -> str:
    if payload["n"] == 4:
        raise KeyboardInterrupt
    if payload["n"] == 5:
        raise Hostile("not an Exception")
    return f"a{payload['n']}"


def test_an_arm_that_exits_or_raises_keyboard_interrupt_is_an_error_row(tmp_path: Path) -> None:
    plan = plan_benchmark({"exits": _exits, "interrupts": _interrupts,
                           "good": lambda p: f"a{p['n']}"}, _items(10), store=str(tmp_path))
    bench = BenchmarkSession(plan).run_sync()
    errors = bench.runs.dropna(subset=["error"]).set_index(["arm", "item_id"])["error"]
    assert errors.to_dict() == {("exits", "i3"): "SystemExit: 3",
                                ("interrupts", "i4"): "KeyboardInterrupt",
                                ("interrupts", "i5"): "Hostile: not an Exception"}
    assert bench.summary().set_index("arm")["error"].to_dict() == {
        "exits": 1, "interrupts": 2, "good": 0}
    assert len(Journal(Path(bench.run_dir) / "journal.jsonl").read()) == 30


# -- 4. per-call timeouts; a budget's time stops hanging calls -----------------------------

_FOREVER = threading.Event()


def _hangs_on_two(payload: dict[str, Any]) -> str:
    if payload["n"] == 2:
        _FOREVER.wait()
    return f"a{payload['n']}"


async def _async_hangs_on_one(payload: dict[str, Any]) -> str:
    if payload["n"] == 1:
        await asyncio.sleep(3600)
    return f"a{payload['n']}"


def test_a_call_past_its_timeout_is_an_error_row_and_the_benchmark_goes_on(
        tmp_path: Path) -> None:
    plan = plan_benchmark({"sync": _hangs_on_two, "async": _async_hangs_on_one,
                           "slow_ok": {"arm": _hangs_on_two, "timeout_s": 0.5}},
                          _items(6), store=str(tmp_path), timeout_s=0.3)
    started = time.monotonic()
    bench = BenchmarkSession(plan).run_sync()
    assert time.monotonic() - started < 10
    errors = bench.runs.dropna(subset=["error"]).set_index(["arm", "item_id"])["error"]
    assert errors.to_dict() == {("sync", "i2"): "timed out after 0.3 s",
                                ("async", "i1"): "timed out after 0.3 s",
                                ("slow_ok", "i2"): "timed out after 0.5 s"}
    assert bench.runs["correct"].sum() == 15
    assert bench.manifest["timeout_s"] == {"sync": 0.3, "async": 0.3, "slow_ok": 0.5}


@pytest.mark.parametrize("value", [0, -1, True, "soon", {"a": 1}])
def test_a_bad_timeout_is_a_spec_error(tmp_path: Path, value: Any) -> None:
    from hr_core import SpecError

    with pytest.raises(SpecError, match="timeout_s must be a positive number"):
        plan_benchmark({"a": str}, _items(1), store=str(tmp_path), timeout_s=value)
    with pytest.raises(SpecError, match="arm 'a': timeout_s must be a positive number"):
        plan_benchmark({"a": {"arm": str, "timeout_s": value}}, _items(1), store=str(tmp_path))


def test_timeouts_in_a_spec_benchmark_wide_and_per_arm(tmp_path: Path) -> None:
    from hr_core.run.spec import load_spec

    spec = tmp_path / "spec.yaml"
    spec.write_text(textwrap.dedent("""
        reference: ref.jsonl
        timeout_s: 2.5
        arms:
          plain: hr_core.examples.demo_arms:keyword_overlap
          own: {arm: hr_core.examples.demo_arms:keyword_overlap, timeout_s: 9}
          llm: {model: "mock:reader", prompt: "{n}", timeout_s: 4}
    """))
    loaded = load_spec(spec)
    plan = plan_benchmark(loaded.arms, _items(1), store=str(tmp_path),
                          timeout_s=loaded.timeout_s)
    assert plan.timeout_s == {"plain": 2.5, "own": 9.0, "llm": 4.0}
    spec.write_text("reference: ref.jsonl\ntimeout_s: -1\narms: {a: m:f}\n")
    from hr_core import SpecError

    with pytest.raises(SpecError, match=r"spec\.yaml, line 2, field 'timeout_s'"):
        load_spec(spec)


HANGING_SCRIPT = textwrap.dedent("""
    import sys, threading, time
    from hr_core.run.session import BenchmarkSession, plan_benchmark

    def hangs(payload):
        threading.Event().wait()

    options = {"budget": {"max_seconds": 1.0}} if sys.argv[2] == "budget" else {
        "timeout_s": 0.5}
    plan = plan_benchmark({"hangs": hangs}, [{"id": f"i{k}", "label": "x"} for k in range(6)],
                          store=sys.argv[1], concurrency=2, **options)
    started = time.monotonic()
    bench = BenchmarkSession(plan).run_sync()
    print({k: int(v) for k, v in bench.runs["failure_kind"].value_counts().items()})
""")


@pytest.mark.parametrize("mode", ["budget", "timeout"])
def test_sync_arms_that_never_return_do_not_keep_the_process_alive(tmp_path: Path,
                                                                   mode: str) -> None:
    script = tmp_path / "hangs.py"
    script.write_text(HANGING_SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "store"), mode],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    if mode == "budget":  # every call hung: the budget's time stopped them all
        assert "{'budget_stop': 6}" in done.stdout
    else:
        assert "{'error': 6}" in done.stdout


# -- 3. damaged files: one line naming the file and the fix ---------------------------------


def test_a_truncated_runs_table_names_the_file_and_the_fix(tmp_path: Path) -> None:
    bench = _run(CountingArm(delay=0), tmp_path, n=5)
    runs = Path(bench.run_dir) / RUNS
    runs.write_bytes(runs.read_bytes()[:40])
    with pytest.raises(CorruptRunError, match=rf"{runs} is corrupt or truncated .*run the "
                                              "benchmark again"):
        Benchmark.load(bench.run_dir)
    runs.write_bytes(b"")
    with pytest.raises(CorruptRunError, match=r"runs\.parquet is corrupt or truncated"):
        Benchmark.load(bench.run_dir)
    (Path(bench.run_dir) / "manifest.json").write_text('{"name": "faul')
    with pytest.raises(CorruptRunError, match=r"manifest\.json is corrupt or truncated"):
        Benchmark.load(bench.run_dir)
    _run(CountingArm(delay=0), tmp_path, n=5)  # the fix: run again, from the journal
    assert len(Benchmark.load(bench.run_dir).runs) == 5


@pytest.mark.parametrize("line", [b"[1, 2]", b'"text"', b"42", b'{"arm": "arm"}',
                                  b'{"arm": "arm", "item_id": ["i1"], "run": 1}'])
def test_a_journal_line_that_is_json_but_not_a_record_names_the_file_and_line(
        tmp_path: Path, line: bytes) -> None:
    path = tmp_path / "journal.jsonl"
    good = orjson.dumps({"arm": "a", "item_id": "i1", "run": 1})
    path.write_bytes(good + b"\n" + line + b"\n")
    with pytest.raises(CorruptRunError, match=rf"{path}, line 2: not a run record .*delete "
                                              "that line"):
        Journal(path).read()


# -- 7. outputs with no answer text ---------------------------------------------------------


class Opaque:
    pass


@pytest.mark.parametrize(("output", "kind"), [(b"a1", "bytes"), ({"a1"}, "set"),
                                              (Opaque(), "Opaque")])
def test_an_output_without_answer_text_is_a_parse_failure_saying_what_it_got(
        tmp_path: Path, output: Any, kind: str) -> None:
    plan = plan_benchmark({"odd": lambda _p: output}, _items(1), store=str(tmp_path))
    row = BenchmarkSession(plan).run_sync().runs.iloc[0]
    assert row["failure_kind"] == "parse_failure"
    assert row["error"].startswith(f"the arm returned {kind}, which has no answer text")


async def _raises_its_own_timeout(payload: dict[str, Any]) -> str:
    raise TimeoutError("the model took too long")


def test_an_arms_own_timeout_error_is_its_error_not_ours(tmp_path: Path) -> None:
    plan = plan_benchmark({"a": _raises_its_own_timeout}, _items(2), store=str(tmp_path))
    runs = BenchmarkSession(plan).run_sync().runs
    assert runs["error"].tolist() == ["TimeoutError: the model took too long"] * 2


# -- 7. small things: keys, imports, counts -------------------------------------------------


def test_an_unset_api_key_env_is_an_error_for_openai_and_a_warning_for_compatible(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hr_core import SpecError

    monkeypatch.delenv("HR_TEST_UNSET_KEY", raising=False)
    arm = {"model": "openai:gpt-4o-mini", "prompt": "{n}",
           "api_key_env": "HR_TEST_UNSET_KEY"}
    with pytest.raises(SpecError, match="arm 'gpt': openai:gpt-4o-mini needs an API key: set "
                                        "the environment variable HR_TEST_UNSET_KEY"):
        plan_benchmark({"gpt": arm}, _items(1), store=str(tmp_path))
    local = {"model": "openai-compatible:llama3", "base_url": "http://127.0.0.1:9/v1",
             "prompt": "{n}", "api_key_env": "HR_TEST_UNSET_KEY"}
    with pytest.warns(UserWarning, match="api_key_env names HR_TEST_UNSET_KEY, which is not "
                                         "set; requests go without a key"):
        plan_benchmark({"local": local}, _items(1), store=str(tmp_path))
    monkeypatch.setenv("HR_TEST_UNSET_KEY", "sk-test")
    plan_benchmark({"gpt": arm}, _items(1), store=str(tmp_path))  # set: no complaint


def test_an_arm_module_that_raises_at_import_is_one_line_naming_the_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hr_core import SpecError

    (tmp_path / "broken_arms_mod.py").write_text("x = 1 / 0\n")
    (tmp_path / "exiting_arms_mod.py").write_text("import sys\nsys.exit('no config')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SpecError, match=r"^import path 'broken_arms_mod:arm': importing "
                                        r"'broken_arms_mod' raised ZeroDivisionError: "
                                        r"division by zero$"):
        plan_benchmark({"a": "broken_arms_mod:arm"}, _items(1), store=str(tmp_path))
    with pytest.raises(SpecError, match="importing 'exiting_arms_mod' raised SystemExit: "
                                        "no config"):
        plan_benchmark({"a": "exiting_arms_mod:arm"}, _items(1), store=str(tmp_path))


@pytest.mark.parametrize("field", ["runs", "concurrency", "chunk_size"])
def test_a_bool_is_not_a_count_in_a_spec(tmp_path: Path, field: str) -> None:
    from hr_core import SpecError
    from hr_core.run.spec import load_spec

    spec = tmp_path / "spec.yaml"
    spec.write_text(f"reference: ref.jsonl\narms: {{a: m:f}}\n{field}: true\n")
    with pytest.raises(SpecError, match=rf"spec\.yaml, line 3, field '{field}': Input should "
                                        "be a valid integer"):
        load_spec(spec)
    spec.write_text("reference: ref.jsonl\narms: {a: m:f}\nbudget: {max_calls: true}\n")
    with pytest.raises(SpecError, match=r"field 'budget\.max_calls'"):
        load_spec(spec)
