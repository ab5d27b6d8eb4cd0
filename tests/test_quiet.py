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
