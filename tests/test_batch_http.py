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
