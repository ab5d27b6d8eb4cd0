"""``hr run`` of LLM arms against the real model: plain, structured output, truncated.

One spec, three arms on five easy questions, run once for the module:

- ``plain``: a free-text answer;
- ``schema``: ``response_format`` json_schema, so the server's grammar makes every
  reply a JSON object with one ``answer`` string;
- ``short``: ``max_tokens: 3``, so every reply ends with ``finish_reason: length``.

The model is tiny: the tests assert the plumbing (every run made, scored, with
the server's own token counts) and that an easy answer is right, not exact text
(measured: plain 2 of 5 right, schema 1 of 5).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from llama_server import LlamaServer
from real_support import ANSWER_SCHEMA, QUESTIONS, hr, llm_arm, write_reference

pytestmark = pytest.mark.usefixtures("prefect_harness")
SHORT = 3


def _spec(folder: Path, base_url: str) -> Path:
    write_reference(folder)
    response_format = {"type": "json_schema",
                       "json_schema": {"name": "answer", "schema": ANSWER_SCHEMA,
                                       "strict": True}}
    spec = {
        "name": "real-model-arms",
        "reference": "reference.jsonl",
        "arms": {
            "plain": llm_arm(base_url, max_tokens=48),
            "schema": llm_arm(base_url, max_tokens=64, response_format=response_format),
            "short": llm_arm(base_url, max_tokens=SHORT),
        },
        "scorer": {"includes": {"word_bounded": True}},
        "runs": 1,
        "concurrency": 2,
    }
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


class Ran:
    """One ``hr run`` of the spec: its output, results folder and the server's counters."""

    def __init__(self, llama: LlamaServer, folder: Path) -> None:
        self.spec = _spec(folder / "spec", llama.base_url)
        self.store = folder / "store"
        before = llama.metric("tokens_predicted_total")
        self.code, self.out, self.err = hr("run", self.spec, "--store", self.store)
        self.predicted = llama.metric("tokens_predicted_total") - before
        assert self.code == 0, self.out + self.err
        (self.run_dir,) = (self.store / "real-model-arms").iterdir()
        self.runs = pd.read_parquet(self.run_dir / "runs.parquet")
        self.manifest: dict[str, Any] = json.loads((self.run_dir / "manifest.json").read_text())

    def arm(self, name: str) -> pd.DataFrame:
        return self.runs[self.runs["arm"] == name].set_index("item_id")


@pytest.fixture(scope="module")
def ran(llama: LlamaServer, tmp_path_factory: pytest.TempPathFactory) -> Ran:
    return Ran(llama, tmp_path_factory.mktemp("arms"))


def test_every_run_is_made_and_scored_without_errors(ran: Ran) -> None:
    assert ran.manifest["status"] == "completed"
    assert len(ran.runs) == 3 * len(QUESTIONS)
    assert ran.runs["error"].isna().all(), ran.runs["error"].dropna().tolist()
    assert not ran.runs["failure_kind"].isin(["error", "budget_stop"]).any()
    assert ran.runs["correct"].notna().all()  # every item is labelled: every run has a verdict
    assert "plain" in ran.out and "Results:" in ran.out


def test_a_plain_arm_answers_some_easy_questions(ran: Ran) -> None:
    plain = ran.arm("plain")
    assert (plain["output"].str.len() > 0).all()
    # the easiest ("The capital of France is Paris."): the reply reached the scorer whole
    assert plain["correct"].sum() >= 1, plain[["output", "correct"]].to_dict("index")


def test_a_json_schema_arm_gets_json_of_that_schema(ran: Ran) -> None:
    schema = ran.arm("schema")
    replies = [json.loads(text) for text in schema["output"]]
    assert all(set(r) == {"answer"} and isinstance(r["answer"], str) for r in replies), replies
    assert schema["correct"].sum() >= 1, replies  # the scorer reads the answer in the JSON


def test_a_reply_cut_by_max_tokens_keeps_its_text_and_is_scored(ran: Ran) -> None:
    short = ran.arm("short")
    assert (short["tokens_out"] == SHORT).all(), short["tokens_out"].tolist()
    assert (short["output"].str.len() > 0).all()
    assert short["correct"].notna().all()
    assert short["truncated"].all()  # finish_reason: length
    assert not ran.arm("plain")["truncated"].any() and not ran.arm("schema")["truncated"].any()
    summary = pd.read_csv(ran.run_dir / "summary.csv").set_index("arm")
    assert summary["truncated"].to_dict() == {"plain": 0, "schema": 0, "short": len(QUESTIONS)}


def test_the_token_counts_are_the_servers(ran: Ran) -> None:
    runs = ran.runs
    assert (runs["tokens_in"] > 0).all() and (runs["tokens_out"] > 0).all()
    # every completion token hr recorded is one the server generated in this run, and back
    assert int(runs["tokens_out"].sum()) == int(ran.predicted)
    expected = (runs["tokens_in"] * 0.1 + runs["tokens_out"] * 0.4) / 1e6
    assert (runs["cost_usd"] - expected).abs().max() < 1e-12
    summary = pd.read_csv(ran.run_dir / "summary.csv").set_index("arm")
    assert int(summary["tokens_out"].sum()) == int(runs["tokens_out"].sum())


def test_running_the_spec_again_replays_without_calling_the_server(
    ran: Ran, llama: LlamaServer,
) -> None:
    before = llama.metric("tokens_predicted_total"), llama.metric("prompt_tokens_total")
    code, out, err = hr("run", ran.spec, "--store", ran.store)
    assert code == 0, out + err
    assert (llama.metric("tokens_predicted_total"), llama.metric("prompt_tokens_total")) == before
    again = pd.read_parquet(ran.run_dir / "runs.parquet")
    assert again["output"].tolist() == ran.runs["output"].tolist()
