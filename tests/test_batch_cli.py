"""`hr run --submit-only`, a later `hr run` collecting, `hr cancel RUN_DIR` and a flow run
cancelled while it waits, through the command line and the real hr-benchmark flow, against
the in-memory fake batch provider."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from batch_fakes import FakeBatchServer, use_fake_batches
from cli_support import hr
from deploy_support import run_artifacts
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterTags
from prefect.states import Cancelling

from flows import hr_benchmark
from hr_core.core.errors import BenchmarkCancelled
from hr_core.run.plan import plan_benchmark
from hr_core.run.session import BenchmarkSession
from hr_core.run.spec import load_spec
from hr_core.store.manifest import read_manifest

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
    (run_dir,) = (tmp_path / "results" / "batched").iterdir()
    # nothing runs here any more: the run is not "running" but waiting at the provider
    assert read_manifest(run_dir).status == "submitted"
    code, out, err = hr(capsys, "summary", run_dir)
    assert code != 0
    assert "status 'submitted'" in err and "batches are running at the provider" in err
    assert "run the same benchmark again to collect them, or `hr cancel` this folder" in err
    code, out, err = hr(capsys, "run", spec, "--submit-only")  # nothing new to submit
    assert code == 0 and "(0 submitted now)" in out, err
    code, out, err = hr(capsys, "run", spec)
    assert code == 0, err
    assert read_manifest(run_dir).status == "completed"
    assert "--submit-only: no call waits" not in out
    assert "batch batch_1 (arm:reader): ended, succeeded 12" in out
    assert "batch batch_3 (judge): ended, succeeded 48" in out  # 24 runs x 2 orders
    assert (server.created, server.requests) == (3, 72)
    assert max(server.submissions.values()) == 1
    runs = __import__("pandas").read_parquet(run_dir / "runs.parquet")
    assert runs["correct"].sum() == 12 and runs["judge_status"].eq("ok").all()
    code, out, err = hr(capsys, "run", spec, "--submit-only")  # all answered: nothing to do
    assert code == 0, err
    assert "hr: --submit-only: no call waits for a batch" in out
    assert server.requests == 72


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


def test_a_flow_run_cancelled_while_waiting_says_its_batches_keep_running(
        prefect_harness: None, tmp_path: Path) -> None:
    fake = FakeBatchServer(polls=10**6)  # never ends while the test waits
    undo = use_fake_batches(fake)
    cancelled: list[Any] = []

    async def cancel() -> None:
        async with get_client() as client:
            for _ in range(2400):
                runs = await client.read_flow_runs(flow_run_filter=FlowRunFilter(
                    tags=FlowRunFilterTags(all_=["batched-cancel"])))
                running = [r for r in runs if r.state is not None and r.state.is_running()]
                shown = running and [a for a in await run_artifacts(client, running[0].id)
                                     if a.type == "progress" and "in_progress" in
                                     str(a.description) and "arm:echo" in str(a.description)]
                if shown:  # waiting for its batches, as the progress artifact says
                    await client.set_flow_run_state(running[0].id, Cancelling(), force=True)
                    cancelled.append(running[0].id)
                    return
                await asyncio.sleep(0.05)

    thread = threading.Thread(target=lambda: asyncio.run(cancel()), daemon=True)
    try:
        spec = _spec(tmp_path)
        spec.write_text(spec.read_text().replace("name: batched", "name: batched-cancel"))
        thread.start()
        with pytest.raises(BenchmarkCancelled) as raised:
            hr_benchmark(str(spec), batch={"poll_s": 0.05}, require_valid_judge="ignore")
    finally:
        thread.join(timeout=120)
        undo()
    message = str(raised.value)
    assert "2 batch(es) keep running at the provider" in message
    assert "`hr cancel " in message and "run the same benchmark again to collect them" in message
    assert fake.created == 2
    artifacts = asyncio.run(_artifacts(cancelled[0]))
    (progress,) = [a for a in artifacts if a.type == "progress"]
    assert progress.description == ("batch batch\\_1 (arm:reader): in_progress, processing "
                                    "12; batch batch\\_2 (arm:echo): in_progress, processing 12")
    assert progress.data == 0.0  # no request of the batches ended yet


async def _artifacts(flow_run_id: Any) -> list[Any]:
    async with get_client() as client:
        return await run_artifacts(client, flow_run_id)


def test_hr_cancel_of_a_folder_without_batches_says_so_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = hr(capsys, "cancel", tmp_path / "results" / "x" / "abc")
    assert code == 2
    assert err.startswith("hr: error: ") and "no batches recorded for this run" in err
    assert len(err.strip().splitlines()) == 1
