"""The diff page (``hr diff A B -o diff.html``) in headless Chromium: offline, escaped,
its filter boxes working (the probe of the report's browser test)."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest
from test_diff import ITEMS, _run, all_right
from test_report_browser import _ATTACKS, _probe
from test_report_browser import _run as _chromium_run

from hr_core import diff_runs
from hr_core.report.diff_html import DIFF_SECTIONS, render_diff


def hostile(payload: dict[str, Any]) -> str:
    """Right below item 10, then each of the report's attacks as an answer."""
    n = int(payload["question"][1:])
    return f"a{n}" if n < 10 else _ATTACKS[n % 4]


@pytest.fixture(scope="module")
def diff_page(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("diff")
    before = _run(root / "a", {"x": all_right}, ITEMS)
    after = _run(root / "b", {"x": hostile}, ITEMS)
    return render_diff(diff_runs(before.run_dir, after.run_dir))


@pytest.mark.parametrize("keep_csp", [True, False], ids=["with-csp", "without-csp"])
def test_the_diff_page_opens_offline_and_runs_no_script_from_the_data(
        tmp_path: Path, diff_page: str, keep_csp: bool) -> None:
    page = diff_page if keep_csp else re.sub(
        r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", diff_page)
    probe, console = _probe(tmp_path, page)
    assert probe["pwned"] == 0 and probe["images"] == 0
    assert probe["errors"] == [] and console == []
    assert probe["sections"] == len(DIFF_SECTIONS)
    assert probe["script"] == "ready" and probe["searches"] == 1  # the flips' filter box
    cells = html.unescape(" ".join(probe["cells"]))  # type: ignore[arg-type]
    for attack in _ATTACKS:  # shown as text, exactly as the arm answered
        assert attack in cells, attack
    assert "right→wrong" in cells


def test_screenshot_of_the_diff_page(tmp_path: Path, diff_page: str) -> None:
    page = tmp_path / "diff.html"
    page.write_text(diff_page, encoding="utf-8")
    shot = tmp_path / "diff.png"
    done = _chromium_run(tmp_path, "--window-size=1200,1600", f"--screenshot={shot}",
                         page.as_uri())
    assert shot.is_file(), done.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
