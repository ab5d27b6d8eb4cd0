"""A pairwise judge with ``batch: true`` in ``hr_compare`` (the hr-compare flow) and
``hr_judge_validate``, through the openai SDK against OpenAI's Batch API on 127.0.0.1
(tests/openai_batch_server.py): the same verdicts as the same judge called live on the
same server, billed at the batch rate, both orders of a pair in one batch, and a kill or
a second invocation paying no request twice."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from anthropic_batch_server import FakeAnthropicBatchServer
from cli_support import hr
from deploy_support import run_artifacts
from openai_batch_server import FakeOpenAIBatchServer
from prefect.client.orchestration import get_client

from flows import hr_benchmark, hr_compare, hr_judge_validate
from hr_core.core.errors import HrTypeError, RunLockedError, SpecError
from hr_core.judge import hr_judge_config
from hr_core.judge.jury import hr_judge_jury
from hr_core.models.providers.batch_files import BatchCallError
from hr_core.run import interrupt
from hr_core.run.batch.judging import BatchJudging
from hr_core.run.batch.ledger import BatchLedger
from hr_core.run.batch.pending import BatchesSubmitted, BatchesWaiting
from hr_core.store.lock import RunLock

ITEMS = [{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}"} for i in range(10)]
RUBRIC = "Which answer is right?"
KEY_ENV = "HR_TEST_BATCH_JUDGE_KEY"
FAST = {"poll_s": 0}
SUBMIT = {"submit_only": True, "poll_s": 0}


def right(payload: dict[str, Any]) -> str:
    return "a" + payload["question"][1:]


def half(payload: dict[str, Any]) -> str:
    n = int(payload["question"][1:])
    return f"A{n}" if n % 2 else "no idea"  # right too: the served judge ignores case


def judge_reply(body: dict[str, Any]) -> str:
    """The served judge: the candidate equal to the reference wins; when both are, the
    first shown (a position bias: the two orders disagree)."""
    content = body["messages"][-1]["content"]
    if not isinstance(content, str):  # Anthropic's content blocks
        content = "".join(block.get("text", "") for block in content)
    material = json.loads(content.split("\n", 1)[1])
    shown, reference = material["candidates"], material["reference"]
    verdict = ("A" if shown["A"].lower() == reference else
               "B" if shown["B"].lower() == reference else "tie")
    return json.dumps({"verdict": verdict, "reason": "matches the reference"})


@pytest.fixture()
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIBatchServer]:
    monkeypatch.setenv(KEY_ENV, "sk-test-judge")
    with FakeOpenAIBatchServer(reply=judge_reply) as running:
        yield running


def _judge(server: FakeOpenAIBatchServer, batch: bool) -> Any:
    return hr_judge_config({"model": "openai:gpt-judge", "base_url": server.url,
                            "api_key_env": KEY_ENV, "batch": batch,
                            "prices": {"input": 1.0, "output": 4.0},
                            "params": {"max_tokens": 64}},
                           RUBRIC, mode="pairwise")


def test_a_batched_anthropic_judge_gives_the_live_verdicts_at_the_batch_rate(
        prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-ant-judge")
    bench = hr_benchmark({"right": right, "half": half}, ITEMS, store=str(tmp_path))
    with FakeAnthropicBatchServer(reply=judge_reply, api_key="sk-ant-judge") as server:
        def judge(batch: bool) -> Any:
            return hr_judge_config({"model": "anthropic:claude-judge", "base_url": server.url,
                                    "api_key_env": KEY_ENV, "batch": batch,
                                    "prices": {"input": 3.0, "output": 15.0},
                                    "params": {"max_tokens": 64}}, RUBRIC, mode="pairwise")

        live = hr_compare(bench, ["right", "half"], judge(False), model=judge(False)
                          .chat_model())
        live_bill = server.book.billed_usd("live")
        batched = hr_compare(bench.run_dir, ["right", "half"], judge(True), batch=FAST)
        assert _pairs(batched) == _pairs(live)
        assert batched.summary().iloc[0]["a_wins"] == 5
        assert server.book.created == 1 and len(server.book.submitted) == 20
        assert server.book.billed_usd("batch") == pytest.approx(live_bill / 2)
        assert server.book.twice() == []


async def _artifacts(flow_run_id: Any) -> list[Any]:
    async with get_client() as client:
        return await run_artifacts(client, flow_run_id)


def _pairs(comparison: Any) -> list[tuple[Any, ...]]:
    pairs = comparison.pairs.sort_values(["item_id", "run"])
    return list(zip(pairs["item_id"], pairs["status"], pairs["winner"],
                    pairs["order_verdicts"].map(tuple), strict=True))


def test_a_batched_pairwise_judge_gives_the_live_verdicts_at_the_batch_rate(
        prefect_harness: None, server: FakeOpenAIBatchServer, tmp_path: Path) -> None:
    live_bench = hr_benchmark({"right": right, "half": half}, ITEMS, store=str(tmp_path / "l"))
    live = hr_compare(live_bench.run_dir, ["right", "half"], _judge(server, batch=False))
    live_bill = server.book.billed_usd("live")
    assert server.book.created == 0 and live_bill > 0

    bench = hr_benchmark({"right": right, "half": half}, ITEMS, store=str(tmp_path / "b"))
    batched = hr_compare(bench.run_dir, ["right", "half"], _judge(server, batch=True),
                         batch=FAST)
    assert _pairs(batched) == _pairs(live)
    assert batched.summary().to_dict() == live.summary().to_dict()
    shown = [str(a.description) for a in asyncio.run(_artifacts(
        batched.manifest["flow_run_id"])) if a.type == "progress"]
    assert len(shown) == 1 and shown[0].startswith("batch batch\\_")  # markdown-escaped
    assert "(judge): " in shown[0]
    row = batched.summary().iloc[0]
    assert (row["a_wins"], row["b_wins"], row["no_verdict"]) == (5, 0, 5)
    # 10 pairs x 2 orders, all in one batch; none live; each billed once at half the price
    assert server.book.created == 1 and len(server.book.submitted) == 20
    assert server.book.billed_usd("live") == pytest.approx(live_bill)  # no live call now
    assert server.book.billed_usd("batch") == pytest.approx(live_bill / 2)
    assert server.book.twice() == []
    ledger = Path(bench.run_dir) / "comparisons" / f"{_judge(server, True).hash[:12]}" \
        "-right-vs-half" / "batches" / "ledger.jsonl"
    assert ledger.is_file()

    # the same comparison again: answered from the ledger (and the response cache), no
    # batch created, nothing billed
    again = hr_compare(bench.run_dir, ["right", "half"], _judge(server, batch=True), batch=FAST)
    assert _pairs(again) == _pairs(live)
    assert server.book.created == 1 and server.book.twice() == []


def test_submit_only_then_the_same_comparison_collects_without_paying_twice(
        prefect_harness: None, server: FakeOpenAIBatchServer, tmp_path: Path) -> None:
    bench = hr_benchmark({"right": right, "half": half}, ITEMS, store=str(tmp_path))
    judge = _judge(server, batch=True)
    server.book.polls = 3
    with pytest.raises(BatchesSubmitted, match=r"1 judge batch\(es\) of 20 request\(s\) are "
                                               r"running at the provider \(20 submitted"):
        hr_compare(bench.run_dir, ["right", "half"], judge, batch=SUBMIT)
    assert not list((Path(bench.run_dir) / "comparisons").glob("*.parquet"))  # no verdict
    with pytest.raises(BatchesSubmitted, match=r"\(0 submitted now\)"):
        hr_compare(bench.run_dir, ["right", "half"], judge, batch=SUBMIT)
    collected = hr_compare(bench.run_dir, ["right", "half"], judge, batch=FAST)
    assert len(collected.pairs) == 10 and collected.pairs["status"].isin(
        ["ok", "no_consensus"]).all()
    assert server.book.created == 1 and max(server.book.submitted.values()) == 1
    assert server.book.twice() == []


def test_a_kill_between_the_create_call_and_its_record_is_reconciled_not_resubmitted(
        prefect_harness: None, server: FakeOpenAIBatchServer, tmp_path: Path) -> None:
    bench = hr_benchmark({"right": right, "half": half}, ITEMS, store=str(tmp_path))
    judge = _judge(server, batch=True)
    server.book.lose_replies = 1  # the batch is created, its reply never arrives
    with pytest.raises(BatchCallError, match="creating the batch failed: connection"):
        hr_compare(bench.run_dir, ["right", "half"], judge, batch=FAST)
    assert server.book.created == 1
    comparison = hr_compare(bench.run_dir, ["right", "half"], judge, batch=FAST)
    assert len(comparison.pairs) == 10
    assert server.book.created == 1 and server.book.twice() == []


def test_an_expired_judge_request_is_never_a_verdict_and_the_next_call_resubmits_it(
        prefect_harness: None, server: FakeOpenAIBatchServer, tmp_path: Path) -> None:
    bench = hr_benchmark({"right": right, "half": half}, ITEMS, store=str(tmp_path))
    judge = _judge(server, batch=True)
    server.book.expire_after = 0  # the first batch expires before answering
    with pytest.raises(BatchesWaiting, match=r"20 judge request\(s\) expired unanswered .*"
                                             r"run `hr compare .* again"):
        hr_compare(bench.run_dir, ["right", "half"], judge, batch=FAST)
    assert not list((Path(bench.run_dir) / "comparisons").glob("*.parquet"))
    server.book.expire_after = None
    comparison = hr_compare(bench.run_dir, ["right", "half"], judge, batch=FAST)
    assert comparison.summary().iloc[0]["a_wins"] == 5
    assert server.book.created == 2 and server.book.twice() == []


def test_judge_validate_through_a_batch_gives_the_live_record(
        prefect_harness: None, server: FakeOpenAIBatchServer, tmp_path: Path) -> None:
    rows = pd.DataFrame([{"item": f"Q{i}", "a": f"a{i}", "b": "no idea" if i % 2 else f"A{i}",
                          "reference": f"a{i}", "human": "A" if i % 2 else "tie"}
                         for i in range(8)])
    labels = tmp_path / "labels.csv"
    rows.to_csv(labels, index=False)
    live = hr_judge_validate(_judge(server, batch=False), str(labels),
                             store=str(tmp_path / "live"))
    live_bill = server.book.billed_usd("live")
    batched = hr_judge_validate(_judge(server, batch=True), str(labels),
                                store=str(tmp_path / "batch"), batch=FAST)
    assert batched.hash == live.hash  # batch is not in the judge's hash
    assert (batched.n, batched.agreement) == (live.n, live.agreement)
    assert server.book.created == 1 and len(server.book.submitted) == 16
    assert server.book.billed_usd("batch") == pytest.approx(live_bill / 2)
    assert BatchLedger(tmp_path / "batch" / live.hash / "batches").outcome_counts() == {
        "succeeded": 16}


def _judge_file(tmp_path: Path, server: FakeOpenAIBatchServer) -> Path:
    path = tmp_path / "judge.yaml"
    path.write_text(f"""\
