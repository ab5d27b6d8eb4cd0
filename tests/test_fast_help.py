"""``hr --help`` from stored pages (``hr_cli._fast_help``): the full app's, byte for byte.

The pages are rendered again here by the full typer app (in a fresh process,
colours and plain) and compared with ``hr_cli._help_pages``: a changed command,
option or help text fails until ``python -m hr_cli._help_build`` is run. The
``hr`` command answering from them imports neither typer, rich nor hr_core.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hr_cli import click_command
from hr_cli._fast_help import WIDTH, _colours, answer, plain
from hr_cli._help_build import command_lines
from hr_cli._help_pages import PAGES
from hr_cli.app import app

HR = str(Path(sys.executable).with_name("hr"))
HEAVY = ("typer", "rich", "click", "hr_core", "pandas", "pyarrow", "prefect", "pydantic",
         "yaml", "flows", "numpy")
REBUILD = "run `python -m hr_cli._help_build` after changing a command or its help"


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("COLUMNS", "NO_COLOR", "FORCE_COLOR", "PY_COLORS", "GITHUB_ACTIONS",
                        "TTY_COMPATIBLE", "TTY_INTERACTIVE", "TERMINAL_WIDTH", "HR_FULL_HELP",
                        "_TYPER_FORCE_DISABLE_TERMINAL", "JUPYTER_COLUMNS")}
    env.update(PYTHONIOENCODING="utf-8", **extra)
    return env


def _rendered(*flags: str) -> dict[str, list[Any]]:
    done = subprocess.run([sys.executable, "-m", "hr_cli._help_build", "--print", *flags],
                          capture_output=True, text=True, timeout=180, check=False,
                          env=_clean_env())
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_stored_pages_are_what_the_full_app_prints_now() -> None:
    stored = {key: [page, status] for key, (page, status) in PAGES.items()}
    assert _rendered() == stored, REBUILD
    assert _rendered("--plain") == {key: [plain(page), status]
                                    for key, (page, status) in PAGES.items()}, REBUILD
    # only the 8 standard colours and attributes: the same escapes in every colour system
    codes = {code for page, _ in PAGES.values()
             for group in re.findall(r"\x1b\[([0-9;]*)m", page) for code in group.split(";")}
    assert codes <= {"", "0", "1", "2", "3", "4", "22", "23", "24", "39",
                     *map(str, range(30, 38)), *map(str, range(90, 98))}, codes


def test_every_command_and_option_of_the_full_app_is_in_its_page() -> None:
    root = click_command(app)
    lines = command_lines(root)
    assert {" ".join(argv) for argv in lines} == set(PAGES), REBUILD
    assert {"--help", "run --help", "judge validate --help", "server start --help", ""} <= set(
        PAGES)
    for argv in lines:
        if argv[-1:] != ["--help"]:
            continue
        command = root
        for word in argv[:-1]:
            command = command.commands[word]
        text = plain(PAGES[" ".join(argv)][0])
        for name in getattr(command, "commands", {}):
            assert name in text, (argv, name)
        for param in command.params:
            if getattr(param, "hidden", False):
                continue
            names = ([param.name] if param.param_type_name == "argument"
                     else [*param.opts, *param.secondary_opts])
            for name in names:
                assert name.lower() in text.lower(), (argv, name)


class _Stream(io.StringIO):
    def __init__(self, tty: bool, encoding: str = "utf-8") -> None:
        super().__init__()
        self.tty, self._encoding = tty, encoding

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._encoding

    def isatty(self) -> bool:
        return self.tty


def test_pages_only_where_they_are_what_the_full_app_would_show(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_COLOR", "FORCE_COLOR", "PY_COLORS", "GITHUB_ACTIONS", "TTY_COMPATIBLE",
                 "TTY_INTERACTIVE", "TERMINAL_WIDTH", "HR_FULL_HELP"):
        monkeypatch.delenv(name, raising=False)
    assert _colours(_Stream(False), {}) is False
    assert _colours(_Stream(False), {"COLUMNS": "200"}) is False  # wider: the 80-column page
    assert _colours(_Stream(False), {"COLUMNS": "60"}) is None  # narrower: the full app
    assert _colours(_Stream(False, "ascii"), {}) is None
    assert _colours(_Stream(True), {"TERM": "xterm", "COLUMNS": "100"}) is True
    assert _colours(_Stream(True), {"TERM": "dumb", "COLUMNS": "100"}) is None
    assert _colours(_Stream(True), {"TERM": "xterm"}) is None  # no size to be found: full app
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "HR_FULL_HELP"):
        assert _colours(_Stream(False), {name: "1"}) is None, name
    monkeypatch.delenv("COLUMNS", raising=False)
    out = _Stream(False)
    assert answer(["run", "--help"], out) == 0
    assert out.getvalue() == plain(PAGES["run --help"][0]) and "\x1b[" not in out.getvalue()
    out = _Stream(False)
    assert answer([], out) == 2 and "Usage: hr" in out.getvalue()  # `hr` alone: help, exit 2
    assert answer(["run", "spec.yaml"], out) is None
    assert answer(["run", "spec.yaml", "--help"], out) is None  # left to click
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setenv("TERM", "xterm-256color")
    coloured = _Stream(True)
    assert answer(["--help"], coloured) == 0
    assert coloured.getvalue() == PAGES["--help"][0] and "\x1b[" in coloured.getvalue()


def _imports(args: list[str], **extra: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    done = subprocess.run([HR, *args], capture_output=True, text=True, timeout=180, check=False,
                          env=_clean_env(PYTHONPROFILEIMPORTTIME="1", **extra))
    modules = {line.rsplit("|", 1)[-1].strip().split(".")[0]
               for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "hr_cli" in modules, done.stderr[-2000:]
    return done, modules


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["judge", "validate", "--help"],
                                  ["judge"]])
def test_hr_help_imports_no_typer_rich_pandas_prefect(args: list[str]) -> None:
    done, modules = _imports(args)
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))
    page, status = PAGES[" ".join(args)]
    assert done.returncode == status and done.stdout == plain(page), done.stderr[-2000:]


def test_a_narrow_terminal_gets_the_full_apps_help() -> None:
    done, modules = _imports(["run", "--help"], COLUMNS="60")
    assert done.returncode == 0 and "--fresh" in done.stdout, done.stderr[-2000:]
    assert "typer" in modules
    assert max(map(len, done.stdout.splitlines())) <= 60 < WIDTH
