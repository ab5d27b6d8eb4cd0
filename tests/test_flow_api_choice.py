"""Which Prefect API a flow call uses (flows.clients), and parameters stored without FastAPI
(flows.hrflow)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from prefect.settings import PREFECT_API_URL, PREFECT_HOME, temporary_settings

from flows.clients import prefect_api
from flows.hrflow import HrFlow
from hr_server.control import server_status, state_path


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


async def _flow_fn(name: str, path: Path | None = None) -> None:
    """A flow function (its parameters: name, path)."""


def test_an_hr_flow_stores_plain_parameters_as_they_are_and_others_through_prefect() -> None:
    named = HrFlow(fn=_flow_fn, name="params-probe")
    plain = {"name": "x", "runs": 3, "fresh": False, "store": None, "rate": 0.5,
             "arms": {"a": {"path": "m:f", "fingerprint": "ab"}}, "pair": ("a", "b")}
    stored = named.serialize_parameters(plain)
    assert stored == {**plain, "pair": ["a", "b"]} and list(stored) == list(plain)
    assert stored["arms"] is not plain["arms"]  # a copy, as JSON would make it
    # a Path is no JSON value: Prefect's own method (FastAPI's jsonable_encoder) makes it
    assert named.serialize_parameters({"path": Path("x"), "n": 1}) == {"path": "x", "n": 1}
    assert named.serialize_parameters({"obj": object()}) == {"obj": "<object>"}
    assert "serialize_parameters" not in vars(named)  # Prefect's Flow is left as it is


def test_storing_an_hr_flow_s_plain_parameters_imports_no_fastapi() -> None:
    """Why HrFlow exists: Prefect's own method imports FastAPI (~0.15 s of CPU)."""
    import subprocess
    import sys

    code = ("import sys; from flows.benchmark import benchmark_flow; "
            "benchmark_flow.serialize_parameters({'spec': 'a.yaml', 'runs': 2}); "
            "print('fastapi.encoders' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=Path(__file__).resolve().parents[1])
    assert done.stdout.strip() == "False", done.stderr[-2000:]
