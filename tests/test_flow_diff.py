"""The ``hr-diff`` flow on Prefect's test harness: the page in the store, the artifact."""

from __future__ import annotations

import asyncio
from pathlib import Path

from deploy_support import custom_run, read_flow_run
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactCollectionFilter, ArtifactCollectionFilterKey
from test_diff import _run, all_right, first_five

from flows import hr_diff


async def _markdown(key: str) -> str:
    flt = ArtifactCollectionFilter(key=ArtifactCollectionFilterKey(any_=[key]))
    async with get_client() as client:
        rows = await client.read_latest_artifacts(artifact_filter=flt)
    return str(rows[0].data) if rows else ""


def test_the_diff_flow_writes_the_page_and_publishes_the_top_flips(
        prefect_harness: None, tmp_path: Path) -> None:
    before = _run(tmp_path / "a", {"x": all_right, "y": all_right})
    after = _run(tmp_path / "b", {"x": first_five, "z": all_right})
    result = asyncio.run(hr_diff(str(before.run_dir), str(after.run_dir),
                                 arms={"y": "z"}))
    assert result["worse"] == ["x"]
    assert result["page"] == f"{after.run_dir}/diff-{before.run_id}.html"
    assert "right→wrong" in Path(result["page"]).read_text()
    markdown = asyncio.run(_markdown(result["artifact"]))
    assert "### Top flips: x" in markdown and "| q5 | right→wrong |" in markdown
    assert "| y → z |" in markdown  # the renamed arm, paired
    assert ("| code | x | callable | test\\_diff:all\\_right | test\\_diff:first\\_five |"
            in markdown)  # the fingerprint part that changed, escaped for markdown


def test_a_custom_run_of_the_diff_deployment_takes_two_run_folders(
        prefect_harness: None, tmp_path: Path) -> None:
    """The dashboard's "Custom run" of ``hr-diff/diff``: a flow run created from the
    deployment with the two run folders as parameters, then executed as a worker would."""
    from prefect.flow_engine import run_flow

    before = _run(tmp_path / "a", {"x": all_right})
    after = _run(tmp_path / "b", {"x": first_five})
    given = {"run_a": str(before.run_dir), "run_b": str(after.run_dir)}
    stored, created = custom_run("diff", given)
    schema = stored.parameter_openapi_schema
    assert {"run_a", "run_b"} <= set(schema["properties"]) <= {
        "run_a", "run_b", "arms", "output", "level"}
    assert set(schema["required"]) == {"run_a", "run_b"}  # the form asks for both
    result = asyncio.run(run_flow(hr_diff, flow_run=created, parameters=created.parameters))
    assert result["worse"] == ["x"]
    assert "right→wrong" in Path(result["page"]).read_text()
    run = read_flow_run(created.id)
    assert run.parameters == given and run.state_type.value == "COMPLETED"
