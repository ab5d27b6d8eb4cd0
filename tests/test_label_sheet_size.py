"""label_sheet.html stays a usable file when a sample is large and its outputs long: each
question, context, reference and output shows at most FIELD_MAX characters, saying where
it was cut, and an item's question, context and reference are in the page once, not once
per output (hr_core.judge.label_sheet); the JSONL and CSV sheets keep every character."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hr_core.analysis.benchmark import Benchmark
from hr_core.judge.human_labels import SHEET_FILES, SHEET_HTML, sample_run
from hr_core.judge.label_sheet import FIELD_MAX, render_sheet
from hr_core.run.session import BenchmarkSession, plan_benchmark

DOCUMENT = "d" * 50_000
OUTPUT = "o" * 20_000
CUT = re.compile(r"\[\.\.\. cut at ([\d,]+) characters of ([\d,]+): the whole text is in "
                 r"the \.jsonl sheet beside this page\]")


def _data(page: str) -> dict:
    found = re.search(r'<script type="application/json" id="hr-sheet-data">(.*?)</script>',
                      page, re.S)
    assert found is not None
    return json.loads(found.group(1))


def test_a_large_sample_with_long_outputs_stays_a_usable_page() -> None:
    """Before: 100 outputs of 20,000 characters on 25 items with a 50,000-character
    document each made a 7 MB page (every output carried its item's document)."""
    rows = [{"arm": f"arm{a}", "item": f"q{i}", "run": 1, "question": f"Q{i}?",
             "context": DOCUMENT, "reference": "r", "output": OUTPUT, "verdict": "correct"}
            for i in range(25) for a in range(4)]
    page = render_sheet(rows, name="big", run_id="r1", seed=1)
    # bound: every output cut to FIELD_MAX, each item's fields once, plus the page itself
    bound = 100 * (FIELD_MAX + 300) + 25 * (3 * FIELD_MAX + 600) + 20_000
    assert len(page.encode("utf-8")) < bound < 1_000_000
    data = _data(page)
    assert len(data["rows"]) == 100 and len(data["items"]) == 25
    output = data["rows"][0]["output"]
    assert output.startswith("o" * FIELD_MAX) and not output.startswith("o" * (FIELD_MAX + 1))
    assert CUT.search(output).groups() == (f"{FIELD_MAX:,}", "20,000")
    context = data["items"][data["rows"][0]["at"]]["context"]
    assert CUT.search(context).groups() == (f"{FIELD_MAX:,}", "50,000")
    # a short field is shown whole, with no note
    assert data["items"][0]["question"] == "Q0?" and data["items"][0]["reference"] == "r"


def test_the_sheets_beside_the_page_keep_the_whole_output(tmp_path: Path) -> None:
    items = [{"id": f"q{i}", "question": f"Q{i}", "label": "x"} for i in range(6)]
    plan = plan_benchmark({"long": lambda payload: OUTPUT}, items, store=str(tmp_path),
                          name="long")
    bench = BenchmarkSession(plan).run_sync()
    assert bench.run_dir is not None
    folder = Path(bench.run_dir)
    sample_run(Benchmark.load(folder), 3, seed=2)
    rows = [json.loads(line) for line in (folder / SHEET_FILES[0]).read_text().splitlines()]
    assert [len(r["output"]) for r in rows] == [20_000] * 3
    data = _data((folder / SHEET_HTML).read_text(encoding="utf-8"))
    assert all(CUT.search(r["output"]) for r in data["rows"])
