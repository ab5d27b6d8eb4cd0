"""The scheduled benchmark: fresh runs, the regression check, its artifact and event."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path

import pytest
from drift_arms import reference_rows
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    ArtifactCollectionFilter,
    ArtifactCollectionFilterKey,
    FlowRunFilter,
    FlowRunFilterName,
    LogFilter,
    LogFilterFlowRunId,
)
from prefect.events import Event
from prefect.events.filters import EventFilter, EventNameFilter, EventResourceFilter

from flows.scheduled import RegressionDetected, _export_secrets, hr_scheduled_benchmark
from hr_core.core.safe import markdown_text
from tasks.regression import REGRESSION_EVENT, regression_artifact_key

SPEC = """\
name: drift-check
reference: {path: reference.jsonl, item: question}
arms:
  steady: drift_arms:steady
  drifting: drift_arms:drifting
"""


def _write_spec(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    rows = "".join(json.dumps(r) + "\n" for r in reference_rows(30))
    (folder / "reference.jsonl").write_text(rows)
    (folder / "spec.yaml").write_text(SPEC)
    return folder / "spec.yaml"


async def _latest_markdown(key: str) -> str:
    flt = ArtifactCollectionFilter(key=ArtifactCollectionFilterKey(any_=[key]))
    async with get_client() as client:
        rows = await client.read_latest_artifacts(artifact_filter=flt)
    return str(rows[0].data) if rows else ""


async def _events(name: str, resource_id: str) -> list[Event]:
    """The events of that name on that resource (events are processed async: poll)."""
    flt = EventFilter(event=EventNameFilter(name=[name]),
                      resource=EventResourceFilter(id=[resource_id]))
    async with get_client() as client:
        for _ in range(100):
            page = await client.read_events(filter=flt, limit=50)
            if page.events:
                return list(page.events)
            await asyncio.sleep(0.1)
    return []


def test_a_drop_is_found_against_the_previous_run_and_alerted(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = str(_write_spec(tmp_path / "spec"))
    store = str(tmp_path / "results")
    first = asyncio.run(hr_scheduled_benchmark(spec, store=store))
    assert first["previous_run_id"] is None and first["regressions"] == []
    markdown = asyncio.run(_latest_markdown(regression_artifact_key("drift-check")))
    assert "No earlier completed run of this spec" in markdown
    same = asyncio.run(hr_scheduled_benchmark(spec, store=store))
    assert same["run_id"] != first["run_id"]
    assert (same["previous_run_id"], same["regressions"]) == (first["run_id"], [])
    markdown = asyncio.run(_latest_markdown(regression_artifact_key("drift-check")))
    assert "# Regression check: no regression" in markdown
    assert "| steady | no clear change | 30 | 1.000 | 1.000 | 0.000 |" in markdown

    import hr_core.analysis.diff
    import hr_core.analysis.regression

    calls: list[int] = []  # each arm's paired comparison, wherever the nightly makes it
    for module in (hr_core.analysis.diff, hr_core.analysis.regression):
        made = getattr(module, "compare_paired", None)
        if made is not None:
            monkeypatch.setattr(module, "compare_paired", lambda *a, _f=made, **k: (
                calls.append(1), _f(*a, **k))[1])
    monkeypatch.setenv("HR_TEST_DRIFT", "1")
    worse = asyncio.run(hr_scheduled_benchmark(spec, store=store, threshold=0.1))
    assert len(calls) == 2  # once per arm (before: 4, compare_runs and diff_runs each)
    assert worse["previous_run_id"] == same["run_id"]
    assert worse["regressions"] == ["drifting"]
    markdown = asyncio.run(_latest_markdown(regression_artifact_key("drift-check")))
    assert "# Regression check: regression in drifting" in markdown
    assert "| drifting | regression | 30 | 1.000 | 0.333 | -0.667 |" in markdown
    # the diff against the previous run: which items broke, and where the whole page is
    assert "## What changed:" in markdown and "### Top flips: drifting" in markdown
    assert "| right→wrong |" in markdown and "### Top flips: steady" not in markdown
    page = worse["diff_page"]
    assert page == f"{worse['run_dir']}/diff-{same['run_id']}.html"
    assert markdown_text(page) in markdown
    assert "right→wrong" in Path(page).read_text()
    assert same["diff_page"] is not None and first["diff_page"] is None
    events = asyncio.run(_events(REGRESSION_EVENT, "hr.spec.drift-check"))
    assert len(events) == 1
    payload = events[0].payload
    assert payload["arm"] == "drifting" and payload["diff"] == pytest.approx(-2 / 3)
    assert payload["ci_high"] < 0 and payload["previous_run_id"] == same["run_id"]
    assert events[0].resource["hr.spec.path"] == spec


def test_fail_on_regression_makes_the_flow_run_fail(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    spec = str(_write_spec(tmp_path / "spec"))
    store = str(tmp_path / "results")
    asyncio.run(hr_scheduled_benchmark(spec, store=store))
    monkeypatch.setenv("HR_TEST_DRIFT", "1")
    with pytest.raises(RegressionDetected, match="drifting regressed against run"):
        asyncio.run(hr_scheduled_benchmark(spec, store=store, fail_on_regression=True))


def test_secret_blocks_fill_the_environment_variables_named(
    prefect_harness: None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from prefect.blocks.system import Secret

    Secret(value="sk-test-not-a-key").save("hr-test-api-key", overwrite=True)
    monkeypatch.setenv("HR_TEST_API_KEY", "")
    asyncio.run(_export_secrets({"HR_TEST_API_KEY": "hr-test-api-key"}))
    assert os.environ["HR_TEST_API_KEY"] == "sk-test-not-a-key"


def test_a_nightly_run_that_stops_when_clear_says_so_in_its_artifact(
    prefect_harness: None, tmp_path: Path,
) -> None:
    spec = _write_spec(tmp_path / "spec")
    spec.write_text(SPEC + "stop: {margin: 0.5, min_items: 10, batch: 10}\n")
    done = asyncio.run(hr_scheduled_benchmark(str(spec), store=str(tmp_path / "results")))
    manifest = json.loads((Path(done["run_dir"]) / "manifest.json").read_text())
    assert manifest["sequential"]["stopped"] and manifest["sequential"]["items_used"] < 30
    markdown = asyncio.run(_latest_markdown(regression_artifact_key("drift-check")))
    assert "> **Note:** stopped: verdict clear after" in markdown


async def _flow_run_logs(flow_run_name: str, wanted: str) -> list[str]:
    """The log messages of the scheduled flow run of that name, once one holds ``wanted``
    (logs are sent in batches: poll)."""
    async with get_client() as client:
        runs = await client.read_flow_runs(
            flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[flow_run_name])))
        ids = [r.id for r in runs]
        messages: list[str] = []
        for _ in range(100):
            logs = await client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=ids)))
            messages = [log.message for log in logs]
            if any(wanted in m for m in messages):
                break
            await asyncio.sleep(0.1)
    return messages


def test_an_edited_arm_is_compared_with_the_previous_completed_run_of_the_same_name(
    prefect_harness: None, tmp_path: Path,
) -> None:
    """Before: "compared with nothing (first run)" after an arm's code changed, though two
    completed runs of the spec were in the store (the lookup kept the same fingerprint)."""
    import shutil

    from hr_core.store.folder import utc_now

    spec = _write_spec(tmp_path / "spec")
    spec.write_text(SPEC.replace("drift-check", "nightly"))
    store = tmp_path / "results"
    first = asyncio.run(hr_scheduled_benchmark(str(spec), store=str(store)))
    second = asyncio.run(hr_scheduled_benchmark(str(spec), store=str(store)))
    assert second["previous_run_id"] == first["run_id"]
    # a later run that did not complete (interrupted): never the one compared with
    stopped = store / "nightly" / "zz-interrupted"
    shutil.copytree(second["run_dir"], stopped)
    manifest = json.loads((stopped / "manifest.json").read_text())
    manifest.update(run_id="zz-interrupted", status="interrupted", started_at=utc_now())
    (stopped / "manifest.json").write_text(json.dumps(manifest))
    # a later completed run of another spec name in the same store: not this benchmark's
    other = spec.with_name("other.yaml")
    other.write_text(SPEC.replace("drift-check", "other"))
    assert asyncio.run(hr_scheduled_benchmark(str(other), store=str(store)))["name"] == "other"

    spec.write_text(SPEC.replace("drift-check", "nightly").replace(
        "drift_arms:steady", "drift_arms:steady_again"))  # the arm's code changed
    flow_runs = logging.getLogger("prefect.flow_runs")  # the suite logs WARNING and above
    level = flow_runs.level
    flow_runs.setLevel(logging.INFO)
    try:
        edited = asyncio.run(hr_scheduled_benchmark(str(spec), store=str(store)))
    finally:
        flow_runs.setLevel(level)
    assert edited["previous_run_id"] == second["run_id"]
    assert (edited["regressions"], edited["changed"]) == ([], "code (arm steady)")
    markdown = asyncio.run(_latest_markdown(regression_artifact_key("nightly")))
    changed = markdown_text("code (arm steady)")
    assert f"**Changed since run {markdown_text(second['run_id'])}:** {changed}" in markdown
    row = ["code", "steady", "path", "drift_arms:steady", "drift_arms:steady_again"]
    assert f"| {' | '.join(map(markdown_text, row))} |" in markdown  # the diff's table
    line = f"compared with {second['run_id']} (changed since: code (arm steady)): no regression"
    logs = asyncio.run(_flow_run_logs(f"nightly-{edited['run_id']}", line))
    assert any(line in m for m in logs), logs
