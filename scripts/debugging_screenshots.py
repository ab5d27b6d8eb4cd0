"""Make docs/debugging.md's pictures of a run with a typo: the report's verdict and summary
(docs/screenshots/report-verdict.png), its failed runs (report-failed-items.png), the
terminal of ``hr run`` (hr-run-terminal.txt) and, with ``--dashboard``, the report
artifact in the Prefect dashboard (dashboard-report-artifact.png).

In a temporary folder, through the ``hr`` command line as a user types it: ``hr run`` of
the bundled demo's document-QA items with three of its arms and a ``reader`` whose code
reads ``payload["questoin"]`` (2 runs per item, the demo's per-arm cost budget; exit
status 3), ``hr judge validate`` of the demo's grade judge attached to the run, ``hr
compare`` of the two best arms with its pairwise judge, ``hr report``; then headless
Chromium photographs report.html (:func:`diff_screenshot.screenshot`): its top, and a copy
showing only "Failed runs by arm". The terminal's text is kept as ``hr run`` printed it at
135 columns, the temporary folder's path written as ``/tmp/hr-debugging``.

``--dashboard`` also starts a Prefect server of its own (``prefect server start`` on a
free port of 127.0.0.1, its own PREFECT_HOME in the temporary folder), runs the same spec
against it, photographs the ``docqa-typo-report`` artifact's page (Chromium given 15 s of
virtual time for the dashboard's scripts) and stops the server.

    .venv/bin/python scripts/debugging_screenshots.py [--out docs/screenshots] [--dashboard]
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from diff_screenshot import CHROMIUM_FLAGS, screenshot  # noqa: E402  (this script's folder)

EXAMPLES = ROOT / "hr_core" / "examples"
TYPO_ARM = '''"""The reader of docs/debugging.md's run: a typo in its code fails every item."""


def reader(payload):
    return payload["questoin"]
'''
SPEC = f"""name: docqa-typo
reference: {EXAMPLES / "docqa_reference.jsonl"}
arms:
  keyword_overlap: hr_core.examples.demo_arms:keyword_overlap
  number_extractor: hr_core.examples.demo_arms:number_extractor
  cautious_llm: hr_core.examples.demo_arms:cautious_llm
  reader: typo_arms:reader
scorer: exact
runs: 2
concurrency: 8
budget:
  max_cost_usd: 0.05
  per: arm
"""
FAILURES_ONLY = ("<style>nav, section {display: none} section#failures {display: block}"
                 "</style>")


def _hr(work: Path, *args: str | Path, expect: int = 0, **env_vars: str) -> str:
    """``hr ARGS`` in ``work`` (this checkout's code, 135 columns): its output."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "135", **env_vars}
    command = "import sys; from hr_cli import main; main(sys.argv[1:])"
    done = subprocess.run([sys.executable, "-c", command, *map(str, args)], cwd=work,
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=600, check=False)
    if done.returncode != expect:
        raise SystemExit(f"hr {' '.join(map(str, args))}: exit {done.returncode}, not "
                         f"{expect}:\n{done.stdout[-2000:]}")
    return done.stdout


def make_run(work: Path) -> tuple[Path, str]:
    """The typo run with its judge validation and comparison: (report.html, terminal)."""
    (work / "typo_arms.py").write_text(TYPO_ARM, encoding="utf-8")
    (work / "docqa-typo.yaml").write_text(SPEC, encoding="utf-8")
    terminal = _hr(work, "run", "docqa-typo.yaml", "--store", work / "results", expect=3)
    run_dir = next((work / "results" / "docqa-typo").iterdir())
    _hr(work, "judge", "validate", EXAMPLES / "grade_judge.yaml",
        EXAMPLES / "grade_judge_labels.jsonl", "--store", work / "judges", "--attach", run_dir)
    _hr(work, "compare", run_dir, "--judge", EXAMPLES / "pairwise_judge.yaml",
        "--arms", "keyword_overlap", "--arms", "cautious_llm")
    _hr(work, "report", run_dir)
    return run_dir / "report.html", terminal.replace(str(work), "/tmp/hr-debugging")


def dashboard_shot(work: Path, out: Path) -> None:
    """The typo run against a Prefect server started here; its report artifact's page."""
    sys.path.insert(0, str(ROOT))
    from hr_server.ports import free_port

    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    home = work / "prefect-home"
    home.mkdir()
    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "DO_NOT_TRACK": "1", "PREFECT_UI_API_URL": api}
    prefect = Path(sys.executable).with_name("prefect")
    with (work / "server.log").open("w") as log:
        server = subprocess.Popen([str(prefect), "server", "start", "--host", "127.0.0.1",
                                   "--port", str(port)], env=env, stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{api}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit(f"the Prefect server did not answer: see {work}/server.log")
            time.sleep(0.5)
        dash = work / "dashboard"
        dash.mkdir()
        (dash / "typo_arms.py").write_text(TYPO_ARM, encoding="utf-8")
        (dash / "docqa-typo.yaml").write_text(SPEC, encoding="utf-8")
        _hr(dash, "run", "docqa-typo.yaml", "--store", dash / "results", expect=3,
            PREFECT_API_URL=api, PREFECT_HOME=str(home))
        found = httpx.post(f"{api}/artifacts/filter", timeout=30, json={
            "artifacts": {"key": {"any_": ["docqa-typo-report"]}}, "limit": 1}).json()
        chromium = shutil.which("chromium") or "/usr/bin/chromium"
        shot = work / "artifact.png"
        subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={work / 'profile2'}",
                        "--window-size=1400,3700", "--virtual-time-budget=15000",
                        f"--screenshot={shot}",
                        f"http://127.0.0.1:{port}/artifacts/artifact/{found[0]['id']}"],
                       capture_output=True, timeout=180, check=False)
        if not shot.is_file():
            raise SystemExit("chromium made no screenshot of the artifact page")
        shutil.copy(shot, out)
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # the server this function started, and its children
        server.wait(timeout=60)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs/screenshots")
    parser.add_argument("--dashboard", action="store_true",
                        help="also the report artifact in a Prefect server started here")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hr-debugging-shot-") as folder:
        work = Path(folder)
        report, terminal = make_run(work)
        html = report.read_text(encoding="utf-8")
        if "</head>" not in html or 'id="failures"' not in html:
            raise SystemExit("report.html has no </head> or failures section: update this "
                             "script")
        failures = work / "failures.html"
        failures.write_text(html.replace("</head>", FAILURES_ONLY + "</head>", 1),
                            encoding="utf-8")
        made = [(report, options.out / "report-verdict.png", 2300),
                (failures, options.out / "report-failed-items.png", 2200)]
        for page, out, height in made:
            screenshot(page, out, 1280, height, work)
        text = options.out / "hr-run-terminal.txt"
        text.write_text("\n".join(line.rstrip() for line in terminal.splitlines()) + "\n",
                        encoding="utf-8")
        written = [*(out for _, out, _ in made), text]
        if options.dashboard:
            written.append(options.out / "dashboard-report-artifact.png")
            dashboard_shot(work, written[-1])
    for path in written:
        print(f"{path} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main(sys.argv[1:])
