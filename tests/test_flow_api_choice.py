"""Which Prefect API a flow call uses (flows.clients), and parameters stored without FastAPI."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prefect.settings import PREFECT_API_URL, PREFECT_HOME, temporary_settings

from flows.clients import plain_parameters, prefect_api
from hr_cli.server import server_status, state_path


@pytest.fixture()
def home(tmp_path: Path) -> Iterator[Path]:
    with temporary_settings(updates={PREFECT_HOME: str(tmp_path), PREFECT_API_URL: None}):
        yield tmp_path


def test_an_explicit_api_url_wins(home: Path) -> None:
    with temporary_settings(updates={PREFECT_API_URL: "http://127.0.0.1:9/api"}):
        api = prefect_api()
    assert (api.kind, api.url) == ("explicit", "http://127.0.0.1:9/api")


def test_without_a_server_a_temporary_one_is_announced_with_the_hint(home: Path) -> None:
    api = prefect_api()
    assert api.kind == "temporary" and api.url is None
    assert "`hr server start` makes runs faster and keeps them in the dashboard" in api.note


def test_a_stale_or_corrupt_record_is_named_and_the_run_goes_on(home: Path) -> None:
    state_path(home).write_text(json.dumps({
        "pid": 2**22 + 7, "port": 9, "home": str(home), "log": "x.log",
        "started_at": "2026-01-01T00:00:00+00:00"}))
    api = prefect_api()
    assert api.kind == "temporary" and "is gone" in api.note
    state_path(home).write_text("{")
    api = prefect_api()
    assert api.kind == "temporary" and "not a record of the hr server" in api.note


def test_a_record_whose_pid_is_no_prefect_server_is_not_used(home: Path) -> None:
    state_path(home).write_text(json.dumps({
        "pid": os.getpid(), "port": 9, "home": str(home), "log": "x.log",
        "started_at": "2026-01-01T00:00:00+00:00"}))
    api = prefect_api()  # this process is no server: its cmdline has no 'server start'
    assert api.kind == "temporary"
    assert server_status(home).status == "stale"


class _Flow:
    def serialize_parameters(self, parameters: dict[str, Any]) -> dict[str, Any]:
        return {"through": "prefect"}


def test_plain_parameters_are_stored_as_they_are_and_others_go_through_prefect() -> None:
    flow = plain_parameters(_Flow())
    plain = {"name": "x", "runs": 3, "fresh": False, "store": None, "rate": 0.5,
             "arms": {"a": {"path": "m:f", "fingerprint": "ab"}}, "pair": ("a", "b")}
    assert flow.serialize_parameters(plain) == {**plain, "pair": ["a", "b"]}
    assert flow.serialize_parameters({"path": Path("x")}) == {"through": "prefect"}
