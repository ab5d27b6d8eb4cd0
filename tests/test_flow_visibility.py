"""Failures are loud and flow runs are worth reading: max_error_rate fails the flow run
(results written), WARNING logs, the markdown artifact, parameters, tags and names, all
read back from the real (ephemeral) Prefect API; ``hr run`` exits 3."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from deploy_support import run_artifacts
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    FlowRunFilter,
    FlowRunFilterId,
    LogFilter,
    LogFilterFlowRunId,
)

from flows import hr_benchmark
from flows.benchmark import benchmark_flow
from hr_cli import ERROR_RATE_EXCEEDED, main
from hr_cli.demo import example_path
from hr_core.analysis.health import ErrorRateExceeded

ITEMS = [{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}"} for i in range(12)]


def good(payload: dict[str, Any]) -> str:
    return "a" + payload["question"][1:]


def typo(payload: dict[str, Any]) -> str:
    return "{questoin}".format(**payload)


def flaky(payload: dict[str, Any]) -> str:
    if payload["question"] == "Q3":
        raise TimeoutError("read timed out")
    return good(payload)


async def _read(flow_run_id: str) -> dict[str, Any]:
    """The flow run as the dashboard sees it: state, name, tags, parameters, logs, artifacts."""
    async with get_client() as client:
        run = await client.read_flow_run(flow_run_id)
        for _ in range(50):  # logs are sent in batches: poll
            logs = await client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(
                any_=[run.id])))
            if any(log.level >= 30 for log in logs):
                break
            await asyncio.sleep(0.1)
        artifacts = await run_artifacts(client, run.id)
    return {"state": run.state_type.value if run.state_type else None,
            "message": run.state.message if run.state else "", "name": run.name,
            "tags": run.tags, "parameters": run.parameters,
            "warnings": [log.message for log in logs if log.level == 30],
            "artifacts": {a.key: a for a in artifacts}}


def test_an_arm_failing_every_call_fails_the_flow_run_after_writing_results(
    prefect_harness: None, tmp_path: Path,
) -> None:
    with pytest.raises(ErrorRateExceeded) as caught:
        hr_benchmark({"good": good, "typo": typo}, ITEMS, store=str(tmp_path), name="loud")
    message = str(caught.value)
    assert "typo 12/12 (100%)" in message and "KeyError: 'questoin'" in message
    assert "good" not in message.split("arm(s):")[1]
    bench = caught.value.benchmark
    run_dir = Path(bench.run_dir)
    assert len(pd.read_parquet(run_dir / "runs.parquet")) == 24  # written before failing
    assert (run_dir / "report.html").is_file()
    seen = asyncio.run(_read(bench.manifest["flow_run_id"]))
    assert seen["state"] == "FAILED"
    assert "ErrorRateExceeded" in seen["message"] and "questoin" in seen["message"]
    assert any(w.startswith("typo: 12 error(s) in 12 run(s) (100%); top: KeyError: "
                            "'questoin' (12x)") for w in seen["warnings"]), seen["warnings"]
    report = seen["artifacts"]["loud-report"].data
    assert report.splitlines()[2].startswith("**Verdict.** good is the best arm")
    assert "- **typo**: 12 error(s) in 12 run(s) (100%) **above max_error_rate**" in report
    assert f"`{run_dir}/report.html`" in report
    progress = seen["artifacts"]["loud-progress"].description
    assert "typo: 12/12 (0 wrong or other failures, 12 errors)" in progress


def test_a_healthy_run_with_a_few_errors_completes_and_warns(
    prefect_harness: None, tmp_path: Path,
) -> None:
    bench = hr_benchmark({"good": good, "flaky": flaky}, ITEMS, store=str(tmp_path),
                         name="healthy")
    seen = asyncio.run(_read(bench.manifest["flow_run_id"]))
    assert seen["state"] == "COMPLETED"
    assert any(w.startswith("flaky: 1 error(s) in 12 run(s) (8%); top: TimeoutError: read "
                            "timed out (1x)") for w in seen["warnings"]), seen["warnings"]


def test_max_error_rate_one_never_fails(prefect_harness: None, tmp_path: Path) -> None:
    bench = hr_benchmark({"typo": typo}, ITEMS, store=str(tmp_path), max_error_rate=1.0)
    assert asyncio.run(_read(bench.manifest["flow_run_id"]))["state"] == "COMPLETED"


def test_a_python_run_shows_names_fingerprints_tags_and_its_name(
    prefect_harness: None, tmp_path: Path,
) -> None:
    bench = hr_benchmark({"good": good, "keyword": "hr_core.examples.demo_arms:always_abstain"},
                         ITEMS, runs=2, store=str(tmp_path), name="shown")
    seen = asyncio.run(_read(bench.manifest["flow_run_id"]))
    assert seen["name"] == f"shown-{bench.run_id}"
    assert {"hr", "shown"} <= set(seen["tags"])
    params = seen["parameters"]
    assert params["name"] == "shown" and params["runs"] == 2 and params["fresh"] is False
    assert params["store"] == str(tmp_path) and params["spec"] is None
    assert "invocation" not in params and "_Invocation" not in json.dumps(params)
    facts = seen["artifacts"]["shown-run"].data  # what the run decided: an output
    assert f"hash `{bench.reference_hash}`" in facts and f"`{bench.run_id}`" in facts
    assert "| arm good | `test_flow_visibility:good (" in facts
    assert "| arm keyword | `hr_core.examples.demo_arms:always_abstain (" in facts


def test_a_spec_run_like_a_deployment_is_renamed_tagged_and_given_its_parameters(
    prefect_harness: None, tmp_path: Path,
) -> None:
    spec = example_path("demo.yaml")
    lines = example_path("docqa_reference.jsonl").read_text().splitlines()[:6]
    (tmp_path / "ref.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "spec.yaml").write_text(
        "name: deployed\nreference: ref.jsonl\n"
        "arms:\n  keyword: hr_core.examples.demo_arms:keyword_overlap\n")
    bench = asyncio.run(benchmark_flow(spec=str(tmp_path / "spec.yaml"),
                                       store=str(tmp_path / "results")))
    seen = asyncio.run(_read(bench.manifest["flow_run_id"]))
    assert seen["name"] == f"deployed-{bench.run_id}"
    assert {"hr", "deployed"} <= set(seen["tags"])
    assert seen["parameters"]["spec"] == str(tmp_path / "spec.yaml")
    assert "reference_hash" not in seen["parameters"]
    facts = seen["artifacts"]["deployed-run"].data
    assert bench.reference_hash in facts and "| arm keyword |" in facts
    assert spec.is_file()


def _hr_run_typo(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                 reader: str) -> tuple[int, str, str]:
    """``hr run`` of a spec named typo: 8 document-QA items, a keyword arm and ``reader``."""
    lines = example_path("docqa_reference.jsonl").read_text().splitlines()[:8]
    (tmp_path / "ref.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "spec.yaml").write_text(
        "name: typo\nreference: ref.jsonl\narms:\n"
        "  keyword: hr_core.examples.demo_arms:keyword_overlap\n" + reader)
    code = 0
    try:
        main(["run", "spec.yaml", "--store", str(tmp_path / "store")])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.usefixtures("prefect_harness")
def test_hr_run_prints_each_arm_s_errors_and_exits_3(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_arms.py").write_text(
        "def reader(payload):\n    return payload['questoin']\n")
    spec = tmp_path / "spec.yaml"
    code, out, err = _hr_run_typo(tmp_path, capsys, "  reader: my_arms:reader\n")
    assert code == ERROR_RATE_EXCEEDED == 3
    assert "hr: warning: reader: 8 error(s) in 8 run(s) (100%); most frequent:" in out
    assert "8 x  KeyError: 'questoin'" in out and "KeyError: 'questoin'" in err
    assert "0 wrong/failed  8 errors" in out  # the progress bar counts errors apart
    assert "Report:" in out  # the results and report are written before failing
    assert err.startswith("hr: error: typo: error rate above max_error_rate=0.5 in 1 arm(s): "
                          "reader 8/8 (100%)")
    assert "Traceback" not in out + err
    run_dir = next((tmp_path / "store" / "typo").iterdir())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    seen = asyncio.run(_read(manifest["flow_run_id"]))
    assert seen["state"] == "FAILED" and seen["parameters"]["spec"] == str(spec)
    assert seen["parameters"]["max_error_rate"] == 0.5
    code = 0
    try:
        main(["run", str(spec), "--store", str(tmp_path / "store"), "--max-error-rate", "1"])
    except SystemExit as exc:
        code = int(exc.code or 0)
    assert code == 0


async def _runs_named(name: str) -> list[Any]:
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    async with get_client() as client:
        runs = await client.read_flow_runs(
            flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[name])))
        flows = {f.id: f.name for f in await client.read_flows()}
    return [(flows.get(r.flow_id), r) for r in runs]


def test_a_scheduled_run_is_named_and_tagged_like_an_ad_hoc_one(
    prefect_harness: None, tmp_path: Path,
) -> None:
    from flows.scheduled import hr_scheduled_benchmark

    lines = example_path("docqa_reference.jsonl").read_text().splitlines()[:4]
    (tmp_path / "ref.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "spec.yaml").write_text(
        "name: nightly-docqa\nreference: ref.jsonl\n"
        "arms:\n  keyword: hr_core.examples.demo_arms:keyword_overlap\n")
    result = asyncio.run(hr_scheduled_benchmark(spec=str(tmp_path / "spec.yaml"),
                                                store=str(tmp_path / "results")))
    named = asyncio.run(_runs_named(f"nightly-docqa-{result['run_id']}"))
    assert sorted(flow for flow, _ in named) == ["hr-benchmark", "hr-scheduled-benchmark"]
    for _, run in named:
        assert {"hr", "nightly-docqa"} <= set(run.tags)


def test_compare_and_judge_validation_runs_name_and_link_their_benchmark_run(
    prefect_harness: None, tmp_path: Path,
) -> None:
    from flows import hr_compare, hr_judge_validate
    from hr_core.judge import hr_judge_config

    bench = hr_benchmark({"good": good, "flaky": flaky}, ITEMS, store=str(tmp_path),
                         name="linked")
    judge = hr_judge_config("mock-model", "Which answer is right?", mode="pairwise")
    comparison = hr_compare(bench, ["good", "flaky"], judge)
    seen = asyncio.run(_read(comparison.manifest["flow_run_id"]))
    assert seen["name"] == f"compare-good-vs-flaky-for-linked-{bench.run_id}"
    assert {"hr", "linked", "compare"} <= set(seen["tags"])
    assert seen["parameters"]["benchmark"] == {
        "name": "linked", "run_id": bench.run_id, "run_dir": bench.run_dir,
        "flow_run_id": bench.manifest["flow_run_id"]}
    grade = hr_judge_config("mock-model", "Same answer?", mode="grade")
    rows = [{"item": "2+2?", "response": "4", "reference": "4", "human": "pass"}]
    hr_judge_validate(grade, rows, store=str(tmp_path / "judges"), benchmark=bench.run_dir)
    named = asyncio.run(_runs_named(f"judge-{grade.hash[:12]}-for-linked-{bench.run_id}"))
    assert len(named) == 1 and {"hr", "linked", "judge"} <= set(named[0][1].tags)
    assert named[0][1].parameters["benchmark"]["flow_run_id"] == bench.manifest["flow_run_id"]


@pytest.mark.usefixtures("prefect_harness")
def test_a_misspelt_prompt_field_stops_hr_run_before_any_call(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = _hr_run_typo(tmp_path, capsys, (
        "  reader:\n    model: mock:reader\n"
        "    prompt: \"Document: {document}\\nQuestion: {questoin}\"\n"))
    assert code == 2, out + err
    assert err.startswith("hr: error: arm 'reader': the prompt uses field 'questoin', "
                          "which no item has (did you mean `question`?"), err
    assert "Traceback" not in out + err
    assert not (tmp_path / "store").exists()  # nothing ran: no run folder, no journal


def test_task_runs_carry_no_tags_so_no_tag_concurrency_slot_is_acquired(
    prefect_harness: None, tmp_path: Path,
) -> None:
    """Issue 25: a tagged task run waits for a tag-concurrency slot (2+ s when Prefect's
    no-limits cache has expired); the flow run keeps its tags, its task runs have none."""
    bench = hr_benchmark({"good": good}, ITEMS, store=str(tmp_path), name="untagged")

    async def read() -> tuple[list[str], list[list[str]]]:
        async with get_client() as client:
            run = await client.read_flow_run(bench.manifest["flow_run_id"])
            tasks = await client.read_task_runs(flow_run_filter=FlowRunFilter(
                id=FlowRunFilterId(any_=[run.id])))
        return run.tags, [t.tags for t in tasks]

    flow_tags, task_tags = asyncio.run(read())
    assert {"hr", "untagged"} <= set(flow_tags)
    assert task_tags and all(tags == [] for tags in task_tags)
