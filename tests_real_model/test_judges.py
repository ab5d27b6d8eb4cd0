"""The judge plumbing against the real model: ``hr judge validate`` and a judge scorer.

SmolLM2-135M is no judge (it gives nearly always the same verdict): these tests
check that every judgement is made, parsed from the server's structured output
and counted, not what the verdicts are.
"""

from __future__ import annotations

import json
from pathlib import Path

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
LABELS = [
    {"item": "What is the capital of France?", "response": "Paris", "reference": "Paris",
     "human": "pass"},
    {"item": "What is the capital of France?", "response": "Lyon", "reference": "Paris",
     "human": "fail"},
    {"item": "How many days are in a week?", "response": "seven", "reference": "7",
     "human": "pass"},
    {"item": "How many days are in a week?", "response": "five", "reference": "7",
     "human": "fail"},
    {"item": "What colour is the sky?", "response": "blue", "reference": "blue",
     "human": "pass"},
    {"item": "What colour is the sky?", "response": "green", "reference": "blue",
     "human": "fail"},
]


def _judge_file(folder: Path, base_url: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "judge.yaml"
    path.write_text(yaml.safe_dump({
        "model": f"openai-compatible:{MODEL_NAME}", "base_url": base_url, "mode": "grade",
        "rubric": RUBRIC, "orders": 2, "schema": SCHEMA}, sort_keys=False))
    return path


def test_judge_validate_judges_every_labelled_item_in_both_orders(
    llama: LlamaServer, tmp_path: Path,
) -> None:
    judge = _judge_file(tmp_path, llama.base_url)
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(row) + "\n" for row in LABELS))
    before = llama.metric("tokens_predicted_total")
    code, out, err = hr("judge", "validate", judge, labels, "--store", tmp_path / "judges")
    assert code == 0, out + err
    (path,) = (tmp_path / "judges").glob("*.json")
    record = json.loads(path.read_text())
    assert record["n"] == len(LABELS)
    assert record["config"]["model"] == f"openai-compatible:{MODEL_NAME}"
    # structured output: no reply fails to parse; a call may fail on busy cores (a timeout),
    # and is then counted, not lost (seen once: errors 1 of 12 judgements under load 16)
    assert record["parse_failures"] == 0, record
    assert record["errors"] <= 2, record
    # every item has a verdict or is counted as without consensus, never lost
    judged = {human: sum(row.values()) for human, row in record["confusion"].items()}
    assert judged == {"pass": 3, "fail": 3}, record["confusion"]
    assert record["agreement"] is not None and 0.0 <= record["agreement"] <= 1.0
    assert llama.metric("tokens_predicted_total") > before  # the server did the judging
    assert "agreement" in out and "kappa" in out


def test_a_validated_judge_scorer_grades_a_real_arm_with_the_real_model(
    llama: LlamaServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # hr run looks for validation records in ./judges
    write_reference(tmp_path)
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(row) + "\n" for row in LABELS))
    code, out, err = hr("judge", "validate", _judge_file(tmp_path, llama.base_url), labels,
                        "--store", "judges")
    assert code == 0, out + err
    # hr's spec scorer {judge: ...} names a model but no server yet (issue 19 item 1): the
    # judge scorer comes from a module beside the spec, with the model pointed at the server
    (tmp_path / "served_judge.py").write_text(
        "from hr_core.judge import hr_judge_config, hr_scorer_judge\n"
        "from hr_core.models import resolve_model\n\n"
        f"CONFIG = hr_judge_config('openai-compatible:{MODEL_NAME}', {RUBRIC!r}, "
        f"mode='grade', orders=2, schema={SCHEMA!r})\n"
        f"scorer = hr_scorer_judge(CONFIG, resolve_model(CONFIG.model, "
        f"base_url={llama.base_url!r}))\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({
        "name": "real-model-judged",
        "reference": "reference.jsonl",
        "arms": {"plain": llm_arm(llama.base_url, max_tokens=48)},
        "scorer": "served_judge:scorer", "runs": 1, "concurrency": 2}, sort_keys=False))
    code, out, err = hr("run", spec, "--store", tmp_path / "store")
    assert code == 0, out + err
    (run_dir,) = (tmp_path / "store" / "real-model-judged").iterdir()
    runs = pd.read_parquet(run_dir / "runs.parquet")
    assert len(runs) == len(QUESTIONS) and runs["error"].isna().all()
    assert runs["outcome"].str.startswith("judge:").all(), runs["outcome"].tolist()
    assert set(runs["judge_status"]) <= {"ok", "no_consensus"}, runs["judge_status"].tolist()
    verdicts = runs[runs["judge_status"] == "ok"]
    assert verdicts["correct"].notna().all()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    (record,) = (tmp_path / "judges").glob("*.json")
    assert manifest["judge"]["hash"] == record.stem
    assert manifest["judge"]["validation"] == "valid"  # the record made above, same config
