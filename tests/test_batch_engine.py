"""The batch engine (hr_core/run/batch): collect, submit, wait, serve, against an
in-memory fake provider (tests/batch_fakes.py); the same answers as live calls, no
request submitted twice, none lost, the budget admitting batches before their outputs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from batch_fakes import CrashAfterCreate, FakeBatchServer, use_fake_batches

from flows import hr_benchmark
from flows.runners import make_task_runner
from hr_core.core.errors import CorruptRunError, SpecError
from hr_core.judge import hr_judge_config, hr_scorer_judge
from hr_core.models.batch_api import BatchLimits
from hr_core.run.batch.ledger import BatchLedger
from hr_core.run.batch.pending import BatchesSubmitted
from hr_core.run.session import BenchmarkSession, plan_benchmark

ITEMS = [{"id": f"q{i}", "question": f"Which city is number {i}?",
          "document": f"City number {i} is Paris{i}.", "label": f"Paris{i}"}
         for i in range(12)]
PROMPT = "Document: {document}\nQuestion: {question}"
RUBRIC = "Is the response's answer the reference's?"


@pytest.fixture
def server() -> Iterator[FakeBatchServer]:
    fake = FakeBatchServer(polls=2)
    undo = use_fake_batches(fake)
    yield fake
    undo()


def _plan(tmp_path: Path, batch: bool, judge_batch: bool = False, **options: Any):
    arms = {"reader": {"model": "mock:reader", "prompt": PROMPT, "batch": batch},
            "echo": {"model": "mock:echo", "prompt": "{question}", "batch": batch}}
    config = hr_judge_config({"model": "mock-model", "batch": judge_batch}, RUBRIC,
                             mode="grade")
    return plan_benchmark(arms, ITEMS, hr_scorer_judge(config), store=str(tmp_path),
                          name="b", **options)


def _run(plan: Any, **batch_options: Any):
    session = BenchmarkSession(plan)
    session.batch_options = {"poll_s": 0, **batch_options}
    return session.run_sync()


def _table(bench: Any) -> list[tuple[Any, ...]]:
    runs = bench.runs.sort_values(["arm", "item_id", "run"])
    return list(zip(runs["arm"], runs["item_id"], runs["correct"], runs["outcome"],
                    runs["failure_kind"], strict=True))


def test_a_batched_benchmark_answers_as_live_calls_do_at_half_the_price(
        server: FakeBatchServer, tmp_path: Path) -> None:
    live = _run(_plan(tmp_path / "live", batch=False))
    batched = _run(_plan(tmp_path / "batch", batch=True, judge_batch=True))
    assert _table(batched) == _table(live)
    assert batched.runs["correct"].sum() == 12  # the reader is right, the echo wrong
    # 12 calls of each arm in a batch of its model, then 24 runs x 2 judge orders
    assert (server.created, server.requests) == (3, 24 + 48)
    assert max(server.submissions.values()) == 1
    cost = batched.runs["cost_usd"]
    tokens = batched.runs["tokens_in"] * 1.0 + batched.runs["tokens_out"] * 2.0
    assert cost.tolist() == pytest.approx((tokens * 0.5 / 1e6).tolist())  # the batch rate
    assert batched.runs["judge_cost_usd"].gt(0).all()


def test_submit_only_returns_and_a_later_run_collects_without_resubmitting(
        server: FakeBatchServer, tmp_path: Path) -> None:
    plan = _plan(tmp_path, batch=True, judge_batch=True)
    with pytest.raises(BatchesSubmitted, match=r"2 batch\(es\) of 24 request\(s\) are running"):
        _run(plan, submit_only=True)
    with pytest.raises(BatchesSubmitted, match=r"\(0 submitted now\)"):
        _run(_plan(tmp_path, batch=True, judge_batch=True), submit_only=True)
    assert (server.created, server.requests) == (2, 24)
    bench = _run(_plan(tmp_path, batch=True, judge_batch=True))
    assert (server.created, server.requests) == (3, 72)
    assert max(server.submissions.values()) == 1
    assert bench.runs["correct"].sum() == 12


def test_a_kill_between_the_create_call_and_its_record_is_reconciled_by_nonce(
        server: FakeBatchServer, tmp_path: Path) -> None:
    server.crash_next_create = True
    with pytest.raises(CrashAfterCreate):
        _run(_plan(tmp_path, batch=True))
    ledger = BatchLedger(next(tmp_path.glob("b/*/batches")))
    (intent,) = ledger.batches.values()
    assert intent.batch_id is None and len(intent.ids) == 12  # recorded before the call
    bench = _run(_plan(tmp_path, batch=True))
    assert (server.created, server.requests) == (2, 24)
    assert max(server.submissions.values()) == 1
    assert len(bench.runs) == 24 and bench.runs["failure_kind"].ne("budget_stop").all()


@pytest.mark.parametrize("moment", ["before_create", "after_create", "status", "outcomes"])
def test_a_crash_at_any_moment_resumes_without_paying_twice_or_losing_a_run(
        server: FakeBatchServer, tmp_path: Path, moment: str) -> None:
    if moment == "before_create":
        server.crash_before_create = True
    elif moment == "after_create":
        server.crash_next_create = True
    elif moment == "status":
        server.crash_status = True
    else:
        server.crash_outcomes_after = 5
    with pytest.raises(CrashAfterCreate):
        _run(_plan(tmp_path, batch=True, judge_batch=True))
    bench = _run(_plan(tmp_path, batch=True, judge_batch=True))
    assert max(server.submissions.values()) == 1  # no request submitted twice
    assert server.requests == 24 + 48
    assert bench.runs["correct"].sum() == 12 and bench.runs["judge_status"].eq("ok").all()


def test_a_torn_last_ledger_line_is_never_acted_on(server: FakeBatchServer,
                                                   tmp_path: Path) -> None:
    with pytest.raises(BatchesSubmitted):
        _run(_plan(tmp_path, batch=True), submit_only=True)
    path = next(tmp_path.glob("b/*/batches/ledger.jsonl"))
    with path.open("ab") as handle:
        handle.write(b'{"e": "outcome", "id": "r0", "ki')  # a kill while appending
    bench = _run(_plan(tmp_path, batch=True))
    assert bench.runs["correct"].sum() == 12 and server.requests == 24
    assert b'"id": "r0", "ki' not in path.read_bytes()  # cut, so the appends after it stay lines
    assert len(BatchLedger(path.parent).outcomes) == 24
    path.write_bytes(b'{"e": "garbled"\n' + path.read_bytes())
    with pytest.raises(CorruptRunError, match=r"ledger.jsonl is corrupt or truncated \(line 1"):
        BatchLedger(path.parent)


def test_errored_requests_are_the_runs_failures_and_expired_ones_are_not_made(
        tmp_path: Path) -> None:
    def fate(body: Any) -> str:
        text = str(body["messages"])
        return "errored" if "number 1?" in text else "expired" if "number 2?" in text \
            else "succeeded"

    server = FakeBatchServer(polls=0, fate=fate)
    undo = use_fake_batches(server)
    try:
        with pytest.warns(UserWarning, match="2 batched request"):
            bench = _run(_plan(tmp_path, batch=True))
        runs = bench.runs.set_index(["arm", "item_id"])
        assert runs.loc[("reader", "q1"), "failure_kind"] == "error"
        assert "batch request errored: the fake says errored" in runs.loc[("reader", "q1"),
                                                                           "error"]
        assert runs.loc[("reader", "q2"), "failure_kind"] == "budget_stop"  # not wrong
        server.fate = lambda body: "succeeded"
        again = _run(_plan(tmp_path, batch=True))  # the expired ones are submitted again
        assert again.runs.set_index(["arm", "item_id"]).loc[("reader", "q2"), "correct"]
        assert server.requests == 24 + 2
    finally:
        undo()


def test_a_batch_over_the_provider_s_limit_is_split(tmp_path: Path) -> None:
    server = FakeBatchServer(limits=BatchLimits(max_requests=10, max_bytes=1 << 20))
    undo = use_fake_batches(server)
    try:
        _run(_plan(tmp_path, batch=True))
    finally:
        undo()
    assert [len(b.requests) for b in server.batches.values()] == [10, 2, 10, 2]  # each arm's 12


def test_the_budget_admits_a_batch_before_its_outputs_at_max_tokens(
        server: FakeBatchServer, tmp_path: Path) -> None:
    with pytest.warns(UserWarning, match=r"request\(s\) not submitted: the budget admits"):
        bench = _run(_plan(tmp_path, batch=True, budget={"max_tokens": 1000}))
    # each request is admitted at its body's estimated input plus max_tokens (64)
    admitted = server.requests
    assert 0 < admitted < 24
    assert bench.runs["failure_kind"].eq("budget_stop").sum() == 24 - admitted
    per_arm = bench.runs.groupby("arm")[["tokens_in", "tokens_out"]].sum().sum(axis=1)
    assert (per_arm <= 1000).all()


def test_a_stop_rule_with_batch_is_refused_in_one_line(server: FakeBatchServer,
                                                        tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"batch: true and a stop rule \(stop:\)"):
        _run(_plan(tmp_path, batch=True, stop=True))


def test_batches_still_open_hold_their_share_of_the_budget(server: FakeBatchServer,
                                                           tmp_path: Path) -> None:
    budget = {"max_tokens": 1000}
    with pytest.raises(BatchesSubmitted), pytest.warns(UserWarning, match="not submitted"):
        _run(_plan(tmp_path, batch=True, budget=budget), submit_only=True)
    first = server.requests
    assert 0 < first < 24
    # the first batches have not ended: their requests keep the room they were admitted in
    with pytest.raises(BatchesSubmitted), pytest.warns(UserWarning, match="not submitted"):
        _run(_plan(tmp_path, batch=True, budget=budget), submit_only=True)
    assert server.requests == first


def test_a_dask_task_runner_with_batch_is_refused_before_the_flow_starts(
        server: FakeBatchServer, tmp_path: Path) -> None:
    arms = {"reader": {"model": "mock:reader", "prompt": PROMPT, "batch": True}}
    with pytest.raises(SpecError, match="batch: true runs its batches in the flow's own "
                                        "process; run it without a Dask or Ray task runner"):
        hr_benchmark(arms, ITEMS, store=str(tmp_path), task_runner=make_task_runner("dask"))


def test_a_judge_answered_in_a_later_pass_counts_against_the_budget(
        server: FakeBatchServer, tmp_path: Path) -> None:
    def live(payload: dict[str, Any]) -> str:  # answered live in the first pass
        return payload["document"].split(" is ")[1].rstrip(".").lower()

    config = hr_judge_config({"model": "mock-model", "batch": True}, RUBRIC, mode="grade")
    arms = {"live": live,
            "reader": {"model": "mock:reader", "prompt": PROMPT, "batch": True}}
    limit = 0.0012
    budget = {"max_cost_usd": limit, "per": "benchmark", "counts": "judge"}
    plan = plan_benchmark(arms, ITEMS, hr_scorer_judge(config), store=str(tmp_path),
                          name="b", budget=budget)
    with pytest.warns(UserWarning, match="not submitted: the budget"):
        bench = _run(plan)
    # the live arm's judge calls were answered in the second pass, the reader's admitted
    # after them: against what the first ones spent, at their estimates
    spent = bench.runs.loc[bench.runs["arm"] == "live", "judge_cost_usd"].sum()
    ledger = BatchLedger(next(tmp_path.glob("b/*/batches")))
    admitted = sum(r.cost for r in ledger.requests.values()
                   if r.role == "judge" and r.arm == "reader")
    assert spent > 0 and admitted > 0
    assert spent + admitted <= limit


def test_the_budget_s_max_seconds_stops_the_wait_and_a_later_run_collects(
        tmp_path: Path) -> None:
    server = FakeBatchServer(polls=10**6)  # never ends while the first run waits
    undo = use_fake_batches(server)
    try:
        with pytest.warns(UserWarning, match=r"2 batch\(es\) still running at the provider "
                                             r"when the budget's max_seconds ran out"):
            first = _run(_plan(tmp_path, batch=True, budget={"max_seconds": 1.0}), poll_s=0.05)
        assert first.runs["failure_kind"].eq("budget_stop").all()
        for batch in server.batches.values():
            batch.polls_left = 0
        again = _run(_plan(tmp_path, batch=True, budget={"max_seconds": 60.0}))
    finally:
        undo()
    assert again.runs["correct"].sum() == 12 and server.requests == 24
