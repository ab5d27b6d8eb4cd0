"""Running the ``hr`` command line inside the test process."""

from __future__ import annotations

from pathlib import Path

import pytest

from hr_cli import main


def hr(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """Run ``hr ARGS`` in this process; returns (exit code, stdout, stderr)."""
    code = 0
    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err
