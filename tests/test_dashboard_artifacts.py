"""What the dashboard shows of a nightly run, read back from the Prefect API: every column
of the tables, numbers rounded as the report rounds them, and paths that mean something
outside the worker's working directory (absolute, or the store's URL)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from deploy_support import run_artifacts
from drift_arms import reference_rows
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

from flows.scheduled import hr_scheduled_benchmark
from hr_core.analysis.benchmark import Benchmark
from hr_core.core.safe import markdown_text
from hr_core.report.markdown import decimals
from hr_core.store.folder import location

SPEC = """\
name: dash-check
reference: {path: reference.jsonl, item: question}
arms:
  steady: drift_arms:steady
  drifting: drift_arms:drifting
"""

RAW_FLOAT = re.compile(r"\d\.\d{5,}")
"""A number with more decimals than any figure of the report (3; costs 4)."""
TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+(Z|[+-]\d\d:\d\d)?")
"""A run's start or end time (its seconds have microseconds: not a figure)."""
RELATIVE = re.compile(r"(?<![\w/.\\-])results[/\\]")
"""The relative store path the flow was given (``results/...``)."""


async def _artifacts(flow_run_name: str) -> dict[str, Any]:
    """The artifacts of every flow run of that name (the scheduled run and its benchmark
    subflow), by key."""
    async with get_client() as client:
        runs = await client.read_flow_runs(
            flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[flow_run_name])))
        found: dict[str, Any] = {}
        for run in runs:
            found.update({a.key: a for a in await run_artifacts(client, run.id) if a.key})
    return found


def _table(artifact: Any) -> list[dict[str, Any]]:
    data = artifact.data
    rows = json.loads(data) if isinstance(data, str) else data
    assert isinstance(rows, list) and rows
    return rows


def _assert_rounded(rows: list[dict[str, Any]]) -> None:
    """Every float as the report shows it: 3 decimals (costs 4), p-values 2 digits."""
    for row in rows:
        for column, value in row.items():
            if not isinstance(value, float):
                continue
            if column in ("p_value", "p_holm"):
                assert float(f"{value:.2g}") == value, (column, value)
            else:
                assert round(value, decimals(column)) == value, (column, value)


def test_the_dashboard_shows_every_column_rounded_numbers_and_absolute_paths(
    prefect_harness: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: ``0.8842967...`` and ``0.0123...`` in the summary and per-arm tables, and
    ``results/dash-check/<run id>`` in the run facts, the report and the diff page's line."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "reference.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in reference_rows(30)))
    (tmp_path / "spec" / "spec.yaml").write_text(SPEC)
    spec = str(tmp_path / "spec" / "spec.yaml")
    asyncio.run(hr_scheduled_benchmark(spec, store="results"))
    monkeypatch.setenv("HR_TEST_DRIFT", "1")
    done = asyncio.run(hr_scheduled_benchmark(spec, store="results", threshold=0.1))
    assert done["run_dir"].startswith("results/")  # the store as given: relative
    run_dir = tmp_path / done["run_dir"]
    found = asyncio.run(_artifacts(f"dash-check-{done['run_id']}"))
    assert {"dash-check-summary", "dash-check-report", "dash-check-run",
            "hr-regression-dash-check", "hr-regression-dash-check-arms"} <= set(found)

    summary = _table(found["dash-check-summary"])
    columns = list(Benchmark.load(run_dir).summary().columns)
    assert [list(row) for row in summary] == [columns] * 2  # every column, in order
    _assert_rounded(summary)
    arms = _table(found["hr-regression-dash-check-arms"])
    assert {"arm", "status", "accuracy", "previous_accuracy", "diff", "ci_low", "ci_high",
            "p_value", "decision", "method", "right_to_wrong", "slices"} <= set(arms[0])
    _assert_rounded(arms)
    drifting = next(row for row in arms if row["arm"] == "drifting")
    assert (drifting["accuracy"], drifting["diff"]) == (0.333, -0.667)

    for key, artifact in found.items():
        text = str(artifact.data)
        figures = TIMESTAMP.sub("", text)
        assert not RAW_FLOAT.search(figures), (key, RAW_FLOAT.search(figures))
        assert not RELATIVE.search(text), (key, text[:2000])
    assert f"`{run_dir}`" in str(found["dash-check-run"].data)
    assert f"`{run_dir}/report.html`" in str(found["dash-check-report"].data)
    page = location(done["diff_page"])
    assert page == str(run_dir / Path(done["diff_page"]).name) and Path(page).is_file()
    assert markdown_text(page) in str(found["hr-regression-dash-check"].data)


def test_a_remote_store_is_named_by_its_url_and_a_local_path_absolutely() -> None:
    assert location("s3://bucket/hr/demo/r1") == "s3://bucket/hr/demo/r1"
    assert location("file:///srv/hr/demo") == "file:///srv/hr/demo"
    assert location("results/demo/r1") == str(Path.cwd() / "results" / "demo" / "r1")
    assert location("~/hr") == str(Path.home() / "hr")
