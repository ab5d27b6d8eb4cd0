"""`batch: true` on an LLM arm, a model spec and a judge: it decides no answer, so it
changes neither an arm's fingerprint (the run id) nor a judge config's hash."""

from __future__ import annotations

import pytest

from hr_core.core.errors import HrError
from hr_core.core.identity import fingerprint
from hr_core.judge.config import hr_judge_config
from hr_core.models.spec import ModelSpec
from hr_core.run.arms import normalise_arms
from hr_core.run.spec import BenchmarkSpec, scorer_from

# fingerprints made by hr before `batch` existed (commit 9b7a054): still the same
ARM_SPEC_BEFORE = "646cfc0419a184e457fe70951601d0ec94225faeca664c6457beb2caf0e82e4a"
JUDGE_HASH_BEFORE = "c987d168a64cc2c4f452d9622f66145e1eb70549e065058ab164f65e5038762f"
MODEL = {"provider": "anthropic", "model": "claude-x",
         "prices": {"input": 3.0, "output": 15.0, "cached_input": 0.3}}
ARM = {"model": MODEL, "system": "S", "prompt": "{question}"}


def test_batch_changes_neither_an_arm_s_fingerprint_nor_a_judge_s_hash() -> None:
    arms = (ARM, {**ARM, "batch": True}, {**ARM, "model": {**MODEL, "batch": True}})
    normalised = [normalise_arms({"a": a})["a"] for a in arms]
    assert {fingerprint(arm.spec) for arm in normalised} == {ARM_SPEC_BEFORE}
    assert [arm.llm.model_spec().batch for arm in normalised] == [False, True, True]
    configs = [hr_judge_config(m, "Same answer?", mode="grade") for m in (
        "anthropic:claude-x", ModelSpec.of({"model": "anthropic:claude-x", "batch": True}))]
    assert {c.hash for c in configs} == {JUDGE_HASH_BEFORE}
    assert [c.batch for c in configs] == [False, True]


def test_a_spec_s_judge_and_arm_take_batch() -> None:
    spec = BenchmarkSpec.model_validate({
        "reference": "ref.jsonl", "arms": {"a": {**ARM, "batch": True}},
        "scorer": {"judge": {"model": "anthropic:claude-x", "rubric": "Same answer?",
                             "batch": True}}})
    arm = normalise_arms(spec.arms)["a"]
    assert arm.llm is not None and arm.llm.model_spec().batch
    scorer = scorer_from(spec.scorer)
    assert scorer.judge.batch and scorer.judge.hash == JUDGE_HASH_BEFORE


def test_azure_s_batch_deployment_on_azure_only() -> None:
    spec = ModelSpec.of({"model": "azure-openai:gpt4o", "batch": True,
                         "batch_deployment": "gpt4o-global-batch"})
    assert spec.batch_deployment == "gpt4o-global-batch"
    with pytest.raises(HrError, match="batch_deployment is for azure-openai models only"):
        ModelSpec.of({"model": "openai:gpt-4o", "batch_deployment": "x"})


def test_a_model_without_a_batch_api_or_azure_without_its_deployment_is_refused() -> None:
    from hr_core.core.errors import SpecError
    from hr_core.run.batch.adapters import adapter_for

    with pytest.raises(HrError, match="azure-openai's batch API runs on a Global-Batch "
                                      "deployment: name it as batch_deployment"):
        ModelSpec.of({"model": "azure-openai:gpt4o", "batch": True})
    arms = {"a": {"model": "azure-openai:gpt4o", "prompt": "{q}", "batch": True}}
    with pytest.raises(SpecError, match=r"LLM arm: .*name it as batch_deployment"):
        normalise_arms(arms)["a"].llm.model_spec()
    azure = ModelSpec.model_construct(provider="azure-openai", model="gpt4o", batch=True,
                                      batch_deployment=None)  # past the spec's own check
    with pytest.raises(SpecError, match="arm 'a': azure-openai's batch API runs on a "
                                        "Global-Batch deployment: name it as the model's "
                                        "batch_deployment"):
        adapter_for(azure, None, "arm 'a'")
    local = ModelSpec.of({"model": "openai-compatible:llama", "base_url": "http://h/v1",
                          "batch": True})
    with pytest.raises(SpecError, match="batch: true needs a provider with a batch API"):
        adapter_for(local, None, "the judge")
