"""Importing hr's packages changes no global state (environment, GC, allocators); an
``hr`` command makes its process-wide choices where it starts (issue 21)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_CHECK = """
import gc, importlib, json, os, sys
import pyarrow as pa

def state():
    pool = pa.default_memory_pool().backend_name
    return dict(os.environ), gc.get_freeze_count(), pool, gc.isenabled()

env, frozen, pool, collecting = state()
for name in sys.argv[1:]:
    importlib.import_module(name) if name != "START" else None
if sys.argv[1:] == ["hr_server.gcpause", "START"]:
    pass
env2, frozen2, pool2, collecting2 = state()
print(json.dumps({"env": sorted(k for k in set(env) | set(env2) if env.get(k) != env2.get(k)),
                  "frozen": [frozen, frozen2], "pool": [pool, pool2],
                  "gc": [collecting, collecting2]}))
"""


def _run(code: str, *args: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("ARROW_DEFAULT_MEMORY_POOL", "PREFECT_API_URL")}
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env=env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("modules", [
    ["hr_core"], ["flows"], ["tasks", "hr_cli", "hr_cli.app", "hr_cli.commands"],
], ids=["hr_core", "flows", "tasks-and-cli"])
def test_importing_a_package_changes_no_environment_gc_or_allocator(modules: list[str]) -> None:
    # before: importing flows set PREFECT_SERVER_ANALYTICS_ENABLED and DO_NOT_TRACK and
    # froze ~1M objects; importing hr_core made Arrow's pool the system allocator
    seen = _run(_CHECK, *modules)
    assert seen["env"] == []
    assert seen["frozen"][1] == seen["frozen"][0]
    assert seen["pool"][1] == seen["pool"][0] != "system"
    assert seen["gc"] == [True, True]


def test_a_command_makes_its_choices_where_it_starts() -> None:
    code = _CHECK.replace("pass", "from hr_server.gcpause import command_module\n"
                                  "    command_module('hr_cli.commands')")
    seen = _run(code, "hr_server.gcpause", "START")
    assert seen["pool"][1] == "system" and seen["frozen"][1] > seen["frozen"][0]
    assert seen["gc"] == [True, True]
