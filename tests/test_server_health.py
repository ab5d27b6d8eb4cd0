"""``hr server status`` on a server that answers but does not work (issue 30, item 3).

The log sample (tests/fixtures/hr-server-scheduler-failing.log) is what Prefect 3.9.0's
server wrote with SQLAlchemy 2.1.9 (its scheduler failing every loop; only the venv's
path is changed); the server tests run a real ``hr server start``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hr_server_support import HrServer, wait_until

from hr_server.health import log_problem, service_errors

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = Path(__file__).with_name("fixtures") / "hr-server-scheduler-failing.log"
ERROR = ("sqlalchemy.exc.InvalidRequestError: Can't evaluate bulk DML statement; please "
         "supply a bulk_dml decorated function")


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sample's times of day are the server's local time: UTC."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


def test_two_errors_of_the_scheduler_within_five_minutes_are_named_with_the_error() -> None:
    lines = SAMPLE.read_text().splitlines()
    soon = datetime(2026, 12, 2, 5, 46, tzinfo=UTC)
    found = service_errors(lines, soon)
    # schedule_deployments failed twice; schedule_recent_deployments once: not yet a problem
    assert [(e.service, e.count, e.error) for e in found] == [
        ("schedule_deployments", 2, ERROR)]
    assert found[0].last == datetime(2026, 12, 2, 5, 44, 39, tzinfo=UTC)
    line = found[0].describe()
    assert line.startswith("the server's schedule_deployments service failed 2 times in the "
                           "last 5 minutes: ") and "\n" not in line
    # older than five minutes: the server may have recovered since
    assert service_errors(lines, soon + timedelta(minutes=4)) == []


def test_the_log_of_a_working_server_and_errors_of_other_loggers_are_no_problem(
        tmp_path: Path) -> None:
    log = tmp_path / "hr-server.log"
    lines = ["--- hr server start 2026-12-02T05:00:00+00:00 port 4200",
             "05:00:05.000 | INFO    | prefect.server.services.scheduler - Scheduled 3 runs.",
             "05:01:00.000 | ERROR   | prefect.server.utilities.worker_channel - "
             "Worker channel heartbeat persistence failed",
             "05:02:00.000 | ERROR   | prefect.server.utilities.worker_channel - "
             "Worker channel heartbeat persistence failed"]
    log.write_text("\n".join(lines) + "\n")
    assert log_problem(log, now=datetime(2026, 12, 2, 5, 3, tzinfo=UTC)) is None
    assert log_problem(tmp_path / "missing.log") is None


def test_times_after_midnight_count_on_the_next_day() -> None:
    lines = ["--- hr server start 2026-12-01T23:58:00+00:00 port 4200",
             "23:59:30.000 | ERROR   | docket.dependencies - ↩ [ 1ms] schedule_deployments(){x}",
             "00:00:30.000 | ERROR   | docket.dependencies - ↩ [ 1ms] schedule_deployments(){x}"]
    found = service_errors(lines, datetime(2026, 12, 2, 0, 1, tzinfo=UTC))
    assert [(e.service, e.count) for e in found] == [("schedule_deployments", 2)]


def _stamped_now(text: str) -> str:
    """The sample's error blocks (not its start line) with this minute's times of day."""
    now = datetime.now().strftime("%H:%M:%S")
    body = text.split("\n", 2)[2]
    return re.sub(r"^\d\d:\d\d:\d\d", now, body, flags=re.MULTILINE)


@pytest.fixture(scope="module")
def idle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HrServer]:
    """An hr server whose scheduler is off (so schedules make no runs), its loop 1 s."""
    root = tmp_path_factory.mktemp("health")
    env = {"PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": "false",
           "PREFECT_SERVER_SERVICES_SCHEDULER_LOOP_SECONDS": "1"}
    with HrServer(root / "prefect-home", ROOT, server_env=env) as srv:
        yield srv


def test_status_exits_1_for_a_schedule_without_runs_and_then_for_a_failing_service(
        idle: HrServer) -> None:
    """Before: ``hr server status`` exited 0 ("hr server running") in both cases."""
    fine = idle.hr("server", "status")
    assert fine.returncode == 0, fine.stdout + fine.stderr
    assert "hr server running" in fine.stdout

    flow = idle.api("POST", "/flows/", json={"name": "health-check"})
    idle.api("POST", "/deployments/", json={
        "name": "every-minute", "flow_id": flow["id"],
        "schedules": [{"schedule": {"interval": 60}, "active": True}]})
    # after the scheduler's loop (1 s) and the grace (10 s): no upcoming run is a problem
    told = wait_until(lambda: (r := idle.hr("server", "status")).returncode == 1 and r,
                      timeout=90, every=2)
    assert told, "status never reported the schedule without runs"
    shown = told.stdout.strip().splitlines()
    assert shown[0].startswith("hr server running")
    problems = [line for line in shown if line.startswith("hr server: ")]
    assert len(problems) == 1 and problems[0] == shown[-1], told.stdout
    assert problems[0].startswith("hr server: deployment 'every-minute' has an active "
                                  "schedule but no upcoming run"), told.stdout
    assert "Traceback" not in told.stdout + told.stderr

    with idle.log_file.open("a") as log:  # what a failing scheduler writes, at this minute
        log.write(_stamped_now(SAMPLE.read_text()))
    failing = idle.hr("server", "status")
    assert failing.returncode == 1, failing.stdout + failing.stderr
    last = failing.stdout.strip().splitlines()[-1]
    assert last.startswith("hr server: the server's schedule_deployments service failed 2 "
                           "times in the last 5 minutes: " + ERROR), failing.stdout
