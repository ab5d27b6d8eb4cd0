"""A pairwise judge with ``batch: true`` in ``hr_compare`` (the hr-compare flow) and
``hr_judge_validate``, through the openai SDK against OpenAI's Batch API on 127.0.0.1
(tests/openai_batch_server.py): the same verdicts as the same judge called live on the
same server, billed at the batch rate, both orders of a pair in one batch, and a kill or
a second invocation paying no request twice."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from openai_batch_server import FakeOpenAIBatchServer

from flows import hr_benchmark, hr_compare, hr_judge_validate
from hr_core.judge import hr_judge_config
from hr_core.models.providers.batch_files import BatchCallError
from hr_core.run.batch.judging import BatchesWaiting
from hr_core.run.batch.ledger import BatchLedger
from hr_core.run.batch.pending import BatchesSubmitted

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
    material = json.loads(body["messages"][-1]["content"].split("\n", 1)[1])
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
