"""The report in a real browser: headless Chromium (Debian's ``chromium``), offline.

A small probe script, placed before the report's Content-Security-Policy,
records every error and policy violation into the DOM, which ``--dump-dom``
returns; Chromium's own console log (``--enable-logging=stderr``) is read too.
``.ci/run`` installs chromium when it is missing.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from report_data import fake_inputs

from hr_core.analysis.items import ItemText
from hr_core.report import REPORT_SECTIONS, render_report

_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-extensions", "--hide-scrollbars", "--mute-audio",
)
_PROBE = """<script>
window.__hr_errors = [];
window.addEventListener("error", function (e) {
  window.__hr_errors.push("error: " + (e.message || (e.target && (e.target.src || e.target.href))));
}, true);
document.addEventListener("securitypolicyviolation", function (e) {
  window.__hr_errors.push("blocked: " + e.blockedURI);
});
window.addEventListener("load", function () {
  setTimeout(function () {
    var figures = Array.prototype.map.call(document.querySelectorAll("figure"), function (f) {
      var svg = f.querySelector("svg"), box = svg ? svg.getBoundingClientRect() : null;
      return {id: f.id, width: box ? box.width : 0, height: box ? box.height : 0};
    });
    var out = document.createElement("pre");
    out.id = "hr-probe";
    out.textContent = JSON.stringify({errors: window.__hr_errors, figures: figures,
      pwned: window.__hr_pwned || 0, script: document.body.getAttribute("data-hr-script"),
      images: document.querySelectorAll("img").length,
      searches: document.querySelectorAll("input.search").length,
      cells: Array.prototype.map.call(document.querySelectorAll("table.items td"),
        function (td) { return td.textContent; }),
      tables: document.querySelectorAll("table").length,
      sections: document.querySelectorAll("section").length});
    document.body.appendChild(out);
  }, 100);
});
</script>"""


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("chromium is not installed: `apt-get install -y chromium` (.ci/run does it)")
    return found


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    return subprocess.run(
        [_chromium(), *_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )


def _probe(tmp_path: Path, page: str) -> tuple[dict[str, object], list[str]]:
    probed = page.replace("<head>", "<head>" + _PROBE, 1)
    path = tmp_path / "probed.html"
    path.write_text(probed, encoding="utf-8")
    done = _run(tmp_path, "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000",
                "--dump-dom", path.as_uri())
    match = re.search(r'<pre id="hr-probe">(.*?)</pre>', done.stdout, re.S)
    assert match is not None, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return json.loads(match.group(1).replace("&quot;", '"').replace("&amp;", "&")), console


@pytest.fixture(scope="module")
def report_page() -> str:
    return render_report(fake_inputs())


def test_report_opens_without_errors_or_blocked_loads(tmp_path: Path, report_page: str) -> None:
    probe, console = _probe(tmp_path, report_page)
    assert probe["errors"] == []
    assert console == []
    assert probe["sections"] == len(REPORT_SECTIONS)
    assert probe["script"] == "ready"  # the report's own search script ran
    assert isinstance(probe["tables"], int) and probe["tables"] >= 6


def test_every_figure_is_drawn_with_a_size(tmp_path: Path, report_page: str) -> None:
    probe, _ = _probe(tmp_path, report_page)
    figures = probe["figures"]
    assert isinstance(figures, list)
    assert {f["id"] for f in figures} >= {"fig-accuracy", "fig-outcomes", "fig-forest",
                                          "fig-latency-cost", "fig-confusion-1", "fig-win-rate"}
    assert all(f["width"] > 100 and f["height"] > 50 for f in figures), figures


def test_the_probe_catches_a_page_that_loads_from_the_network(tmp_path: Path,
                                                             report_page: str) -> None:
    """The check above is not vacuous: a remote image is blocked and reported."""
    bad = report_page.replace("</main>", '<img src="http://example.invalid/x.png"></main>')
    probe, console = _probe(tmp_path, bad)
    assert any("example.invalid" in e for e in probe["errors"])  # type: ignore[union-attr]
    assert any("Content Security Policy" in line for line in console)


def test_screenshot_of_the_report(tmp_path: Path, report_page: str) -> None:
    page = tmp_path / "report.html"
    page.write_text(report_page, encoding="utf-8")
    shot = tmp_path / "report.png"
    done = _run(tmp_path, "--window-size=1200,2400", f"--screenshot={shot}", page.as_uri())
    assert shot.is_file(), done.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000  # a blank page is a few kB


_ATTACKS = (
    "</script><script>window.__hr_pwned = 1</script>",
    '<img src=x onerror="window.__hr_pwned = 2">',
    '"><svg onload="window.__hr_pwned = 3">',
    "</td></tr></table><script>window.__hr_pwned = 4</script>",
)


def _hostile_page(keep_csp: bool = True) -> str:
    """A report whose outputs, errors, questions, labels and an arm name are attacks."""
    inputs = fake_inputs(with_judges=False)
    runs = inputs.runs.copy()
    failed = runs["failure_kind"].notna() & (runs["failure_kind"] != "budget_stop")
    runs["output"] = runs["output"].astype(object)
    runs["error"] = runs["error"].astype(object)
    runs.loc[failed, "output"] = [_ATTACKS[i % 4] for i in range(int(failed.sum()))]
    runs.loc[failed, "error"] = [_ATTACKS[(i + 1) % 4] for i in range(int(failed.sum()))]
    runs.loc[runs["arm"] == "numbers", "output"] = _ATTACKS[0]
    items = {k: ItemText(_ATTACKS[1], _ATTACKS[2]) for k in inputs.items}
    page = render_report(type(inputs)(inputs.manifest, runs, inputs.summary, items=items))
    if not keep_csp:  # escaping alone must hold: no policy to fall back on
        page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
    return page


@pytest.mark.parametrize("keep_csp", [True, False], ids=["with-csp", "without-csp"])
def test_no_script_from_the_data_runs_in_the_browser(tmp_path: Path, keep_csp: bool) -> None:
    probe, console = _probe(tmp_path, _hostile_page(keep_csp))
    assert probe["pwned"] == 0
    assert probe["images"] == 0
    assert probe["errors"] == [] and console == []  # nothing blocked: nothing was attempted
    assert probe["script"] == "ready" and probe["searches"] >= 3
    cells = html.unescape(" ".join(probe["cells"]))  # type: ignore[arg-type]
    for attack in _ATTACKS:  # shown as text, exactly as the arm answered
        assert attack in cells, attack


def test_the_probe_sees_an_unescaped_script_run(tmp_path: Path) -> None:
    """The check above is not vacuous: the same attack pasted raw (no CSP) does run."""
    page = _hostile_page(keep_csp=False).replace(
        "</main>", "</main><img src=x onerror=\"window.__hr_pwned = 2\">")
    probe, _ = _probe(tmp_path, page)
    assert probe["pwned"] == 2


def _markdown_page(markdown: str) -> str:
    """report.md as a permissive markdown renderer makes it a page (CommonMark with tables,
    raw HTML allowed, no Content-Security-Policy): the worst a dashboard may do with it."""
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)
    return f"<!doctype html><html><head><title>md</title></head><body>{body}</body></html>"


def _hostile_markdown() -> str:
    from hr_core.analysis.benchmark import Benchmark, runs_frame
    from hr_core.report.markdown import report_markdown

    arms = [_ATTACKS[1], _ATTACKS[0], "[a](javascript:window.__hr_pwned=5)"]
    rows = [{"arm": a, "item_id": f"q{i}", "run": 1, "correct": i % 2 == 0, "output": "x"}
            for a in arms for i in range(4)]
    rows.append({"arm": arms[0], "item_id": "q9", "run": 1, "correct": None,
                 "failure_kind": "error", "error": _ATTACKS[3]})
    return report_markdown(Benchmark(runs_frame(rows), {
        "name": _ATTACKS[2], "run_id": "r1", "scorer": _ATTACKS[3], "status": "completed"}))


def test_report_md_rendered_as_html_runs_no_script_and_shows_the_names(tmp_path: Path) -> None:
    """Before: an arm named ``<img src=x onerror=...>`` was raw in report.md, and its
    rendering built the image (the Prefect UI built 5); after: no element from the data."""
    markdown = _hostile_markdown()
    probe, console = _probe(tmp_path, _markdown_page(markdown))
    assert probe["pwned"] == 0 and probe["images"] == 0
    assert probe["errors"] == [] and console == []
    shown = _probe_text(tmp_path, _markdown_page(markdown))
    for attack in _ATTACKS[:3]:
        assert attack in shown, attack


def test_the_markdown_probe_sees_a_raw_image_run(tmp_path: Path) -> None:
    """The check above is not vacuous: the same name written raw builds the image."""
    probe, _ = _probe(tmp_path, _markdown_page(f"| arm |\n|---|\n| {_ATTACKS[1]} |\n"))
    assert probe["pwned"] == 2 and probe["images"] == 1


def _probe_text(tmp_path: Path, page: str) -> str:
    """The page's text as the browser shows it (``document.body.innerText``)."""
    path = tmp_path / "text.html"
    path.write_text(page.replace("</body>", "<script>document.title = 'x';"
                                 "var p = document.createElement('pre'); p.id = 'hr-text';"
                                 "p.textContent = document.body.innerText;"
                                 "document.body.appendChild(p);</script></body>"),
                    encoding="utf-8")
    done = _run(tmp_path, "--virtual-time-budget=3000", "--dump-dom", path.as_uri())
    match = re.search(r'<pre id="hr-text">(.*?)</pre>', done.stdout, re.S)
    assert match is not None, done.stderr[-2000:]
    return " ".join(html.unescape(match.group(1)).split())