mode: pairwise
rubric: {RUBRIC}
model: {{provider: openai, model: gpt-judge, base_url: "{server.url}", api_key_env: {KEY_ENV},
         prices: {{input: 1.0, output: 4.0}}, params: {{max_tokens: 64}}, batch: true}}
""")
    return path


def test_hr_compare_submit_only_then_hr_compare_collects_and_hr_cancel_knows_the_folder(
        prefect_harness: None, server: FakeOpenAIBatchServer, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    bench = hr_benchmark({"right": right, "half": half}, ITEMS, store=str(tmp_path))
    judge = _judge_file(tmp_path, server)
    server.book.polls = 2
    code, out, err = hr(capsys, "compare", bench.run_dir, "--judge", judge, "--arms",
                        "right", "half", "--submit-only")
    assert code == 0, err
    out = " ".join(out.split())  # the console wraps long lines
    assert "1 judge batch(es) of 20 request(s) are running at the provider" in out
    assert f"run `hr compare {bench.run_dir} --judge {judge} --arms right half` again" in out
    (folder,) = (Path(bench.run_dir) / "comparisons").iterdir()
    assert f"`hr cancel {folder}` cancels them" in out
    code, out, err = hr(capsys, "compare", bench.run_dir, "--judge", judge, "--arms",
                        "right", "half")
    assert code == 0, err
    assert "(judge): in_progress, canceled 0, errored 0, expired 0, processing 10, " \
        "succeeded 10" in out  # the polls' lines
    assert "(judge): ended, canceled 0, errored 0, expired 0, processing 0, succeeded 20" in out
    assert "Pairwise comparison" in out
    assert server.book.created == 1 and server.book.twice() == []
    code, out, err = hr(capsys, "cancel", folder)
    assert code == 0, err
    assert "no batch to cancel" in " ".join(out.split())


def test_hr_cancel_cancels_a_comparisons_open_batch(
        prefect_harness: None, server: FakeOpenAIBatchServer, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    bench = hr_benchmark({"right": right, "half": half}, ITEMS, store=str(tmp_path))
    judge = _judge_file(tmp_path, server)
    server.book.polls = 50
    assert hr(capsys, "compare", bench.run_dir, "--judge", judge, "--arms", "right", "half",
              "--submit-only")[0] == 0
    (folder,) = (Path(bench.run_dir) / "comparisons").iterdir()
    code, out, err = hr(capsys, "cancel", folder)
    assert code == 0, err
    said = " ".join(out.split())
    assert "asked the provider to cancel 1 batch(es)" in said
    # a comparison's folder: the command that collects is the judge's, not a benchmark's
    assert "run the same hr compare or hr judge validate command again" in said
    assert "same benchmark" not in said
    assert [job.state for job in server.book.jobs.values()] == ["cancelling"]


def test_ctrl_c_while_waiting_leaves_the_batch_running_and_the_same_call_collects_it(
        prefect_harness: None, server: FakeOpenAIBatchServer, tmp_path: Path) -> None:
    bench = hr_benchmark({"right": right, "half": half}, ITEMS, store=str(tmp_path))
    judge = _judge(server, batch=True)
    server.book.polls = 3
    seen: list[str] = []

    def ctrl_c(label: str, status: Any) -> None:  # what hr's SIGINT handler does first
        seen.append(status.state)
        interrupt.request_stop()

    try:
        with pytest.raises(BatchesWaiting, match=r"1 judge batch\(es\) of 20 request\(s\) keep "
                                                 r"running at the provider: run `hr compare"):
            hr_compare(bench.run_dir, ["right", "half"], judge,
                       batch={"poll_s": 0, "on_status": ctrl_c})
    finally:
        interrupt.clear_stop()
    assert seen == ["in_progress"] and server.book.created == 1
    comparison = hr_compare(bench.run_dir, ["right", "half"], judge, batch=FAST)
    assert comparison.summary().iloc[0]["a_wins"] == 5
    assert server.book.created == 1 and server.book.twice() == []


def test_an_interrupt_while_judge_batches_run_says_how_to_collect_them(
        server: FakeOpenAIBatchServer, tmp_path: Path) -> None:
    config = _judge(server, batch=True)
    judging = BatchJudging(tmp_path / "cmp", config, config.chat_model(),
                           command="hr compare RUN --judge J.yaml --arms a b")
    line = judging.interrupt()
    assert line == ("some judge requests are not answered yet: run `hr compare RUN --judge "
                    "J.yaml --arms a b` again to collect them (nothing is paid twice)")


def test_bad_batch_options_and_a_batched_jury_are_refused_in_one_line(
        server: FakeOpenAIBatchServer, tmp_path: Path) -> None:
    bench = hr_benchmark({"right": right, "half": half}, ITEMS, store=str(tmp_path))
    with pytest.raises(HrTypeError, match=r"batch has no option 'poll'"):
        hr_compare(bench.run_dir, ["right", "half"], _judge(server, True), batch={"poll": 0})
    grade = [hr_judge_config({"model": f"openai:gpt-judge-{batch}", "base_url": server.url,
                              "batch": batch}, RUBRIC, mode="grade") for batch in (True, False)]
    jury = hr_judge_jury(grade)
    with pytest.raises(SpecError, match="a jury's members are called live"):
        hr_judge_validate(jury, [], store=str(tmp_path / "j"))


def test_hr_judge_validate_submit_only_then_the_same_command_saves_the_record(
        prefect_harness: None, server: FakeOpenAIBatchServer, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    labels = tmp_path / "labels.csv"
    pd.DataFrame([{"item": f"Q{i}", "a": f"a{i}", "b": "no idea" if i % 2 else f"A{i}",
                   "reference": f"a{i}", "human": "A" if i % 2 else "tie"}
                  for i in range(6)]).to_csv(labels, index=False)
    judge, store = _judge_file(tmp_path, server), tmp_path / "judges"
    code, out, err = hr(capsys, "judge", "validate", judge, labels, "--store", store,
                        "--submit-only")
    assert code == 0, err
    out = " ".join(out.split())
    assert "1 judge batch(es) of 12 request(s) are running at the provider" in out
    assert f"run `hr judge validate {judge} {labels} --store {store}` again" in out
    assert not list(store.glob("*.json"))  # no record before every verdict is in
    code, out, err = hr(capsys, "judge", "validate", judge, labels, "--store", store)
    assert code == 0, err
    (record,) = store.glob("*.json")
    assert json.loads(record.read_text())["n"] == 6
    assert server.book.created == 1 and server.book.twice() == []


def test_a_second_invocation_on_the_same_ledger_is_refused_naming_the_first(
        prefect_harness: None, server: FakeOpenAIBatchServer, tmp_path: Path) -> None:
    bench = hr_benchmark({"right": right, "half": half}, ITEMS, store=str(tmp_path))
    judge = _judge(server, batch=True)
    folder = Path(bench.run_dir) / "comparisons" / f"{judge.hash[:12]}-right-vs-half"
    first = RunLock(folder)
    first.acquire()
    try:
        with pytest.raises(RunLockedError, match=r"the batched judge of .* is being run by"):
            hr_compare(bench.run_dir, ["right", "half"], judge, batch=FAST)
    finally:
        first.release()
    assert server.book.created == 0
    assert len(hr_compare(bench.run_dir, ["right", "half"], judge, batch=FAST).pairs) == 10


def test_a_comparison_flow_run_cancelled_from_the_api_stops_and_says_its_batch_keeps_running(
        prefect_harness: None, server: FakeOpenAIBatchServer, tmp_path: Path) -> None:
    """The dashboard's Cancel on an hr-compare flow run waiting for its judge's batch: the
    comparison stops within seconds (it waited for the batch to end), the flow run ends
    Cancelled, and the call says the batch keeps running, which command collects it and
    how to cancel it; the same call afterwards collects it without paying twice."""
    import threading

    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterTags
    from prefect.states import Cancelling

    from hr_core.core.errors import BenchmarkCancelled

    bench = hr_benchmark({"right": right, "half": half}, ITEMS, name="cmp-cancel",
                         store=str(tmp_path))
    judge = _judge(server, batch=True)
    server.book.polls = 10**6  # never ends while the test waits
    cancelled: list[Any] = []

    async def cancel() -> None:
        async with get_client() as client:
            for _ in range(2400):
                runs = await client.read_flow_runs(flow_run_filter=FlowRunFilter(
                    tags=FlowRunFilterTags(all_=["cmp-cancel", "compare"])))
                running = [r for r in runs if r.state is not None and r.state.is_running()]
                shown = running and [a for a in await run_artifacts(client, running[0].id)
                                     if a.type == "progress"
                                     and "in_progress" in str(a.description)]
                if shown:  # waiting for its batch, as the progress artifact says
                    await client.set_flow_run_state(running[0].id, Cancelling(), force=True)
                    cancelled.append(running[0].id)
                    break
                await asyncio.sleep(0.05)
            for _ in range(600):  # a cancel ignored: Ctrl-C after 60 s, so the test fails
                run = await client.read_flow_run(cancelled[0]) if cancelled else None
                if run is not None and run.state is not None and run.state.is_final():
                    return
                await asyncio.sleep(0.1)
            interrupt.request_stop()

    thread = threading.Thread(target=lambda: asyncio.run(cancel()), daemon=True)
    thread.start()
    try:
        with pytest.raises(BenchmarkCancelled) as raised:
            hr_compare(bench.run_dir, ["right", "half"], judge, batch={"poll_s": 0.05})
    finally:
        thread.join(timeout=120)
        interrupt.clear_stop()
    message = str(raised.value)
    assert "was cancelled from the Prefect API" in message
    assert "1 judge batch(es) of 20 request(s) keep running at the provider" in message
    assert "run `hr compare" in message and "`hr cancel " in message
    assert server.book.created == 1

    async def state() -> str:
        async with get_client() as client:
            run = await client.read_flow_run(cancelled[0])
        return str(run.state.type.value) if run.state else ""

    assert asyncio.run(state()) == "CANCELLED"
    for job in list(server.book.jobs.values()):  # the provider ends it: the same call
        job.polls = 1                           # collects it
        while job.state != "ended":
            server.book.retrieve(job)
    comparison = hr_compare(bench.run_dir, ["right", "half"], judge, batch=FAST)
    assert comparison.summary().iloc[0]["a_wins"] == 5
    assert server.book.created == 1 and server.book.twice() == []
