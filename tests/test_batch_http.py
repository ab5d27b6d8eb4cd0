"""Issue 34 end to end over real HTTP: ``hr run`` of a spec whose LLM arms and grade judge
have ``batch: true``, against the fake batch servers on 127.0.0.1 (OpenAI, Azure OpenAI on a
Global-Batch deployment, Anthropic; tests/openai_batch_server.py,
tests/anthropic_batch_server.py), compared with the same spec run live on the same server:
the same runs table, the cost equal to what the server billed at the batch rate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from cli_support import hr

ITEMS = [{"id": f"q{i}", "question": f"Which city is number {i}?",
          "document": f"City number {i} is Paris{i}.", "label": f"Paris{i}"}
         for i in range(6)]
PRICES = "{input: 1.0, output: 4.0, cached_input: 0.1, cache_write: 1.25}"


def _model(provider: str, server: Any, name: str) -> str:
    if provider == "openai":
        return (f"{{model: 'openai:{name}', base_url: '{server.url}', "
                f"api_key_env: HR_TEST_BATCH_KEY, prices: {PRICES}}}")
    if provider == "azure":
        return (f"{{model: 'azure-openai:{name}', base_url: '{server.url}', "
                f"api_key_env: HR_TEST_BATCH_KEY, prices: {PRICES}, "
                f"batch_deployment: '{name}-batch'}}")
    return (f"{{model: 'anthropic:{name}', base_url: '{server.url}', "
            f"api_key_env: HR_TEST_BATCH_KEY, prices: {PRICES}}}")


def _spec(tmp_path: Path, provider: str, server: Any, *, batch: bool, name: str = "b") -> Path:
    (tmp_path / "ref.jsonl").write_text("".join(json.dumps(i) + "\n" for i in ITEMS))
    flag = "true" if batch else "false"
    text = (f"name: {name}\nreference: ref.jsonl\nmax_error_rate: 1\n"
            f"store: {tmp_path / 'results'}\narms:\n"
            f"  reader: {{model: {_model(provider, server, 'reader')}, "
            f"prompt: \"Document: {{document}}\\nQuestion: {{question}}\", batch: {flag}}}\n"
            f"  echo: {{model: {_model(provider, server, 'echo')}, prompt: \"{{question}}\", "
            f"batch: {flag}}}\n"
            f"scorer:\n  judge: {{model: {_model(provider, server, 'judge')}, "
            f"rubric: \"Is the response's answer the reference's?\", batch: {flag}}}\n")
    spec = tmp_path / f"{name}.yaml"
    spec.write_text(text)
    return spec


def _runs(tmp_path: Path, name: str) -> pd.DataFrame:
    (run_dir,) = (tmp_path / "results" / name).iterdir()
    return pd.read_parquet(run_dir / "runs.parquet").sort_values(["arm", "item_id"])


SERVERS = {"openai": "openai_batch_server", "azure": "azure_batch_server",
           "anthropic": "anthropic_batch_server"}
KEYS = {"openai": "sk-batch-SECRET", "azure": "az-key", "anthropic": "sk-ant-batch-SECRET"}


def _cost(runs: pd.DataFrame) -> float:
    return float(runs["cost_usd"].sum() + runs["judge_cost_usd"].sum())


@pytest.mark.parametrize("provider", list(SERVERS))
def test_a_batched_run_equals_the_live_run_at_the_batch_price(
        prefect_harness: None, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, provider: str) -> None:
    server = request.getfixturevalue(SERVERS[provider])
    monkeypatch.setenv("HR_TEST_BATCH_KEY", KEYS[provider])
    code, out, err = hr(capsys, "run", _spec(tmp_path, provider, server, batch=False,
                                             name="live"))
    assert code == 0, out + err
    live_bill = server.book.billed_usd("live")
    code, out, err = hr(capsys, "run", _spec(tmp_path, provider, server, batch=True,
                                             name="batched"))
    assert code == 0, out + err
    assert "(judge): ended" in out and "succeeded 24" in out  # 12 runs x 2 orders
    live, batched = _runs(tmp_path, "live"), _runs(tmp_path, "batched")
    cols = ["arm", "item_id", "output", "correct", "failure_kind", "judge_status",
            "tokens_in", "tokens_out", "judge_tokens_in", "judge_tokens_out"]
    assert batched[cols].reset_index(drop=True).equals(live[cols].reset_index(drop=True))
    assert batched["correct"].sum() == 6 and batched["judge_status"].eq("ok").all()
    # hr's cost at the batch rate is the server's batch bill, half the live one
    assert _cost(live) == pytest.approx(live_bill)
    assert _cost(batched) == pytest.approx(server.book.billed_usd("batch"))
    assert server.book.billed_usd("batch") == pytest.approx(live_bill / 2)
    assert server.book.created == 3 and not server.book.twice()


def _batched(tmp_path: Path, server: Any, monkeypatch: pytest.MonkeyPatch,
             provider: str = "openai", extra: str = "") -> Path:
    monkeypatch.setenv("HR_TEST_BATCH_KEY", KEYS[provider])
    spec = _spec(tmp_path, provider, server, batch=True, name="batched")
    spec.write_text(spec.read_text() + extra)
    return spec


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_submit_only_then_hr_run_collects_and_hr_cancel_cancels_at_the_server(
        prefect_harness: None, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, provider: str) -> None:
    server = request.getfixturevalue(SERVERS[provider])
    spec = _batched(tmp_path, server, monkeypatch, provider)
    code, out, err = hr(capsys, "run", spec, "--submit-only")
    assert code == 0, out + err
    assert "2 batch(es) of 12 request(s) are running at the provider" in out, out
    assert server.book.created == 2
    code, out, err = hr(capsys, "run", spec)
    assert code == 0, out + err
    runs = _runs(tmp_path, "batched")
    assert runs["correct"].sum() == 6 and runs["judge_status"].eq("ok").all()
    assert server.book.created == 3 and max(server.book.submitted.values()) == 1

    server.book.polls = 50  # the next batches stay in progress
    other = _spec(tmp_path, provider, server, batch=True, name="cancelled")
    code, out, err = hr(capsys, "run", other, "--submit-only")
    assert code == 0, out + err
    (run_dir,) = (tmp_path / "results" / "cancelled").iterdir()
    code, out, err = hr(capsys, "cancel", run_dir)
    assert code == 0, out + err
    jobs = list(server.book.jobs.values())[3:]
    assert len(jobs) == 2 and all(j.state in ("cancelling", "ended") for j in jobs)
    assert all(j.end in ("", "cancelled") for j in jobs)


@pytest.mark.parametrize("provider", list(SERVERS))
def test_errored_requests_are_the_runs_errors_with_the_provider_s_message(
        prefect_harness: None, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, provider: str) -> None:
    server = request.getfixturevalue(SERVERS[provider])
    server.book.fail_every = 3  # every third request of each batch: HTTP 400
    code, out, err = hr(capsys, "run", _batched(tmp_path, server, monkeypatch, provider))
    assert code == 0, out + err
    runs = _runs(tmp_path, "batched")
    failed = runs[runs["error"].notna() & runs["error"].astype(str).str.contains("refused")]
    assert len(failed) == 4, runs[["arm", "item_id", "failure_kind", "error"]]
    assert failed["failure_kind"].eq("error").all()
    assert failed["error"].str.contains("(injected error)", regex=False).all()
    assert not server.book.twice()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_expired_batch_s_requests_are_resubmitted_by_the_next_run_never_scored_wrong(
        prefect_harness: None, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, provider: str) -> None:
    server = request.getfixturevalue(SERVERS[provider])
    server.book.expire_after = 4  # each batch answers 4 requests, then expires
    spec = _batched(tmp_path, server, monkeypatch, provider)
    code, out, err = hr(capsys, "run", spec)
    assert code == 0, out + err
    first = _runs(tmp_path, "batched")
    assert not first["failure_kind"].isin(["wrong", "error"]).any()
    server.book.expire_after = None
    code, out, err = hr(capsys, "run", spec)
    assert code == 0, out + err
    runs = _runs(tmp_path, "batched")
    assert runs["correct"].sum() == 6 and runs["judge_status"].eq("ok").all()
    assert runs["failure_kind"].fillna("").isin(["", "not_in_document"]).all()
    assert not server.book.twice() and server.book.billed_usd("live") == 0


def test_a_batch_over_the_provider_s_limit_is_split_in_two(
        prefect_harness: None, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, openai_batch_server: Any) -> None:
    from hr_core.models.batch_api import BatchLimits
    from hr_core.models.providers import openai_batch

    server = openai_batch_server
    server.book.max_requests = 4  # the server refuses a larger batch (HTTP 400)
    monkeypatch.setattr(openai_batch.OpenAIBatchClient.__init__, "__kwdefaults__",
                        {**(openai_batch.OpenAIBatchClient.__init__.__kwdefaults__ or {}),
                         "limits": BatchLimits(max_requests=4, max_bytes=10_000_000)})
    code, out, err = hr(capsys, "run", _batched(tmp_path, server, monkeypatch))
    assert code == 0, out + err
    # 6 reader + 6 echo requests: 2 batches each; 24 judge requests: 6 batches of 4
    assert server.book.created == 2 + 2 + 6 and server.book.refused == 0
    assert sorted(len(j.requests) for j in server.book.jobs.values())[:4] == [2, 2, 4, 4]
    runs = _runs(tmp_path, "batched")
    assert runs["correct"].sum() == 6 and not server.book.twice()


def test_the_budget_stops_submission(
        prefect_harness: None, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, openai_batch_server: Any) -> None:
    server = openai_batch_server
    spec = _batched(tmp_path, server, monkeypatch, extra="budget: {max_tokens: 20000}\n")
    code, out, err = hr(capsys, "run", spec)
    assert code == 0, out + err
    assert "not submitted: the budget admits no more" in out
    runs = _runs(tmp_path, "batched")
    made = runs[runs["failure_kind"].ne("budget_stop")]
    # each arm request is admitted at 4,096 max_tokens (no max_tokens in the spec) plus input
    assert 0 < len(made) <= 2 * (20000 // 4096) and len(made) < len(runs)
    arm_requests = [j for j in server.book.jobs.values()
                    if j.requests[0][1]["model"] in ("reader", "echo")]
    assert sum(len(j.requests) for j in arm_requests) == len(made)  # none past the budget
    unscored = made[made["judge_status"].isna()]  # the judge's requests the budget refused
    assert made["judge_status"].fillna("ok").eq("ok").all() and not server.book.twice()
    assert unscored["correct"].isna().all()  # unscored, never scored wrong


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_create_call_whose_reply_is_lost_is_found_not_resubmitted(
        prefect_harness: None, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, provider: str) -> None:
    server = request.getfixturevalue(SERVERS[provider])
    server.book.lose_replies = 1  # the first batch is created, its reply never arrives
    server.book.polls = 1
    spec = _batched(tmp_path, server, monkeypatch, provider)
    seen = []
    for _ in range(2):
        code, out, err = hr(capsys, "run", spec)
        seen.append((code, [x for x in (out + err).splitlines() if x.startswith("hr: error")]))
    # the lost reply: one line, the intent kept; the next run finds the batch by its nonce
    # (OpenAI's metadata) and collects it; Anthropic shows a batch's custom ids only once
    # it ended: while it processes, one line saying to run again, nothing resubmitted
    assert seen[0][0] == 2 and seen[0][1] == [
        f"hr: error: {provider} batch: creating the batch failed: connection error "
        "(RemoteProtocolError: Server disconnected without sending a response.)"]
    if provider == "openai":
        assert seen[1] == (0, [])
    else:
        assert seen[1][0] == 2 and len(seen[1][1]) == 1
        assert "still processing" in seen[1][1][0] and "run again when it has" in seen[1][1][0]
    assert sum(server.book.submitted.values()) == (36 if provider == "openai" else 6)
    for job in list(server.book.jobs.values()):
        while job.state != "ended":
            server.book.retrieve(job)
    code, out, err = hr(capsys, "run", spec)
    assert code == 0, out + err
    runs = _runs(tmp_path, "batched")
    assert runs["correct"].sum() == 6 and runs["judge_status"].eq("ok").all()
    assert max(server.book.submitted.values()) == 1 and not server.book.twice()
    assert sum(server.book.submitted.values()) == 12 + 24  # every request once


def test_a_cancelled_batch_s_requests_are_the_runs_errors_when_collected(
        prefect_harness: None, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, openai_batch_server: Any) -> None:
    server = openai_batch_server
    server.book.polls = 50  # in progress until cancelled
    spec = _batched(tmp_path, server, monkeypatch)
    code, out, err = hr(capsys, "run", spec, "--submit-only")
    assert code == 0, out + err
    (run_dir,) = (tmp_path / "results" / "batched").iterdir()
    code, out, err = hr(capsys, "cancel", run_dir)
    assert code == 0, out + err
    code, out, err = hr(capsys, "run", spec)  # collects the cancelled batches
    assert code == 0, out + err
    runs = _runs(tmp_path, "batched")
    assert runs["failure_kind"].eq("error").all() and len(runs) == 12
    assert runs["error"].str.contains(
        "canceled: the batch was cancelled before this request ran", regex=False).all()
    assert server.book.created == 2 and server.book.billed_usd() == 0  # nothing answered
