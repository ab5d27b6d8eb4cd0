"""The quick ``hr`` commands import neither Prefect nor matplotlib (checked in a fresh process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from report_data import fake_run_dir

from hr_cli.app import app

EXAMPLES = Path(__file__).resolve().parents[1] / "hr_core" / "examples"
PROBE = """\
import json, sys
from hr_cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = ("prefect", "matplotlib", "flows", "uvicorn")
print("MODULES " + json.dumps(sorted(m for m in heavy if m in sys.modules)))
"""


def _bad_spec(tmp_path: Path) -> Path:
    spec = tmp_path / "bad.yaml"
    spec.write_text("name: bad\nreference: ref.jsonl\narms: {a: m:f}\nrunz: 2\n", "utf-8")
    (tmp_path / "ref.jsonl").write_text('{"id": "1", "label": "x"}\n', "utf-8")
    return spec


def _commands(run_dir: Path, tmp_path: Path) -> dict[str, list[str]]:
    names = {c.name for c in app.registered_commands}
    commands = {
        "help": ["--help"],
        "summary": ["summary", str(run_dir)],
        "judge check": ["judge", "check", str(EXAMPLES / "grade_judge.yaml"), "--store",
                        str(tmp_path / "judges")],
        "server status": ["server", "status"],
        "label sample": ["label", "sample", str(run_dir), "--n", "2", "--seed", "1"],
        "run a bad spec": ["run", str(_bad_spec(tmp_path))],  # refused before Prefect
    }
    if "show" in names:  # `hr show` (visibility) once it is there
        commands["show"] = ["show", str(run_dir)]
    return commands


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fake_run_dir(tmp_path_factory.mktemp("imports") / "run")


@pytest.mark.parametrize("command", ["help", "summary", "judge check", "server status", "show",
                                     "label sample", "run a bad spec"])
def test_quick_commands_import_neither_prefect_nor_matplotlib(
    command: str, run_dir: Path, tmp_path: Path,
) -> None:
    args = _commands(run_dir, tmp_path).get(command)
    if args is None:
        assert command == "show" and "show" not in {c.name for c in app.registered_commands}
        return
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True,
                          timeout=120, check=False, cwd=tmp_path,
                          env={"PATH": "/usr/bin:/bin", "PREFECT_HOME": str(tmp_path / "h"),
                               "HOME": str(tmp_path)})
    line = [x for x in done.stdout.splitlines() if x.startswith("MODULES ")]
    assert line, done.stdout + done.stderr
    assert json.loads(line[-1].removeprefix("MODULES ")) == [], done.stdout + done.stderr
    if command in ("summary", "show"):
        assert "keyword" in done.stdout, done.stdout + done.stderr  # the command did its work
    if command == "label sample":
        assert "Labelling sheet" in done.stdout, done.stdout + done.stderr
    if command == "run a bad spec":
        assert "runz" in done.stderr, done.stdout + done.stderr  # the one line naming it


FLOWS_PROBE = """\
import gc, json, sys
import flows
before = sorted(m for m in sys.modules if m.startswith("flows."))
frozen = gc.get_freeze_count()
from flows import hr_compare, hr_judge_validate, hr_scheduled_benchmark
import flows.compare
print("FLOWS " + json.dumps({"before": before, "frozen": frozen,
                             "same": flows.compare.hr_compare is hr_compare,
                             "after": sorted(m for m in sys.modules if m.startswith("flows."))}))
"""


def test_flows_imports_the_other_flows_on_first_use(tmp_path: Path) -> None:
    """``hr run`` and ``hr_benchmark`` import only the benchmark flow (each flow and task
    defined costs its parameter schema); the others import when first named."""
    done = subprocess.run([sys.executable, "-c", FLOWS_PROBE], capture_output=True, text=True,
                          timeout=120, check=False, cwd=tmp_path,
                          env={"PATH": "/usr/bin:/bin", "PREFECT_HOME": str(tmp_path / "h"),
                               "HOME": str(tmp_path)})
    line = [x for x in done.stdout.splitlines() if x.startswith("FLOWS ")]
    assert line, done.stdout + done.stderr
    seen = json.loads(line[-1].removeprefix("FLOWS "))
    assert not {"flows.compare", "flows.judge_validate", "flows.scheduled"} & set(seen["before"])
    assert "flows.benchmark" in seen["before"]
    assert seen["frozen"] == 0  # importing freezes nothing (issue 21); an hr command does
    assert seen["same"]
    assert {"flows.compare", "flows.judge_validate", "flows.scheduled"} <= set(seen["after"])
