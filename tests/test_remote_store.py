"""Results on an S3-protocol store: a real moto server on 127.0.0.1, read and written by s3fs.

The benchmark writes its run folder to ``s3://``, resumes from the journal (also on
another machine: the journal is fetched from the store), the response cache of an
LLM arm works, and ``hr summary`` / ``hr report`` read the run from its URL.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import pandas as pd
import pytest

from flows import hr_benchmark
from hr_cli import main
from hr_core import Benchmark, hr_reference
from hr_server.ports import free_port

BUCKET = "hr-results"


@pytest.fixture(scope="module")
def s3_server() -> Iterator[str]:
    """``moto_server`` in its own process on 127.0.0.1; stopped (and waited for) after."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            raise RuntimeError("moto_server did not start")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture()
def s3(s3_server: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    """An empty bucket; s3fs (any process started from here) points at the moto server."""
    for name, value in {"AWS_ENDPOINT_URL": s3_server, "AWS_ACCESS_KEY_ID": "testing",
                        "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                        "HR_JOURNAL_DIR": str(tmp_path / "journal")}.items():
        monkeypatch.setenv(name, value)
    fsspec.filesystem("s3").clear_instance_cache()
    fs = fsspec.filesystem("s3", skip_instance_cache=True)
    fs.mkdir(BUCKET)
    try:
        yield f"s3://{BUCKET}/store"
    finally:
        fs.rm(BUCKET, recursive=True)
        fsspec.filesystem("s3").clear_instance_cache()


class Counted:
    """An arm that counts its calls (in this process)."""

    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, question: str) -> str:
        with self._lock:
            self.calls += 1
        return f"a{question}"


def _reference(n: int = 12) -> Any:
    return hr_reference([{"id": f"q{i}", "question": str(i), "label": f"a{i}"}
                         for i in range(n)], item="question")


def _ls(url: str) -> set[str]:
    fs, root = fsspec.core.url_to_fs(url)
    return {path.rsplit("/", 1)[-1] for path in fs.ls(root)}


def test_a_benchmark_on_s3_writes_its_run_folder_and_loads_back(
    prefect_harness: None, s3: str,
) -> None:
    arm = Counted()
    bench = hr_benchmark({"a": arm}, _reference(), store=s3, name="remote")
    assert bench.run_dir == f"{s3}/remote/{bench.run_id}"
    assert {"manifest.json", "runs.parquet", "summary.parquet", "summary.csv", "report.md",
            "reference.jsonl"} <= _ls(bench.run_dir)
    loaded = Benchmark.load(bench.run_dir)
    pd.testing.assert_frame_equal(loaded.runs, bench.runs)
    assert loaded.manifest["status"] == "completed" and arm.calls == 12


def test_a_run_on_s3_resumes_from_its_journal_on_another_machine(
    prefect_harness: None, s3: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    arm = Counted()
    first = hr_benchmark({"a": arm}, _reference(), store=s3, name="resume",
                         budget={"max_calls": 5})
    assert arm.calls == 5 and (first.runs["failure_kind"] == "budget_stop").sum() == 7
    # another machine: nothing in its local journal folder, only the store
    monkeypatch.setenv("HR_JOURNAL_DIR", str(tmp_path / "other-machine"))
    again = hr_benchmark({"a": arm}, _reference(), store=s3, name="resume")
    assert again.run_id == first.run_id
    assert arm.calls == 12  # the 7 runs the budget stopped, not the 5 done
    assert again.runs["correct"].all()
    monkeypatch.setenv("HR_JOURNAL_DIR", str(tmp_path / "third-machine"))
    hr_benchmark({"a": arm}, _reference(), store=s3, name="resume")
    assert arm.calls == 12  # a finished run calls no arm


def test_an_llm_arm_on_s3_replays_from_its_response_cache(
    prefect_harness: None, s3: str, openai_server: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HR_TEST_LLM_KEY", "sk-test")
    arm = {"model": "openai-compatible:tiny", "base_url": openai_server.url,
           "api_key_env": "HR_TEST_LLM_KEY", "prompt": "Question: {question}"}
    reference = [{"id": "q1", "question": "Who?", "label": "x"},
                 {"id": "q2", "question": "What?", "label": "y"}]
    first = hr_benchmark({"llm": arm}, reference, store=s3, name="llm")
    assert len(openai_server.requests) == 2
    # a run killed before its journal was flushed: the journal is gone, the cache is not
    fs, root = fsspec.core.url_to_fs(first.run_dir)
    fs.rm(root, recursive=True)
    for path in Path(os.environ["HR_JOURNAL_DIR"]).rglob("journal.jsonl"):
        path.unlink()
    again = hr_benchmark({"llm": arm}, reference, store=s3, name="llm")
    assert len(openai_server.requests) == 2
    pd.testing.assert_frame_equal(again.runs.drop(columns="latency_s"),
                                  first.runs.drop(columns="latency_s"))


def _hr(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = 0
    try:
        main(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out + err


def _half_right(question: str) -> str:
    return f"a{question}" if int(question) % 2 else "wrong"


def test_hr_summary_report_and_show_read_a_run_from_its_url(
    prefect_harness: None, s3: str, capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    bench = hr_benchmark({"a": Counted(), "half": _half_right}, _reference(), store=s3,
                         name="cli")
    capsys.readouterr()
    code, out = _hr(capsys, "summary", bench.run_dir)
    assert code == 0, out
    assert "cli" in out and "100.0%" in out and "50.0%" in out
    code, out = _hr(capsys, "report", bench.run_dir)
    assert code == 0, out
    assert "report.html" in _ls(bench.run_dir)
    code, out = _hr(capsys, "report", bench.run_dir, "-o", str(tmp_path / "local.html"))
    assert code == 0 and (tmp_path / "local.html").stat().st_size > 1000
    code, out = _hr(capsys, "show", bench.run_dir, "--arm", "half")
    assert code == 0, out
    assert "q0" in out and "wrong" in out and "q1 " not in out
    code, out = _hr(capsys, "summary", f"{s3}/cli/no-such-run")
    assert code == 2 and "no manifest.json" in out


def test_a_run_on_s3_is_locked_while_another_process_runs_it(
    prefect_harness: None, s3: str,
) -> None:
    from hr_core.core.errors import RunLockedError
    from hr_core.run.session import plan_benchmark
    from hr_core.store.folder import RunStore

    plan = plan_benchmark({"a": Counted()}, _reference(), store=s3, name="locked")
    holder = subprocess.Popen(  # another process holds the run's lock (as a run does)
        [sys.executable, "-c", "import sys, time\n"
         "from hr_core.store.folder import RunStore\n"
         "store = RunStore(sys.argv[1], 'locked', sys.argv[2]); store.lock.acquire()\n"
         "print('held', flush=True); time.sleep(60)", s3, plan.run_id],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(RunLockedError, match="one run of a spec at a time"):
            hr_benchmark({"a": Counted()}, _reference(), store=s3, name="locked")
        assert RunStore(s3, "locked", plan.run_id).lock.holder()["pid"] == holder.pid
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_hr_diff_reads_two_runs_from_s3_and_writes_its_page_there(
    s3: str, capsys: pytest.CaptureFixture[str],
) -> None:
    from hr_core.run.session import BenchmarkSession, plan_benchmark

    def worse(question: str) -> str:
        return f"a{question}" if int(question) < 4 else "no"

    runs = [BenchmarkSession(plan_benchmark({"a": arm}, _reference(), store=s3, name="d",
                                            fresh=True)).run_sync()
            for arm in (Counted(), worse)]
    page = f"{s3}/d/diff.html"
    try:
        main(["diff", str(runs[0].run_dir), str(runs[1].run_dir), "-o", page])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr().out
    assert code == 1  # arm a is worse: 8 of 12 items flipped
    assert "8 broke (right→wrong)" in out
    fs, path = fsspec.core.url_to_fs(page)
    assert "right→wrong" in fs.cat(path).decode()


def _retriever(question: str) -> Any:
    from hr_core import ArmResult
    from hr_core.results import Context

    return ArmResult(answer=f"a{question}", contexts=[
        Context(id=f"p{question}", text=f"passage {question}", score=0.5)])


def test_a_run_on_s3_keeps_its_contexts_file_for_another_machine(
    prefect_harness: None, s3: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    """The passages are beside the journal (``journal.contexts.jsonl``): copied to the
    store with it, and fetched with it by a run on another machine that takes the outputs
    over (another scorer: its scorer sees each run's passages)."""
    from hr_core import hr_scorer

    first = hr_benchmark({"rag": _retriever}, _reference(3), store=s3, name="ctx")
    assert {"journal.jsonl", "journal.contexts.jsonl"} <= _ls(first.run_dir or "")
    monkeypatch.setenv("HR_JOURNAL_DIR", str(tmp_path / "other-machine"))
    seen: list[str] = []

    def strict(question: Any, output: Any, label: Any) -> dict[str, Any]:
        seen.append(output.contexts[0].text)
        right = output.answer == label
        return {"correct": right, "outcome": output.answer,
                "failure_kind": None if right else "wrong"}

    again = hr_benchmark({"rag": _retriever}, _reference(3), store=s3, name="ctx",
                         scorer=hr_scorer(strict, name="strict"))
    assert again.run_id != first.run_id and again.runs["correct"].all()
    assert sorted(seen) == ["passage 0", "passage 1", "passage 2"]  # no arm called again
    assert again.runs["contexts"].tolist() == ["p0 (0.5)", "p1 (0.5)", "p2 (0.5)"]
