"""Native providers end to end: a YAML spec's LLM arm on ``anthropic:`` through hr_benchmark,
against a real Messages API server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flows import hr_benchmark

DOC = "The bridge opened in 1931. The bridge was designed by Helen Marsh."
ITEMS = [{"id": "q1", "document": DOC, "question": "Who designed the bridge?",
          "label": "Helen Marsh"},
         {"id": "q2", "document": DOC, "question": "What colour is the moon?",
          "label": "grey"}]
KEY = "sk-ant-e2e-SECRET-5d2e"


def _spec(tmp_path: Path, arm: str) -> Path:
    (tmp_path / "ref.jsonl").write_text("\n".join(json.dumps(i) for i in ITEMS))
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"name: providers\nreference: ref.jsonl\nruns: 1\n"
                    f"store: {tmp_path / 'results'}\narms:\n  claude:\n{arm}")
    return spec


def test_a_yaml_llm_arm_runs_on_anthropic(prefect_harness: None, tmp_path: Path,
                                          anthropic_server, monkeypatch: pytest.MonkeyPatch,
                                          ) -> None:
    anthropic_server.api_key = KEY
    monkeypatch.setenv("HR_TEST_CLAUDE_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "canary-not-declared")
    spec = _spec(tmp_path, (
        "    model: anthropic:claude-test\n"
        f"    base_url: {anthropic_server.url}\n"
        "    api_key_env: HR_TEST_CLAUDE_KEY\n"
        "    system: Answer from the document only.\n"
        "    prompt: \"Context: {document}\\nQuestion: {question}\"\n"
        "    params: {max_tokens: 64, temperature: 0}\n"
        "    price_in: 3.0\n    price_out: 15.0\n"))
    bench = hr_benchmark(spec)
    runs = bench.runs.sort_values("item_id")
    assert runs["output"].tolist()[0] == "Helen Marsh"
    assert runs["correct"].tolist() == [True, False]
    assert runs["failure_kind"].tolist()[1] == "not_in_document"
    assert (runs["tokens_in"] > 0).all() and (runs["cost_usd"] > 0).all()
    bodies = [r.body for r in anthropic_server.requests]
    assert len(bodies) == 2 and all(b["max_tokens"] == 64 for b in bodies)
    assert all(b["system"] == "Answer from the document only." for b in bodies)
    assert {r.headers["x-api-key"] for r in anthropic_server.requests} == {KEY}
    for path in Path(bench.run_dir).rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
