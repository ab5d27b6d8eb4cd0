"""A flow run's parameters are its inputs; what the run decides is reported as its outputs.

Read back from the real (session) Prefect API: the stored parameters of an ``hr_benchmark``
call and of a deployment-style ``benchmark_flow(spec=...)`` call hold only what a user or a
deployment passes; the run id names the flow run, the reference hash and the arms'
fingerprints are in its ``<name>-run`` artifact; no Prefect class, module or flow object has
a method replaced (issue 21 item 7).
"""

from __future__ import annotations

import asyncio
import inspect
import sys
from pathlib import Path
from types import FunctionType
from typing import Any

import pytest
from deploy_support import custom_run, run_artifacts
from prefect import Flow
from prefect.client.orchestration import get_client
from prefect.context import FlowRunContext

from flows import hr_benchmark
from flows.benchmark import benchmark_flow
from hr_cli.demo import example_path

ITEMS = [{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}"} for i in range(6)]
INPUTS = {"spec", "name", "runs", "fresh", "store", "resume", "require_valid_judge",
          "max_error_rate"}
SEEN: list[Any] = []


async def good(payload: dict[str, Any]) -> str:
    context = FlowRunContext.get()
    if context is not None:
        SEEN.append(context.flow)
    return "a" + payload["question"][1:]


async def _read(flow_run_id: str) -> tuple[Any, dict[str, Any]]:
    async with get_client() as client:
        run = await client.read_flow_run(flow_run_id)
        artifacts = {a.key: a for a in await run_artifacts(client, run.id)}
    return run, artifacts


def _prefect_methods() -> dict[tuple[str, str], Any]:
    """Every function or class held by a loaded ``prefect`` module, and ``Flow``'s methods."""
    found: dict[tuple[str, str], Any] = {}
    for name, module in list(sys.modules.items()):
        if name == "prefect" or name.startswith("prefect."):
            for attribute, value in list(vars(module).items()):
                if isinstance(value, FunctionType | type):
                    found[(name, attribute)] = value
    found.update({("Flow", k): v for k, v in vars(Flow).items()})
    return found


def test_the_deployable_benchmark_flow_takes_only_inputs() -> None:
    assert set(inspect.signature(benchmark_flow.fn).parameters) == INPUTS
    assert set(benchmark_flow.parameters.properties) == INPUTS  # the dashboard's form


def test_a_python_run_stores_its_inputs_and_reports_what_it_decided(
    prefect_harness: None, tmp_path: Path,
) -> None:
    before = _prefect_methods()
    SEEN.clear()
    bench = hr_benchmark({"good": good}, ITEMS, runs=2, store=str(tmp_path), name="inputs")
    run, artifacts = asyncio.run(_read(bench.manifest["flow_run_id"]))
    assert set(run.parameters) <= INPUTS, run.parameters
    assert run.parameters["name"] == "inputs" and run.parameters["runs"] == 2
    assert run.parameters["store"] == str(tmp_path)
    assert run.name == f"inputs-{bench.run_id}"  # outputs: the name, the tags, an artifact
    assert {"hr", "inputs"} <= set(run.tags)
    facts = artifacts["inputs-run"].data
    assert bench.run_id in facts and bench.reference_hash in facts
    assert "test_flow_parameters:good (" in facts and str(bench.run_dir) in facts
    after = _prefect_methods()
    assert [k for k in before if k in after and after[k] is not before[k]] == []
    assert SEEN and all(isinstance(f, Flow) for f in SEEN)
    assert all("serialize_parameters" not in vars(f) for f in SEEN)  # no instance patch


def test_a_deployment_style_run_stores_what_it_was_given(
    prefect_harness: None, tmp_path: Path,
) -> None:
    lines = example_path("docqa_reference.jsonl").read_text().splitlines()[:3]
    (tmp_path / "ref.jsonl").write_text("\n".join(lines) + "\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: given\nreference: ref.jsonl\n"
                    "arms:\n  keyword: hr_core.examples.demo_arms:keyword_overlap\n")
    bench = asyncio.run(benchmark_flow(spec=str(spec), store=str(tmp_path / "results"),
                                       runs=1))
    run, artifacts = asyncio.run(_read(bench.manifest["flow_run_id"]))
    assert set(run.parameters) <= INPUTS, run.parameters
    assert run.parameters["spec"] == str(spec) and run.parameters["runs"] == 1
    assert run.name == f"given-{bench.run_id}" and {"hr", "given"} <= set(run.tags)
    facts = artifacts["given-run"].data
    assert bench.run_id in facts and bench.reference_hash in facts and "keyword" in facts


@pytest.mark.parametrize("module, name", [
    ("flows.benchmark", "benchmark_flow"), ("flows.compare", "compare_flow"),
    ("flows.judge_validate", "judge_validate_flow"), ("flows.diff", "hr_diff"),
    ("flows.scheduled", "hr_scheduled_benchmark")])
def test_every_hr_flow_keeps_prefect_s_own_methods(module: str, name: str) -> None:
    import importlib

    named = getattr(importlib.import_module(module), name)
    assert isinstance(named, Flow) and "serialize_parameters" not in vars(named)


def test_a_custom_run_of_the_benchmark_deployment_keeps_its_parameters(
    prefect_harness: None, tmp_path: Path,
) -> None:
    """The dashboard's "Custom run" of ``hr-benchmark/benchmark``: a flow run created from
    the deployment with other parameters, then executed as a worker would."""
    from prefect.flow_engine import run_flow

    lines = example_path("docqa_reference.jsonl").read_text().splitlines()[:3]
    (tmp_path / "ref.jsonl").write_text("\n".join(lines) + "\n")
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: custom\nreference: ref.jsonl\n"
                    "arms:\n  keyword: hr_core.examples.demo_arms:keyword_overlap\n")
    given = {"spec": str(spec), "store": str(tmp_path / "results"), "runs": 2}
    stored, created = custom_run("benchmark", given)
    assert set(stored.parameter_openapi_schema["properties"]) == INPUTS  # the form's fields
    assert created.parameters == given
    bench = asyncio.run(run_flow(benchmark_flow, flow_run=created,
                                 parameters=created.parameters))
    run, artifacts = asyncio.run(_read(str(created.id)))
    assert run.parameters == given and run.state_type.value == "COMPLETED"
    assert run.name == f"custom-{bench.run_id}" and {"hr", "custom"} <= set(run.tags)
    assert bench.reference_hash in artifacts["custom-run"].data
    assert len(bench.runs) == 3 * 2
