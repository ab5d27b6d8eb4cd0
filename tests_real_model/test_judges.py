"""The judge plumbing against the real model: ``hr judge validate`` and a ``{judge: ...}`` scorer.

SmolLM2-135M is no judge (it gives nearly always the same verdict): these tests
check that every judgement is made on the server, parsed from its structured
output, recorded and counted (tokens, cost), not what the verdicts are.

The judge's model spec points at the server with the limits a 135M model on a
loaded 2-core machine needs: ``concurrency: 2`` (the server's slots; a call queued
behind others spends its per-attempt timeout waiting) and ``timeout_s: 600``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from llama_server import MODEL_NAME, LlamaServer
from real_support import QUESTIONS, hr, llm_arm, write_reference

pytestmark = pytest.mark.usefixtures("prefect_harness")

# the default reply schema with the reason bounded, so a tiny model cannot ramble on
SCHEMA = {"type": "object",
          "properties": {"verdict": {"type": "string", "enum": ["pass", "fail"]},
                         "reason": {"type": "string", "maxLength": 60}},
          "required": ["verdict", "reason"], "additionalProperties": False}
RUBRIC = "Does the response give the reference's answer?"
PRICES = {"input": 0.2, "output": 0.8}  # USD per million tokens, not the arms' (0.1, 0.4)
LABELS = [
    {"item": "What is the capital of France?", "response": "Paris", "reference": "Paris",
     "human": "pass"},
    {"item": "What is the capital of France?", "response": "Lyon", "reference": "Paris",
     "human": "fail"},
    {"item": "How many days are in a week?", "response": "seven", "reference": "7",
     "human": "pass"},
    {"item": "How many days are in a week?", "response": "five", "reference": "7",
     "human": "fail"},
]
ORDERS = 2


def _model(base_url: str) -> dict[str, Any]:
    """The judge's model spec: the served model, deterministic, bounded, priced."""
    return {"model": f"openai-compatible:{MODEL_NAME}", "base_url": base_url,
            "prices": PRICES, "timeout_s": 600, "concurrency": 2,
            "params": {"temperature": 0, "seed": 42, "max_tokens": 96}}


