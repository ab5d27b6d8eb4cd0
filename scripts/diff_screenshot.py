"""Make README's screenshot of the diff page: docs/screenshots/diff-page.png.

Runs the quickstart spec (hr_core/examples/quickstart.yaml: a Python arm and the offline
``mock:reader`` LLM arm on the bundled document-QA items) twice, the second time with the
reader's prompt without its document, in a temporary folder; writes ``hr diff``'s page of
the two runs; and photographs it with headless Chromium, started as the browser tests
start it (tests/test_report_browser.py). Offline: nothing is fetched.

    .venv/bin/python scripts/diff_screenshot.py [--out docs/screenshots/diff-page.png]
        [--width 1280] [--height 1400]

Needs ``/usr/bin/chromium`` (``apt-get install -y chromium``). With ``pngquant`` on the
PATH the PNG is quantised (about a third of the size); without, it is kept as Chromium
wrote it.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "hr_core" / "examples"
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-extensions", "--hide-scrollbars", "--mute-audio",
)
THEN_PROMPT = 'prompt: "Document: {document}\\nQuestion: {question}\\nAnswer briefly."'
NOW_PROMPT = 'prompt: "Question: {question}\\nAnswer briefly."'


def _run(folder: Path, spec_text: str) -> str:
    """One run of ``spec_text`` (next to a copy of the reference items); its folder."""
    from flows.benchmark import plan_from_spec
    from hr_core.run.session import BenchmarkSession

    folder.mkdir(parents=True)
    shutil.copy(EXAMPLES / "docqa_reference.jsonl", folder / "docqa_reference.jsonl")
    (folder / "spec.yaml").write_text(spec_text, encoding="utf-8")
    plan = plan_from_spec(folder / "spec.yaml", store=str(folder / "results"), name="docqa",
                          fresh=True)
    bench = BenchmarkSession(plan).run_sync()
    return str(bench.run_dir)


def make_page(work: Path) -> Path:
    """The diff page of the quickstart run then and with the prompt change now."""
    from hr_core import diff_runs
    from hr_core.report.diff_html import write_diff_html

    spec = (EXAMPLES / "quickstart.yaml").read_text(encoding="utf-8")
    if THEN_PROMPT not in spec:
        raise SystemExit(f"quickstart.yaml has no line {THEN_PROMPT!r}: update this script")
    then = _run(work / "then", spec)
    now = _run(work / "now", spec.replace(THEN_PROMPT, NOW_PROMPT))
    page = work / "diff.html"
    write_diff_html(diff_runs(then, now), page)
    return page


def screenshot(page: Path, out: Path, width: int, height: int, work: Path) -> None:
    """``page`` photographed by headless Chromium at ``width`` x ``height`` into ``out``."""
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    shot = work / "shot.png"
    done = subprocess.run(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={work / 'profile'}",
         f"--window-size={width},{height}", f"--screenshot={shot}", page.as_uri()],
        capture_output=True, text=True, timeout=180, check=False)
    if not shot.is_file():
        raise SystemExit(f"chromium made no screenshot (exit {done.returncode}): "
                         f"{done.stderr[-1000:]}")
    quantise = shutil.which("pngquant")
    if quantise is not None:
        small = work / "small.png"
        subprocess.run([quantise, "--quality=70-95", "--output", str(small), str(shot)],
                       check=True, timeout=120)
        shot = small
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, out)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs/screenshots/diff-page.png")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=1400)
    options = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory(prefix="hr-diff-shot-") as folder:
        work = Path(folder)
        page = make_page(work)
        screenshot(page, options.out, options.width, options.height, work)
    print(f"{options.out} ({options.out.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main(sys.argv[1:])
