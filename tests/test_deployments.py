"""deployments/prefect.yaml and deployments/serve.py describe the same, runnable deployments."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import pytest
import yaml
from prefect import Flow
from prefect.utilities.importtools import import_object

from deployments.serve import PREFECT_YAML, build_deployments
from hr_core.core.errors import SpecError

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load(PREFECT_YAML.read_text())
ENTRIES = {d["name"]: d for d in CONFIG["deployments"]}


def test_the_project_deploys_a_nightly_benchmark_a_manual_one_and_a_judge_validation() -> None:
    assert {n: d["entrypoint"] for n, d in ENTRIES.items()} == {
        "nightly": "flows.scheduled:hr_scheduled_benchmark",
        "benchmark": "flows.benchmark:benchmark_flow",
        "diff": "flows.diff:hr_diff",
        "compare": "flows.compare_files:compare_files_flow",
        "judge-validation": "flows.judge_validate:judge_validate_flow",
    }
    assert ENTRIES["nightly"]["schedules"] == [
        {"cron": "0 2 * * *", "timezone": "UTC", "active": True}]
    assert "schedules" not in ENTRIES["judge-validation"]
    assert "schedules" not in ENTRIES["benchmark"]
    assert "schedules" not in ENTRIES["diff"]
    assert "schedules" not in ENTRIES["compare"]
    assert {d["work_pool"]["name"] for d in ENTRIES.values()} == {"hr-process"}


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_each_entrypoint_is_a_flow_that_takes_the_parameters_given(name: str) -> None:
    entry = ENTRIES[name]
    flow = import_object(entry["entrypoint"])
    assert isinstance(flow, Flow)
    accepted = set(inspect.signature(flow.fn).parameters)
    assert set(entry["parameters"]) <= accepted


def test_the_files_the_parameters_name_exist_from_the_project_root() -> None:
    assert (ROOT / ENTRIES["nightly"]["parameters"]["spec"]).is_file()
    assert (ROOT / ENTRIES["benchmark"]["parameters"]["spec"]).is_file()
    assert (ROOT / ENTRIES["judge-validation"]["parameters"]["labelled"]).is_file()
    assert (ROOT / ENTRIES["compare"]["parameters"]["judge"]).is_file()


def test_serve_builds_the_same_deployments_with_their_schedules() -> None:
    built = {d.name: d for d in build_deployments()}
    assert set(built) == set(ENTRIES)
    nightly = built["nightly"]
    assert nightly.parameters == ENTRIES["nightly"]["parameters"]
    assert [s.schedule.cron for s in nightly.schedules] == ["0 2 * * *"]
    assert [s.schedule.timezone for s in nightly.schedules] == ["UTC"]
    assert built["judge-validation"].schedules == []


def test_serving_an_unknown_deployment_is_refused() -> None:
    with pytest.raises(SpecError, match="no deployment named weekly"):
        build_deployments(names=["weekly"])


def test_the_regression_automation_template_is_a_valid_prefect_automation() -> None:
    from prefect.events.schemas.automations import AutomationCore

    data = yaml.safe_load((ROOT / "deployments" / "automations.yaml").read_text())
    automation = AutomationCore.model_validate(data["automations"][0])
    assert getattr(automation.trigger, "expect", None) == {"hr.regression.detected"}
    assert [a.type for a in automation.actions] == ["send-notification"]


def test_prefect_deploy_runs_the_project_root_check_first() -> None:

    config = yaml.safe_load((Path(__file__).parent.parent / "deployments" / "prefect.yaml")
                            .read_text())
    assert config["build"] == [{"deployments.checks.require_project_root": {}}]


@pytest.mark.usefixtures("prefect_harness")
def test_deploying_from_another_folder_fails_naming_the_folder_to_run_it_from(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.deployments.steps.core import run_step

    from deployments.checks import PROJECT_ROOT

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit, match=f"run it from {PROJECT_ROOT}"):
        asyncio.run(run_step({"deployments.checks.require_project_root": {}}))
    monkeypatch.chdir(PROJECT_ROOT)
    assert asyncio.run(run_step({"deployments.checks.require_project_root": {}})) == {
        "project_root": str(PROJECT_ROOT)}


def test_prefect_deploy_from_another_folder_says_where_to_run_it_without_a_traceback(
        tmp_path: Path) -> None:
    """The real ``prefect deploy`` (its own temporary server in a fresh PREFECT_HOME),
    run where a new user might: one clear line naming the folder, a non-zero exit."""
    import os
    import subprocess
    import sys

    prefect = str(Path(sys.executable).with_name("prefect"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(tmp_path / "home"), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               DO_NOT_TRACK="1", PREFECT_CLI_WRAP_LINES="false", COLUMNS="250",
               # the CLI's own temporary server: Prefect waits 20 s for it by default, and
               # on a loaded 2-core machine it can take longer (a CI run failed so)
               PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="180")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([prefect, "--no-prompt", *args], cwd=elsewhere, env=env,
                              capture_output=True, text=True, timeout=400)

    pool = run("work-pool", "create", "hr-process", "--type", "process")
    assert pool.returncode == 0, pool.stdout + pool.stderr
    done = run("deploy", "--all", "--prefect-file", str(ROOT / "deployments" / "prefect.yaml"))
    shown = done.stdout + done.stderr
    assert done.returncode != 0, shown
    assert f"run it from {ROOT}" in shown, shown
    assert "Traceback" not in shown and "An exception occurred" not in shown, shown
    assert "Stopping temporary server" in shown, shown  # the CLI still cleaned up after itself