def _judge_file(folder: Path, base_url: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "judge.yaml"
    # min_items/min_agreement: the record of 4 items of a judge that is no judge still makes
    # it valid, so the run below shows the record found and used (trust, not in the hash)
    path.write_text(yaml.safe_dump({
        "model": _model(base_url), "mode": "grade", "rubric": RUBRIC, "orders": ORDERS,
        "schema": SCHEMA, "min_items": len(LABELS), "min_agreement": 0.0}, sort_keys=False))
    return path


class Validated:
    """One ``hr judge validate`` of the judge file: its output, record and the server's
    counters before and after."""

    def __init__(self, llama: LlamaServer, folder: Path) -> None:
        self.folder = folder
        self.judge = _judge_file(folder, llama.base_url)
        labels = folder / "labels.jsonl"
        labels.write_text("".join(json.dumps(row) + "\n" for row in LABELS))
        self.store = folder / "judges"
        before = llama.metric("tokens_predicted_total")
        self.code, self.out, self.err = hr("judge", "validate", self.judge, labels,
                                           "--store", self.store)
        self.predicted = llama.metric("tokens_predicted_total") - before
        assert self.code == 0, self.out + self.err
        (self.path,) = self.store.glob("*.json")
        self.record: dict[str, Any] = json.loads(self.path.read_text())


@pytest.fixture(scope="module")
def validated(llama: LlamaServer, tmp_path_factory: pytest.TempPathFactory) -> Validated:
    return Validated(llama, tmp_path_factory.mktemp("judge"))


def test_judge_validate_judges_every_labelled_item_in_both_orders(
    validated: Validated,
) -> None:
    record = validated.record
    assert record["n"] == len(LABELS)
    assert record["config"]["model"] == f"openai-compatible:{MODEL_NAME}"
    assert record["config"]["model_spec"]["base_url"].startswith("http://127.0.0.1:")
    # every judgement made and parsed (structured output; no timeout with these limits)
    assert record["errors"] == 0, record
    assert record["parse_failures"] == 0, record
    # every item has a verdict or is counted as without consensus, never lost
    judged = {human: sum(row.values()) for human, row in record["confusion"].items()}
    assert judged == {"pass": 2, "fail": 2}, record["confusion"]
    assert set().union(*record["confusion"].values()) <= {"pass", "fail", "no_verdict"}
    assert record["agreement"] is not None and 0.0 <= record["agreement"] <= 1.0
    # 2 orders x 4 items, each a JSON object of at least a few tokens: the server judged
    assert validated.predicted >= ORDERS * len(LABELS) * 5, validated.predicted
    assert "agreement" in validated.out and "kappa" in validated.out
    assert validated.path.stem == record["hash"]


def test_judge_check_finds_the_record(validated: Validated) -> None:
    code, out, err = hr("judge", "check", validated.judge, "--store", validated.store)
    assert code == 0, out + err
    assert validated.record["hash"][:12] in out + err


def test_a_judge_scorer_grades_a_real_arm_and_counts_its_tokens_and_cost(
    llama: LlamaServer, validated: Validated, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(validated.folder)  # hr run looks for validation records in ./judges
    folder = validated.folder
    write_reference(folder)
    spec = folder / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "real-model-judged",
        "reference": "reference.jsonl",
        "arms": {"plain": llm_arm(llama.base_url, max_tokens=48)},
        "scorer": {"judge": {"model": _model(llama.base_url), "rubric": RUBRIC,
                             "orders": ORDERS, "schema": SCHEMA}},
        "judge_min_items": len(LABELS), "judge_min_agreement": 0.0,
        "runs": 1, "concurrency": 2}, sort_keys=False))
    before = llama.metric("tokens_predicted_total"), llama.metric("prompt_tokens_total")
    code, out, err = hr("run", spec, "--store", tmp_path / "store")
    assert code == 0, out + err
    predicted = llama.metric("tokens_predicted_total") - before[0]
    (run_dir,) = (tmp_path / "store" / "real-model-judged").iterdir()
    runs = pd.read_parquet(run_dir / "runs.parquet")
    assert len(runs) == len(QUESTIONS) and runs["error"].isna().all(), runs["error"].tolist()
    assert runs["outcome"].str.startswith("judge:").all(), runs["outcome"].tolist()
    assert set(runs["judge_status"]) <= {"ok", "no_consensus"}, runs["judge_status"].tolist()
    assert runs.loc[runs["judge_status"] == "ok", "correct"].notna().all()
    # the judge's own calls: counted per run, priced at the judge's prices, and together
    # with the arm's exactly the tokens the server generated during the run
    assert (runs["judge_tokens_in"] > 0).all() and (runs["judge_tokens_out"] > 0).all()
    expected = (runs["judge_tokens_in"] * PRICES["input"]
                + runs["judge_tokens_out"] * PRICES["output"]) / 1e6
    assert (runs["judge_cost_usd"] - expected).abs().max() < 1e-12
    assert int(runs["tokens_out"].sum() + runs["judge_tokens_out"].sum()) == int(predicted)
    assert llama.metric("prompt_tokens_total") > before[1]
    summary = pd.read_csv(run_dir / "summary.csv").set_index("arm")
    assert int(summary["judge_tokens_out"].sum()) == int(runs["judge_tokens_out"].sum())
    assert summary.loc["plain", "judge_cost_usd"] == pytest.approx(runs["judge_cost_usd"].sum())
    # the run found the record made by hr judge validate: the same config, the same hash
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["judge"]["hash"] == validated.record["hash"]
    assert manifest["judge"]["validation"] == "valid", manifest["judge"]
