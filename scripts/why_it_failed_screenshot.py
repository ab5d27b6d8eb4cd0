"""Make README's screenshot of "Why it failed": docs/screenshots/why-it-failed.png.

Runs the SQuAD-style retrieval example (hr_core/examples/squad_retrieval.yaml: two offline
``mock:reader`` arms behind a BM25 retriever, k 1 and 3) in a temporary folder, and
photographs its report.html with headless Chromium (:func:`diff_screenshot.screenshot`)
showing the report's Retrieval and "Why it failed" tables and its failed runs (a style
sheet added to a copy of the page hides the other sections; the numbers are the page's).

    .venv/bin/python scripts/why_it_failed_screenshot.py [--out PATH] [--width 1100]
        [--height 1250]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from diff_screenshot import screenshot  # noqa: E402  (the folder of this script)

ONLY = ("<style>nav, section {display: none} section#summary, section#failures "
        "{display: block} #summary > * {display: none} #summary > h3, #summary > h3 ~ * "
        "{display: block}</style>")


def make_page(work: Path) -> Path:
    """The example's report, with only the retrieval tables and the failed runs shown."""
    from flows.benchmark import plan_from_spec
    from hr_core.run.session import BenchmarkSession

    plan = plan_from_spec(ROOT / "hr_core/examples/squad_retrieval.yaml",
                          store=str(work / "results"), fresh=True)
    bench = BenchmarkSession(plan).run_sync()
    page = work / "report.html"
    html = (Path(bench.run_dir) / "report.html").read_text(encoding="utf-8")
    if "</head>" not in html or 'id="summary"' not in html:
        raise SystemExit("report.html has no </head> or summary section: update this script")
    page.write_text(html.replace("</head>", ONLY + "</head>", 1), encoding="utf-8")
    return page


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs/screenshots/why-it-failed.png")
    parser.add_argument("--width", type=int, default=1100)
    parser.add_argument("--height", type=int, default=1250)
    options = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory(prefix="hr-why-shot-") as folder:
        work = Path(folder)
        screenshot(make_page(work), options.out, options.width, options.height, work)
    print(f"{options.out} ({options.out.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main(sys.argv[1:])
