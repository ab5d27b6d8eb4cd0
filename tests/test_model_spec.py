"""One model spec for arms and judges: the same fields, one factory, one fingerprint rule.

Every model here calls a real OpenAI-compatible server on 127.0.0.1
(tests/openai_server.py); the server's recorded requests show what the spec
decided (endpoint, key, parameters).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from openai_server import FakeOpenAIServer

from hr_core.core.errors import SpecError
from hr_core.core.identity import fingerprint
from hr_core.judge.config import CONFIG_FIELDS, hr_judge_config
from hr_core.models.base import ModelConfigError
from hr_core.models.spec import ModelSpec
from hr_core.run.arms import normalise_arms
from hr_core.run.session import BenchmarkSession, plan_benchmark
from hr_core.run.spec import scorer_from

MSGS = [{"role": "user", "content": "Document: Paris is the capital of France.\n"
         "Question: What is the capital of France?"}]
ITEMS = [{"id": f"q{i}", "document": "Paris is the capital of France.",
          "question": "What is the capital of France?", "label": "Paris"} for i in range(2)]


def _spec(server: FakeOpenAIServer, **fields: Any) -> dict[str, Any]:
    return {"model": "openai-compatible:m", "base_url": server.url, **fields}


def test_the_spec_refuses_unknown_fields_and_bad_values() -> None:
    with pytest.raises(ModelConfigError, match="'tempreature'"):
        ModelSpec.of({"model": "openai:x", "tempreature": 0})
    with pytest.raises(ModelConfigError, match=r"'prices\.input'"):
        ModelSpec.of({"model": "openai:x", "prices": {"input": -1, "output": 1}})
    with pytest.raises(ModelConfigError, match="names no provider"):
        ModelSpec.of("gpt-4o")
    for field, bad in (("rpm", 0), ("tpm", -5), ("rpm", True), ("tpm", "1000"), ("rpm", 1e12)):
        with pytest.raises(ModelConfigError, match=f"field '{field}'"):
            ModelSpec.of({"model": "openai:x", field: bad})
    paced = ModelSpec.of({"model": "openai:x", "rpm": 500, "tpm": 90_000.5})
    assert (paced.rpm, paced.tpm) == (500, 90_000.5)
    assert paced.fingerprint == ModelSpec.of("openai:x").fingerprint  # pacing, no answer
    with pytest.raises(SpecError, match="arm 'a': not a valid LLM arm"):
        normalise_arms({"a": {"model": {"model": "openai:x", "retries": 3}, "prompt": "q"}})


def test_an_arm_spec_sets_endpoint_key_params_prices_and_retries(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HR_SPEC_KEY", "sk-spec-key-123")
    spec = _spec(openai_server, api_key_env="HR_SPEC_KEY", params={"temperature": 0.25},
                 prices={"input": 1.0, "output": 2.0}, timeout_s=3,
                 retry={"max_retries": 1, "backoff_base_s": 0.01, "backoff_max_s": 0.02},
                 concurrency=2)
    arm = normalise_arms({"a": {"model": spec, "prompt": "{question}"}})["a"]
    model = arm.model()
    assert (model.max_retries, model.timeout, model.concurrency) == (1, 3.0, 2)
    reply = asyncio.run(model.complete(MSGS))
    request = openai_server.requests[0]
    assert request.headers["authorization"] == "Bearer sk-spec-key-123"
    assert request.body["temperature"] == 0.25 and request.body["model"] == "m"
    assert reply.usage.cost_usd == pytest.approx(
        (reply.usage.tokens_in * 1.0 + reply.usage.tokens_out * 2.0) / 1e6)
    openai_server.inject("500", "500", "500")
    with pytest.raises(Exception, match="gave up after 2 attempt"):
        asyncio.run(model.complete(MSGS))


def test_a_judge_scorer_takes_the_same_spec(openai_server: FakeOpenAIServer,
                                            tmp_path: Path) -> None:
    # before: {judge: {model: ...}} took a model string only and resolved it by name
    # (no base_url, key variable, prices or cache): an openai-compatible judge failed
    scorer = scorer_from({"judge": {"model": _spec(openai_server, prices={
        "input": 1.0, "output": 1.0}), "rubric": "Is the response's answer the reference's?"}})
    plan = plan_benchmark({"echo": lambda payload: "Paris"}, ITEMS,
                          scorer=scorer, store=str(tmp_path))
    bench = BenchmarkSession(plan).run_sync()
    assert bench.runs["judge_status"].tolist() == ["ok", "ok"]
    assert len(openai_server.requests) == 4  # 2 items x 2 orders
    assert all(r.body["model"] == "m" for r in openai_server.requests)


def test_what_decides_answers_is_in_the_judge_hash_and_plain_strings_keep_theirs(
    openai_server: FakeOpenAIServer,
) -> None:
    plain = hr_judge_config("openai-compatible:m", "Same?", mode="grade")
    old_rule = fingerprint({k: plain.to_dict().get(k) for k in CONFIG_FIELDS})
    assert plain.hash == old_rule  # stored validation records keep matching
    served = hr_judge_config(_spec(openai_server), "Same?", mode="grade")
    warm = hr_judge_config(_spec(openai_server, params={"temperature": 1.0}), "Same?",
                           mode="grade")
    limits = hr_judge_config(_spec(openai_server, concurrency=3, api_key_env="X",
                                   prices={"input": 9, "output": 9}), "Same?", mode="grade")
    assert len({plain.hash, served.hash, warm.hash}) == 3
    assert limits.hash == served.hash  # key variable, prices, limits decide no answer
    assert served.model == "openai-compatible:m"


def test_a_judge_file_takes_the_spec_and_its_old_fields(
    openai_server: FakeOpenAIServer, tmp_path: Path,
) -> None:
    from hr_cli.judges import judge_model, load_judge

    old = tmp_path / "old.yaml"
    old.write_text(f"model: openai-compatible:j\nbase_url: {openai_server.url}\n"
                   "mode: grade\nrubric: Same?\n", encoding="utf-8")
    new = tmp_path / "new.yaml"
    new.write_text(f"model: {{model: openai-compatible:j, base_url: '{openai_server.url}'}}\n"
                   "mode: grade\nrubric: Same?\n", encoding="utf-8")
    assert load_judge(old).hash == load_judge(new).hash
    reply = asyncio.run(judge_model(new).complete(MSGS))
    assert reply.text == "Paris" and openai_server.requests[-1].body["model"] == "j"


def _judged(server: FakeOpenAIServer, tmp_path: Path, budget: Any = None) -> Any:
    scorer = scorer_from({"judge": {"model": _spec(server, prices={
        "input": 1.0, "output": 2.0}), "rubric": "Is the response's answer the reference's?"}})
    plan = plan_benchmark({"echo": lambda payload: "Paris"}, ITEMS, scorer=scorer,
                          store=str(tmp_path), budget=budget, concurrency=1)
    return BenchmarkSession(plan).run_sync()


def test_judge_tokens_and_cost_are_columns_and_count_in_the_budget(
    openai_server: FakeOpenAIServer, tmp_path: Path,
) -> None:
    # before: a judge scorer's tokens and cost were in neither the runs, the summary
    # nor the budget
    bench = _judged(openai_server, tmp_path / "a")
    runs = bench.runs
    assert (runs["judge_tokens_in"] > 0).all() and (runs["judge_cost_usd"] > 0).all()
    expected = (runs["judge_tokens_in"] * 1.0 + runs["judge_tokens_out"] * 2.0) / 1e6
    assert (runs["judge_cost_usd"] - expected.astype(float)).abs().max() < 1e-12
    row = bench.summary().set_index("arm").loc["echo"]
    assert row["judge_tokens_in"] == runs["judge_tokens_in"].sum()
    assert row["judge_cost_usd"] == pytest.approx(runs["judge_cost_usd"].sum())
    assert row["cost_usd"] == 0  # the arm itself spent nothing
    from hr_core.report.html import write_report

    assert ">judge cost<" in Path(write_report(bench.run_dir)).read_text(encoding="utf-8")
    one_run = int(runs["judge_tokens_in"].iloc[0] + runs["judge_tokens_out"].iloc[0])
    stopped = _judged(openai_server, tmp_path / "b", {"max_tokens": one_run, "counts": "judge"})
    assert stopped.runs["failure_kind"].tolist()[1:] == ["budget_stop"]
    free = _judged(openai_server, tmp_path / "c", {"max_tokens": one_run, "counts": "arm"})
    assert free.runs["correct"].all()
