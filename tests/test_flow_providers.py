"""Native providers end to end: a YAML spec's LLM arms on ``anthropic:`` and
``azure-openai:`` through hr_benchmark, each against a real server of its wire format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from azure_server import FakeAzureServer

from flows import hr_benchmark

DOC = "The bridge opened in 1931. The bridge was designed by Helen Marsh."
ITEMS = [{"id": "q1", "document": DOC, "question": "Who designed the bridge?",
          "label": "Helen Marsh"},
         {"id": "q2", "document": DOC, "question": "What colour is the moon?",
          "label": "grey"}]
CLAUDE_KEY = "sk-ant-e2e-SECRET-5d2e"
AZURE_KEY = "azure-e2e-SECRET-8f7a"


def test_yaml_llm_arms_run_on_anthropic_and_azure(prefect_harness: None, tmp_path: Path,
                                                  anthropic_server,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    anthropic_server.api_key = CLAUDE_KEY
    monkeypatch.setenv("HR_TEST_CLAUDE_KEY", CLAUDE_KEY)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "canary-not-declared")
    (tmp_path / "ref.jsonl").write_text("\n".join(json.dumps(i) for i in ITEMS))
    prompt = "    prompt: \"Context: {document}\\nQuestion: {question}\"\n"
    with FakeAzureServer(deployments={"gpt4o-prod"}, api_key=AZURE_KEY) as azure:
        spec = tmp_path / "spec.yaml"
        spec.write_text(
            f"name: providers\nreference: ref.jsonl\nruns: 1\n"
            f"store: {tmp_path / 'results'}\narms:\n"
            "  claude:\n    model: anthropic:claude-test\n"
            f"    base_url: {anthropic_server.url}\n    api_key_env: HR_TEST_CLAUDE_KEY\n"
            "    system: Answer from the document only.\n" + prompt +
            "    params: {max_tokens: 64, temperature: 0}\n"
            "    price_in: 3.0\n    price_out: 15.0\n"
            "  azure:\n    model: azure-openai:gpt4o-prod\n"
            f"    base_url: {azure.url}\n" + prompt +
            "    params: {temperature: 0}\n")
        bench = hr_benchmark(spec)
        assert len(azure.requests) == 2
        assert {r.headers["api-key"] for r in azure.requests} == {AZURE_KEY}
        assert all("/openai/deployments/gpt4o-prod/" in r.path for r in azure.requests)
    runs = bench.runs.sort_values(["arm", "item_id"])
    assert runs["correct"].tolist() == [True, False, True, False]
    assert runs["failure_kind"].tolist()[1::2] == ["not_in_document"] * 2
    assert (runs["tokens_in"] > 0).all()
    assert (runs[runs["arm"] == "claude"]["cost_usd"] > 0).all()
    bodies = [r.body for r in anthropic_server.requests]
    assert len(bodies) == 2 and all(b["max_tokens"] == 64 for b in bodies)
    # cache: auto (the default) marks the system prompt for Anthropic's prompt cache
    assert all(b["system"] == [{"type": "text", "text": "Answer from the document only.",
                                "cache_control": {"type": "ephemeral"}}] for b in bodies)
    assert {r.headers["x-api-key"] for r in anthropic_server.requests} == {CLAUDE_KEY}
    for path in Path(bench.run_dir).rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert CLAUDE_KEY.encode() not in data and AZURE_KEY.encode() not in data, path


def test_the_readme_example_of_native_providers_builds_both_models(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    from hr_core.run.arms import normalise_arms

    text = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    start = text.index("```yaml\narms:\n  claude:")
    block = text[start + len("```yaml\n"):]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k1")
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "k2")
    arms = normalise_arms(yaml.safe_load(block[: block.index("```")])["arms"])
    claude, azure = arms["claude"].model(), arms["azure"].model()
    assert (claude.spec, azure.spec) == ("anthropic:claude-sonnet-4-5", "azure-openai:gpt4o-prod")
    assert azure.base_url.startswith("https://my-resource.openai.azure.com/openai/deployments/")
    body = claude.request(arms["claude"].llm.messages({"document": "d", "question": "q"}),
                          None, arms["claude"].llm.params)
    assert body["system"][0]["text"] == "Answer from the document only."
    assert body["max_tokens"] == 256


def test_a_yaml_judge_on_anthropic_scores_an_azure_arm_with_an_entra_token(
        prefect_harness: None, tmp_path: Path, anthropic_server,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    anthropic_server.api_key = CLAUDE_KEY
    monkeypatch.setenv("HR_TEST_CLAUDE_KEY", CLAUDE_KEY)
    (tmp_path / "ref.jsonl").write_text("\n".join(json.dumps(i) for i in ITEMS))
    token = "entra-e2e-token"
    command = json.dumps([sys.executable, "-c", "print('entra-' + 'e2e-token')"])
    with FakeAzureServer(deployments={"gpt4o-prod"}, token=token) as azure:
        spec = tmp_path / "spec.yaml"
        spec.write_text(
            f"name: judged\nreference: ref.jsonl\nruns: 1\nstore: {tmp_path / 'results'}\n"
            "arms:\n  azure:\n    model:\n      model: azure-openai:gpt4o-prod\n"
            f"      base_url: {azure.url}\n      api_version: 2025-01-01-preview\n"
            f"      token_command: {command}\n"
            "    prompt: \"Context: {document}\\nQuestion: {question}\"\n"
            "scorer:\n  judge:\n    model:\n      model: anthropic:claude-judge\n"
            f"      base_url: {anthropic_server.url}\n      api_key_env: HR_TEST_CLAUDE_KEY\n"
            "    rubric: Is the response's answer the reference's?\n    orders: 1\n")
        # an unvalidated judge is allowed by default and said so (the suite's one warning)
        with pytest.warns(UserWarning, match="has no validation record in 'judges'"):
            bench = hr_benchmark(spec)
        assert {r.headers["authorization"] for r in azure.requests} == {f"Bearer {token}"}
        assert all(r.path.endswith("api-version=2025-01-01-preview") for r in azure.requests)
    runs = bench.runs.sort_values("item_id")
    assert runs["output"].tolist() == ["Helen Marsh", "NOT_IN_DOCUMENT"]
    assert bool(runs["correct"].tolist()[0]) is True
    judged = [r for r in anthropic_server.requests if r.body.get("model") == "claude-judge"]
    assert judged and all("output_config" in r.body for r in judged)
    assert {r.headers["x-api-key"] for r in judged} == {CLAUDE_KEY}
    assert "2025-01-01-preview" in json.dumps(bench.manifest.to_dict())  # the api-version decides
    assert token not in json.dumps(bench.manifest.to_dict())


@pytest.mark.parametrize("model, variable", [("anthropic:claude-x", "ANTHROPIC_API_KEY"),
                                             ("azure-openai:dep", "AZURE_OPENAI_API_KEY")])
def test_a_missing_key_is_a_spec_error_before_any_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str, variable: str) -> None:
    """Before: every run of the arm was an error saying so; now the plan refuses at once."""
    from hr_core.core.errors import SpecError
    from hr_core.run.session import plan_benchmark

    monkeypatch.delenv(variable, raising=False)
    arm = {"model": model, "base_url": "https://example.invalid", "prompt": "{question}"}
    with pytest.raises(SpecError, match=f"arm 'llm': .*set the environment variable {variable}"):
        plan_benchmark({"llm": arm}, ITEMS, store=str(tmp_path))
