"""The hr-compare flow: pairwise and select comparisons of a stored benchmark's arms."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from flows import hr_benchmark, hr_compare, hr_compare_async
from hr_core.core.errors import HrError, HrTypeError, RunNotFoundError, SpecError
from hr_core.judge import hr_judge_config
from hr_core.judge.pairwise import Comparison

ITEMS = [{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}"} for i in range(10)]


def right(payload: dict[str, Any]) -> str:
    return "a" + payload["question"][1:]


def half(payload: dict[str, Any]) -> str:
    n = int(payload["question"][1:])
    return f"a{n}" if n % 2 else "no idea"


def test_pairwise_and_select_comparisons_of_a_stored_run(
    prefect_harness: None, tmp_path: Path,
) -> None:
    bench = hr_benchmark({"right": right, "half": half}, ITEMS, store=str(tmp_path))
    pairwise = hr_judge_config("mock-model", "Which answer is right?", mode="pairwise")
    comparison = hr_compare(bench.run_dir, ["right", "half"], pairwise)
    row = comparison.summary().iloc[0]
    assert (row["a"], row["b"], row["n"], row["a_wins"], row["b_wins"], row["ties"]) == (
        "right", "half", 10, 5, 0, 5)
    assert row["win_rate"] == 0.75 and row["ci_low"] < 0.75 < row["ci_high"]
    assert len(comparison.pairs) == 10
    assert comparison.pairs["order_verdicts"].map(len).eq(2).all()
    saved = Path(comparison.manifest["saved_to"])
    assert saved.is_file() and saved.parent == Path(bench.run_dir) / "comparisons"

    select = hr_judge_config("mock-model", "Which answer is right?", mode="select")
    shares = hr_compare(bench, ["half", "right"], select).summary().set_index("arm")
    # odd items: both right, the mock picks the first shown -> orders disagree
    assert shares.loc["right", "chosen"] == 5 and shares.loc["half", "chosen"] == 0
    assert shares.loc["right", "no_verdict"] == 5 and shares.loc["right", "consistency"] == 0.5


def test_compare_inside_a_running_event_loop_and_its_async_variant(
    prefect_harness: None, tmp_path: Path,
) -> None:
    # before: inside a running loop (a Jupyter cell) hr_compare returned a coroutine
    bench = hr_benchmark({"right": right, "half": half}, ITEMS, store=str(tmp_path))
    pairwise = hr_judge_config("mock-model", "Which answer is right?", mode="pairwise")

    async def cell() -> Any:
        return hr_compare(bench, ["right", "half"], pairwise)

    in_loop = asyncio.run(cell())
    assert isinstance(in_loop, Comparison)
    assert in_loop.summary().iloc[0][["a_wins", "b_wins", "ties"]].tolist() == [5, 0, 5]

    async def main() -> Any:
        with pytest.raises(SpecError, match="exactly 2 arms"):
            hr_compare_async(bench, ["right"], pairwise)  # bad arguments raise at the call
        pending = hr_compare_async(bench, ["right", "half"], pairwise)
        assert asyncio.iscoroutine(pending)
        return await pending

    awaited = asyncio.run(main())
    assert isinstance(awaited, Comparison)
    pd.testing.assert_frame_equal(awaited.summary(), in_loop.summary())


COMPARE_MISTAKES = {
    "benchmark of another type": ({"benchmark": 42}, HrTypeError, "must be a Benchmark"),
    "arms as one string": ({"arms": "ab"}, HrTypeError, "list of arm names"),
    "folder without a run": ({}, RunNotFoundError, "no benchmark run here"),
    "concurrency below one": ({"concurrency": 0}, SpecError, "concurrency"),
}


@pytest.mark.parametrize("case", list(COMPARE_MISTAKES))
def test_a_mistake_in_hr_compare_arguments_is_an_hr_error(case: str, tmp_path: Path) -> None:
    changes, error, message = COMPARE_MISTAKES[case]
    kwargs: dict[str, Any] = {
        "benchmark": str(tmp_path), "arms": ["a", "b"],
        "judge": hr_judge_config("mock-model", "Which is right?", mode="pairwise"), **changes}
    with pytest.raises(error, match=message) as raised:
        hr_compare(**kwargs)
    assert isinstance(raised.value, HrError)


def test_a_custom_run_of_the_compare_deployment_takes_a_run_folder_and_a_judge_file(
    prefect_harness: None, tmp_path: Path,
) -> None:
    """The dashboard's "Custom run" of ``hr-compare-files/compare``: a flow run created from
    the deployment with the run folder, the arms and the judge file, run as a worker would;
    the comparison is attached to the run, as ``hr compare`` does."""
    import asyncio

    from deploy_support import custom_run, read_flow_run
    from prefect.flow_engine import run_flow

    from flows.compare_files import compare_files_flow
    from hr_core.report import load_report_inputs

    bench = hr_benchmark({"right": right, "half": half}, ITEMS, store=str(tmp_path))
    judge = Path(__file__).resolve().parents[1] / "hr_core/examples/pairwise_judge.yaml"
    given = {"run_dir": str(bench.run_dir), "arms": ["right", "half"], "judge": str(judge)}
    stored, created = custom_run("compare", given)
    schema = stored.parameter_openapi_schema
    assert set(schema["properties"]) == {"run_dir", "arms", "judge", "concurrency",
                                         "chunk_size"}
    result = asyncio.run(run_flow(compare_files_flow, flow_run=created,
                                  parameters=created.parameters))
    (row,) = result["summary"]
    assert (row["a"], row["b"], row["a_wins"], row["b_wins"], row["ties"]) == (
        "right", "half", 5, 0, 5)
    assert Path(result["saved_to"]).is_file()
    assert [c["judge"]["hash"] for c in load_report_inputs(bench.run_dir).comparisons] == [
        result["judge_hash"]]
    run = read_flow_run(created.id)
    assert run.parameters == given and run.state_type.value == "COMPLETED"
