"""`hr run --submit-only`, a later `hr run` collecting, and `hr cancel RUN_DIR`, through the
command line and the real hr-benchmark flow, against the in-memory fake batch provider."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from batch_fakes import FakeBatchServer, use_fake_batches
from cli_support import hr

from hr_core.run.session import BenchmarkSession
from hr_core.run.spec import load_spec

ITEMS = [{"id": f"q{i}", "question": f"Which city is number {i}?",
          "document": f"City number {i} is Paris{i}.", "label": f"Paris{i}"}
         for i in range(12)]
SPEC = """\
name: batched
reference: ref.jsonl
max_error_rate: 1
arms:
  reader: {model: "mock:reader", prompt: "Document: {document}\\nQuestion: {question}",
           batch: true}
  echo: {model: "mock:echo", prompt: "{question}", batch: true}
scorer:
  judge: {model: mock-model, rubric: "Is the response's answer the reference's?",
          batch: true}
"""


@pytest.fixture
def server() -> Iterator[FakeBatchServer]:
    fake = FakeBatchServer(polls=1)
    undo = use_fake_batches(fake)
    yield fake
    undo()


def _spec(tmp_path: Path) -> Path:
    (tmp_path / "ref.jsonl").write_text("".join(json.dumps(i) + "\n" for i in ITEMS))
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC + f"store: {tmp_path / 'results'}\n")
    return spec


def test_submit_only_returns_and_a_later_hr_run_collects(
        prefect_harness: None, server: FakeBatchServer, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec(tmp_path)
    code, out, err = hr(capsys, "run", spec, "--submit-only")
    assert code == 0, err
    assert "2 batch(es) of 24 request(s) are running at the provider" in out
    assert "run the same benchmark again to collect them" in out and "hr cancel" in out
    code, out, err = hr(capsys, "run", spec, "--submit-only")  # nothing new to submit
    assert code == 0 and "(0 submitted now)" in out, err
    code, out, err = hr(capsys, "run", spec)
    assert code == 0, err
    assert "batch batch_1 (arm:reader): ended, succeeded 12" in out
    assert "batch batch_3 (judge): ended, succeeded 48" in out  # 24 runs x 2 orders
    assert (server.created, server.requests) == (3, 72)
    assert max(server.submissions.values()) == 1
    (run_dir,) = (tmp_path / "results" / "batched").iterdir()
    runs = __import__("pandas").read_parquet(run_dir / "runs.parquet")
    assert runs["correct"].sum() == 12 and runs["judge_status"].eq("ok").all()


def test_hr_cancel_cancels_the_open_batches_and_their_runs_say_so(
        prefect_harness: None, server: FakeBatchServer, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec(tmp_path)
    assert hr(capsys, "run", spec, "--submit-only")[0] == 0
    (run_dir,) = (tmp_path / "results" / "batched").iterdir()
    code, out, err = hr(capsys, "cancel", run_dir)
    assert code == 0, err
    assert "asked the provider to cancel 2 batch(es) (batch_1, batch_2)" in out
    code, out, _ = hr(capsys, "cancel", run_dir)
    assert "no batch to cancel" in out
    code, out, err = hr(capsys, "run", spec)
    assert code == 0, err
    assert server.requests == 24
    runs = __import__("pandas").read_parquet(run_dir / "runs.parquet")
    assert runs["failure_kind"].eq("error").all()
    assert runs["error"].str.contains("batch request canceled").all()


def test_an_interrupt_while_batches_run_says_they_keep_running_and_how_to_cancel(
        server: FakeBatchServer, tmp_path: Path) -> None:
    from hr_core.run.plan import plan_benchmark

    spec = load_spec(_spec(tmp_path))
    plan = plan_benchmark(dict(spec.arms), ITEMS, store=str(tmp_path / "results"),
                          name="batched")
    session = BenchmarkSession(plan)
    session.batch_options = {"submit_only": True, "poll_s": 0}
    with pytest.raises(Exception, match="are running at the provider"):
        session.run_sync()
    again = BenchmarkSession(plan)
    again.open()
    try:
        message = again.interrupt()
    finally:
        again.close()
    assert "2 batch(es) keep running at the provider" in message
    assert f"`hr cancel {again.store.run_dir}` cancels them" in message
