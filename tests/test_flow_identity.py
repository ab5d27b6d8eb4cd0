"""Identity through the flows (issue 9 section 1): options given with a spec are used, and
scheduled runs call the models, so a model that drifted is reported as a regression."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from flows import hr_benchmark
from flows.scheduled import hr_scheduled_benchmark
from hr_core import HrTypeError, hr_scorer_exact

ARMS = '''\
def shout(payload):
    return payload["question"].upper()
'''


def _spec(folder: Path, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ref.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "question": f"q{i}", "label": f"q{i}"}) + "\n"
        for i in range(4)))
    (folder / "spec_arms.py").write_text(ARMS)
    (folder / "spec.yaml").write_text(
        "name: opts\nreference: ref.jsonl\narms:\n  shout: spec_arms:shout\n"
        f"runs: 1\nconcurrency: 4\nstore: {folder / 'spec-store'}\n{extra}")
    return folder / "spec.yaml"


def test_options_given_with_a_spec_override_it_and_are_recorded(
        prefect_harness: None, tmp_path: Path) -> None:
    # before: runs=2, budget, concurrency, scorer and store were silently ignored
    # (4 runs, concurrency 4, scorer exact (accuracy 1.0), results in the spec's store)
    spec = _spec(tmp_path / "spec")
    bench = hr_benchmark(spec, runs=2, concurrency=3, budget={"max_calls": 100},
                         scorer=hr_scorer_exact(normalise=False),
                         store=str(tmp_path / "given"))
    assert len(bench.runs) == 8
    assert bench.scorer == "exact_raw" and bench.summary()["accuracy"].iloc[0] == 0.0
    assert Path(bench.run_dir).parent.parent == tmp_path / "given"
    manifest = bench.manifest
    assert (manifest["runs"], manifest["concurrency"]) == (2, 3)
    assert manifest["budget"]["max_calls"] == 100
    assert manifest["overrides"] == {
        "runs": 2, "concurrency": 3, "budget": {"max_calls": 100},
        "scorer": {"name": "exact_raw", "options": {"normalise": "none"}},
        "store": str(tmp_path / "given")}


def test_store_results_given_with_a_spec_is_used(
        prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # before: store="results" (the default's value) could not override the spec's store
    monkeypatch.chdir(tmp_path)
    bench = hr_benchmark(_spec(tmp_path / "spec"), store="results")
    assert Path(bench.run_dir).resolve().parent.parent == (tmp_path / "results").resolve()


def test_a_reference_given_with_a_spec_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HrTypeError, match="names its own reference"):
        hr_benchmark(_spec(tmp_path / "spec"), [{"id": "q1", "label": "x"}])


# --- scheduled runs call the models: the drift is found ------------------------------------


def test_a_model_that_drifts_between_scheduled_runs_is_a_regression(
        prefect_harness: None, openai_server: Any, tmp_path: Path) -> None:
    # before: the second scheduled run was served from <store>/responses.sqlite: no request
    # reached the server, accuracy stayed 1.000 and no regression was reported
    folder = tmp_path / "spec"
    folder.mkdir()
    (folder / "ref.jsonl").write_text("".join(
        json.dumps({"id": f"q{i}", "question": f"Capital {i}?", "label": "Paris"}) + "\n"
        for i in range(30)))
    (folder / "spec.yaml").write_text(
        "name: drift-llm\nreference: {path: ref.jsonl, item: question}\narms:\n"
        f"  llm: {{model: 'openai-compatible:served', base_url: '{openai_server.url}',"
        " prompt: '{payload}', params: {temperature: 0}}\n")
    store = str(tmp_path / "results")
    openai_server.reply = lambda body: "Paris"
    first = asyncio.run(hr_scheduled_benchmark(str(folder / "spec.yaml"), store=store))
    assert first["regressions"] == [] and len(openai_server.requests) == 30

    def drifted(body: dict[str, Any]) -> str:
        number = int(body["messages"][-1]["content"].split()[1].rstrip("?"))
        return "Paris" if number % 3 == 0 else "Lyon"

    openai_server.reply = drifted
    second = asyncio.run(hr_scheduled_benchmark(str(folder / "spec.yaml"), store=store))
    assert len(openai_server.requests) == 60  # the fresh run called the model again
    assert second["previous_run_id"] == first["run_id"]
    assert second["regressions"] == ["llm"]
    manifest = json.loads((Path(second["run_dir"]) / "manifest.json").read_text())
    assert manifest["response_cache"]["shared"] is False
    accuracy = [pd.read_parquet(Path(run["run_dir"]) / "summary.parquet")["accuracy"].iloc[0]
                for run in (first, second)]
    assert accuracy == [1.0, pytest.approx(10 / 30)]


def test_hr_run_shared_cache_opts_into_the_stores_cache(
        prefect_harness: None, openai_server: Any, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from hr_cli.app import app

    folder = tmp_path / "spec"
    folder.mkdir()
    (folder / "ref.jsonl").write_text(json.dumps({"id": "q1", "question": "Q?",
                                                  "label": "Paris"}) + "\n")
    (folder / "spec.yaml").write_text(
        "name: shared\nreference: {path: ref.jsonl, item: question}\narms:\n"
        f"  llm: {{model: 'openai-compatible:served', base_url: '{openai_server.url}',"
        " prompt: '{payload}'}\n"
        f"store: {tmp_path / 'results'}\n")
    openai_server.reply = lambda body: "Paris"
    for _ in range(2):
        done = CliRunner().invoke(app, ["run", str(folder / "spec.yaml"), "--fresh",
                                        "--shared-cache"])
        assert done.exit_code == 0, done.output
    assert len(openai_server.requests) == 1  # the second fresh run replayed the reply
    assert (tmp_path / "results" / "responses.sqlite").is_file()
