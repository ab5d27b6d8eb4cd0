"""docs/operations.md, section 1, is one path that works: its commands, run as written, in order.

Every line of the section's ``bash`` blocks runs as a real process from the project root,
with its own ``PREFECT_HOME`` and the venv's commands first on ``PATH``; only the port
4200 is replaced by a free one. ``export`` lines set the environment of the lines after
them; the worker is started in the background (as in its own terminal) and stopped by
its process group, as Ctrl-C would. The runs the nightly makes in the project's
``results/`` folder are removed afterwards (only those).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from e2e_support import free_port, stop_group
from server_support import gone

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "operations.md"
BIN = Path(sys.executable).parent
BACKGROUND = ("prefect worker start", "python -m deployments.serve")


def documented_commands() -> list[str]:
    """The command lines of section 1's ``bash`` blocks, in order."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("\n## 1. "):text.index("\n## 2. ")]
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", section, flags=re.DOTALL):
        commands += [line.split("  #")[0].strip() for line in block.splitlines()
                     if line.strip() and not line.lstrip().startswith("#")]
    return commands


def test_the_path_starts_from_hr_server_and_never_starts_another_server() -> None:
    commands = documented_commands()
    assert commands[0].startswith("hr server start")
    assert commands[-1] == "hr server stop"
    assert not any(c.startswith("prefect server start") for c in commands)
    assert any(c.startswith("prefect worker start") for c in commands)
    assert any(c.startswith("prefect deployment run") for c in commands)


def _new_runs(before: set[Path]) -> list[Path]:
    return sorted(set((ROOT / "results" / "docqa-demo").glob("*")) - before)


def test_the_documented_commands_run_in_order_to_a_nightly_run_and_its_artifact(
        tmp_path: Path) -> None:
    port = str(free_port())
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(tmp_path / "prefect-home"), PATH=f"{BIN}{os.pathsep}"
               f"{env.get('PATH', '')}", PREFECT_CLI_WRAP_LINES="false", COLUMNS="250",
               PREFECT_WORKER_QUERY_SECONDS="2")  # the worker's poll: only quicker
    before = set((ROOT / "results" / "docqa-demo").glob("*"))
    folders = [f for f in (ROOT / "results", ROOT / "results" / "docqa-demo") if not f.exists()]
    background: list[subprocess.Popen[Any]] = []
    outputs: dict[str, str] = {}
    try:
        for command in documented_commands():
            line = command.replace("4200", port)
            if line.startswith("export "):
                name, _, value = line.removeprefix("export ").partition("=")
                env[name] = value
                continue
            args = shlex.split(line)
            if line.startswith(BACKGROUND):
                log = (tmp_path / f"background-{len(background)}.log").open("wb")
                background.append(subprocess.Popen(
                    args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True))
                continue
            if line == "hr server stop":
                for proc in background:  # Ctrl-C in the worker's terminal first
                    stop_group(proc)
            done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True,
                                  timeout=400, check=False)
            shown = done.stdout + done.stderr
            assert done.returncode == 0, f"{line} exited {done.returncode}:\n{shown}"
            assert "Traceback" not in shown, shown
            outputs[line.split(" --")[0]] = shown
        state = outputs  # first words of each command line -> its output
        ran = [k for k in state if k.startswith("prefect deployment run")]
        assert ran and "Completed" in state[ran[0]], state[ran[0]] if ran else state
        scheduled = next(v for k, v in state.items() if k.startswith("prefect flow-run ls"))
        assert "SCHEDULED" in scheduled.upper(), scheduled
        artifact = next(v for k, v in state.items() if k.startswith("prefect artifact"))
        assert "Regression check: docqa-demo" in artifact, artifact
        made = _new_runs(before)
        assert len(made) == 1, made
        manifest = json.loads((made[0] / "manifest.json").read_text())
        assert manifest["status"] == "completed"
        home = Path(env["PREFECT_HOME"])
        assert not (home / "hr-server.json").exists()  # hr server stop ran last
    finally:
        for proc in background:
            stop_group(proc)
        with contextlib.suppress(FileNotFoundError, ValueError, KeyError):
            record = json.loads((Path(env["PREFECT_HOME"]) / "hr-server.json").read_text())
            with contextlib.suppress(ProcessLookupError):
                os.killpg(int(record["pid"]), signal.SIGKILL)
            assert gone(int(record["pid"]))
        for folder in _new_runs(before):
            shutil.rmtree(folder, ignore_errors=True)
        for folder in reversed(folders):  # made by this test, and empty now
            with contextlib.suppress(OSError):
                folder.rmdir()
