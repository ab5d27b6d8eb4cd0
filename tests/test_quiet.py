"""Prefect's telemetry heartbeat is off in hr's processes unless the user chose it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

_PROBE = ("import flows\nfrom prefect.settings import PREFECT_SERVER_ANALYTICS_ENABLED as A\n"
          "print(A.value())\n")


def _analytics(tmp_path: Path, **env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    clean.update(PREFECT_HOME=str(tmp_path / "home"), **env)
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                          env=clean, cwd=tmp_path, check=True, timeout=120)
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("env, profile, toml, expected", [
    ({}, None, None, "False"),                                              # hr's default
    ({"PREFECT_SERVER_ANALYTICS_ENABLED": "true"}, None, None, "True"),    # environment
    ({}, "PREFECT_SERVER_ANALYTICS_ENABLED = 'true'", None, "True"),        # active profile
    ({}, None, "[server]\nanalytics_enabled = true\n", "True"),             # prefect.toml
], ids=["default-off", "env-wins", "profile-wins", "prefect-toml-wins"])
def test_analytics_are_off_unless_the_user_set_them(tmp_path: Path, env: dict[str, str],
                                                   profile: str | None, toml: str | None,
                                                   expected: str) -> None:
    (tmp_path / "home").mkdir()
    if profile is not None:
        (tmp_path / "home" / "profiles.toml").write_text(
            f"active = 'mine'\n\n[profiles.mine]\n{profile}\n")
    if toml is not None:
        (tmp_path / "prefect.toml").write_text(toml)
    assert _analytics(tmp_path, **env) == expected


_BANNER = "anonymous usage data"


def _in_a_terminal(tmp_path: Path, code: str, **env: str) -> str:
    """Run ``code`` as a new user would, in a terminal (Prefect shows its usage-data
    banner only on a TTY, once per PREFECT_HOME): returns what the terminal showed."""
    import pty

    clean = {k: v for k, v in os.environ.items()
             if not k.startswith("PREFECT_") and k not in ("DO_NOT_TRACK", "CI")}
    clean.update(PREFECT_HOME=str(tmp_path / "home"), **env)
    pid, fd = pty.fork()
    if pid == 0:  # the child: never returns
        os.chdir(tmp_path)
        os.execve(sys.executable, [sys.executable, "-c", code], clean)
    shown = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    text = shown.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, text
    return text


@pytest.mark.parametrize("code", [
    "import flows; print('imported')",                               # hr_benchmark from Python
    "from hr_server.control import prepare_prefect\nprepare_prefect()\n"
    "import prefect; print('imported')",                             # the hr CLI
], ids=["flows", "hr-cli"])
def test_no_usage_data_banner_in_hrs_processes(tmp_path: Path, code: str) -> None:
    shown = _in_a_terminal(tmp_path, code)
    assert "imported" in shown
    assert _BANNER not in shown, shown


@pytest.mark.parametrize("env", [
    {"PREFECT_SERVER_ANALYTICS_ENABLED": "true"}, {"DO_NOT_TRACK": "0"},
], ids=["analytics-on", "do-not-track-0"])
def test_a_user_who_chose_telemetry_keeps_prefects_banner(tmp_path: Path,
                                                          env: dict[str, str]) -> None:
    shown = _in_a_terminal(tmp_path, "import flows; print('imported')", **env)
    assert _BANNER in shown, shown
