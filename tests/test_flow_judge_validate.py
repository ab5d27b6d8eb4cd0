"""The hr-judge-validate flow: sync and async calls, files, deployments' parameters."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from flows import hr_judge_validate, hr_judge_validate_async
from flows.judge_validate import judge_validate_flow
from hr_core.core.errors import HrError, HrTypeError, SpecError
from hr_core.judge.config import hr_judge_config
from hr_core.judge.labelled import LabelledDataError
from hr_core.judge.validation import (
    JudgeValidation,
    ValidityThresholds,
    hr_judge_valid,
    load_validation,
)
from hr_core.models.scripted import ScriptedModel

GRADE = hr_judge_config("mock-model", "Is the response's answer the reference's?", mode="grade")
ROWS = [
    {"item": "Capital of France?", "response": "Paris", "reference": "Paris", "human": "pass"},
    {"item": "Capital of Italy?", "response": "Milan", "reference": "Rome", "human": "fail"},
    {"item": "2+2?", "response": "four", "reference": "4", "human": "pass"},
    {"item": "Largest ocean?", "response": "pacific", "reference": "Pacific", "human": "pass"},
]


def test_sync_call_returns_and_saves_the_record(prefect_harness: None, tmp_path: Path) -> None:
    record = hr_judge_validate(GRADE, pd.DataFrame(ROWS), store=tmp_path, chunk_size=3)
    assert (record.n, record.agreement, record.consistency) == (4, 0.75, 1.0)
    assert record.confusion == {"pass": {"fail": 1, "pass": 2}, "fail": {"fail": 1}}
    saved = load_validation(GRADE, tmp_path)
    loose = ValidityThresholds(min_items=0, min_agreement=0)
    assert saved == record and hr_judge_valid(saved, GRADE, loose)
    assert (tmp_path / f"{GRADE.hash}.json").is_file()


def test_inside_a_running_event_loop_the_sync_call_returns_the_record(
    prefect_harness: None, tmp_path: Path,
) -> None:
    # before: inside a running loop (a Jupyter cell) it returned a coroutine
    async def cell() -> Any:
        with pytest.raises(HrTypeError, match="must be a JudgeConfig"):
            hr_judge_validate("grade", ROWS, store=tmp_path)  # type: ignore[arg-type]
        return hr_judge_validate(GRADE, ROWS, store=tmp_path)

    record = asyncio.run(cell())
    assert isinstance(record, JudgeValidation) and (record.n, record.agreement) == (4, 0.75)
    assert load_validation(GRADE, tmp_path) == record


def test_the_async_variant_is_awaitable_and_counts_no_consensus(prefect_harness: None,
                                                         tmp_path: Path) -> None:
    select = hr_judge_config("mock-model", "Which answer is right?")
    rows = [{"item": "Capital?", "candidates": ["Lyon", "Paris"], "human": "B"},
            {"item": "Capital?", "candidates": ["Lyon", "Nice"], "human": "A"}]

    async def main():
        pending = hr_judge_validate_async(select, rows, store=tmp_path)
        assert asyncio.iscoroutine(pending)
        return await pending

    record = asyncio.run(main())
    # no reference: the mock's position bias gives A then B (mapped back): no consensus
    assert (record.n, record.no_consensus, record.agreement) == (2, 2, 0.0)
    # length bias from the flow's labelled rows: Lyon/Paris differ in length (Paris, shown
    # first in the reversed order, won 1 of its 2 games), Lyon/Nice do not
    assert record.position_bias is not None
    assert record.position_bias["length_games"] == 2
    assert record.position_bias["longer_answer_win_rate"] == 0.5


def test_deployment_parameters_and_a_scripted_model(prefect_harness: None,
                                                    tmp_path: Path) -> None:
    path = tmp_path / "labelled.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in ROWS))
    record = asyncio.run(judge_validate_flow(
        config={"model": "mock-model", "rubric": GRADE.rubric, "mode": "grade"},
        labelled=str(path), store=str(tmp_path / "judges")))
    assert record.hash == GRADE.hash and record.agreement == 0.75
    broken = ScriptedModel(lambda m: "no idea")
    failed = hr_judge_validate(GRADE, path, store=tmp_path / "other", model=broken)
    assert (failed.parse_failures, failed.agreement) == (4, 0.0)


def test_api_key_from_a_secret_block_reaches_only_the_server(prefect_harness: None,
                                                             tmp_path: Path,
                                                             openai_server) -> None:
    from prefect.blocks.system import Secret

    key = "sk-block-SECRET-77aa"
    Secret(value=key).save("hr-test-judge-key", overwrite=True)
    path = tmp_path / "labelled.csv"
    pd.DataFrame(ROWS).to_csv(path, index=False)
    record = asyncio.run(judge_validate_flow(
        config={"model": "openai-compatible:judge", "rubric": GRADE.rubric, "mode": "grade"},
        labelled=str(path), store=str(tmp_path / "judges"), base_url=openai_server.url,
        api_key_block="hr-test-judge-key"))
    assert record.agreement == 0.75 and len(openai_server.requests) == 8
    assert {r.headers["authorization"] for r in openai_server.requests} == {f"Bearer {key}"}
    saved = (tmp_path / "judges" / f"{record.hash}.json").read_text()
    assert key not in saved and key not in record.model_dump_json()


def test_a_model_object_with_a_key_never_becomes_a_flow_parameter(prefect_harness: None,
                                                                  tmp_path: Path,
                                                                  openai_server) -> None:
    from prefect.client.orchestration import get_client

    from hr_core.models.registry import resolve_model

    key = "sk-param-SECRET-31f0"
    model = resolve_model("openai-compatible:judge", base_url=openai_server.url, api_key=key)
    record = hr_judge_validate(GRADE, ROWS, store=tmp_path, model=model)
    assert record.agreement == 0.75
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterName

    named = FlowRunFilter(name=FlowRunFilterName(any_=[f"judge-{GRADE.hash[:12]}"]))
    with get_client(sync_client=True) as client:  # filtered: not the API's first page only
        runs = client.read_flow_runs(flow_run_filter=named)
    params = [json.dumps(r.parameters, default=str) for r in runs]
    assert params and all(key not in p for p in params)
    assert all(GRADE.rubric in p for p in params)


VALIDATE_MISTAKES = {
    "config as a mapping": ({"config": {"model": "mock-model"}}, HrTypeError, "JudgeConfig"),
    "model of another type": ({"model": "mock-model"}, HrTypeError, "chat model"),
    "store that is not a path": ({"store": None}, HrTypeError, "store must be a folder path"),
    "chunk size below one": ({"chunk_size": 0}, SpecError, "chunk_size"),
    "labels of another type": ({"labelled": 7}, LabelledDataError, "labelled data must be"),
}


@pytest.mark.parametrize("case", list(VALIDATE_MISTAKES))
def test_a_mistake_in_hr_judge_validate_arguments_is_an_hr_error(case: str, tmp_path: Path) -> None:
    changes, error, message = VALIDATE_MISTAKES[case]
    kwargs: dict[str, Any] = {"config": GRADE, "labelled": ROWS, "store": tmp_path, **changes}
    with pytest.raises(error, match=message) as raised:
        hr_judge_validate(**kwargs)
    assert isinstance(raised.value, HrError)
    assert not any(tmp_path.iterdir())


def test_a_deployment_without_config_or_labels_is_a_spec_error() -> None:
    with pytest.raises(SpecError, match="needs config"):
        asyncio.run(judge_validate_flow.fn(config=None, labelled=None))
