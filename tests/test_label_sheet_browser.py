"""The labelling sheet (``label_sheet.html``) in headless Chromium, driven as a person
would: real key presses and a mouse click through the DevTools protocol
(tests/devtools_support.py), the download saved by the browser into a folder
(``Browser.setDownloadBehavior``), then ``hr label import`` of that very file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import hr
from devtools_support import DevTools

from hr_core.judge import hr_judge_config, hr_scorer_judge
from hr_core.judge.human_labels import SHEET_FILES, SHEET_HTML, read_labels
from hr_core.run.session import BenchmarkSession, apply_judge_policy, plan_benchmark

_PWN = "</script><script>window.__hr_pwned=1</script><img src=x onerror=window.__hr_pwned=2>"
ITEMS = [{"id": f"q{i}", "question": f"Q{i} {_PWN}", "document": f"doc {i} <!-- \u2028",
          "label": f"a{i}"} for i in range(12)]


def _right(payload: dict) -> str:
    n = int(payload["question"].split()[0][1:])
    return f"a{n}" if n % 3 else f"{_PWN} a{n}"


def _other(payload: dict) -> str:
    n = int(payload["question"].split()[0][1:])
    return f"a{n}" if n % 2 else "no idea"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("sheet")
    config = hr_judge_config("mock-model", "Is the response's answer the reference's?",
                             mode="grade")
    plan = plan_benchmark({"right": _right, "other": _other}, ITEMS, hr_scorer_judge(config),
                          runs=1, store=str(store), name="sheet")
    apply_judge_policy(plan, "ignore", str(store / "judges"))
    bench = BenchmarkSession(plan).run_sync()
    assert bench.run_dir is not None
    return Path(bench.run_dir)


def _state(browser: DevTools) -> dict:
    return browser.evaluate(
        "({progress: document.getElementById('progress-text').textContent,"
        " position: document.getElementById('position').textContent,"
        " revealed: !document.getElementById('reveal').hidden,"
        " reference: document.getElementById('reference').textContent,"
        " verdict: document.getElementById('verdict').textContent,"
        " arm: document.getElementById('arm').textContent,"
        " question: document.getElementById('question').textContent,"
        " output: document.getElementById('output').textContent,"
        " context: document.getElementById('context').textContent,"
        " script: document.body.getAttribute('data-hr-script'),"
        " pwned: window.__hr_pwned || 0, images: document.images.length})")


def test_label_five_outputs_in_chromium_download_and_import(
        run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = hr(capsys, "label", "sample", run_dir, "--n", "5", "--seed", "7")
    assert code == 0, out
    assert SHEET_HTML in " ".join(out.split())
    sheet = [json.loads(line) for line in
             (run_dir / SHEET_FILES[0]).read_text(encoding="utf-8").splitlines()]
    assert len(sheet) == 10  # 5 items x 2 arms x 1 run, in the page's order
    assert "verdict" not in sheet[0]  # the judge's verdict: only in the HTML, shown late
    browser = DevTools(tmp_path)
    try:
        browser.open((run_dir / SHEET_HTML).as_uri(), tmp_path / "downloads")
        data = browser.evaluate(
            "JSON.parse(document.getElementById('hr-sheet-data').textContent)")
        # each output with its item's question, context and reference (kept once an item)
        page = [{**data["items"][r["at"]], **r} for r in data["rows"]]
        # the sheet's outputs, each item's in a seeded random order (the arm is blind)
        key = [(r["arm"], r["item"], r["run"]) for r in sheet]
        assert sorted((r["arm"], r["item"], r["run"]) for r in page) == sorted(key)
        assert [r["item"] for r in page] == [r["item"] for r in sheet]
        assert [r["arm"] for r in page] != [r["arm"] for r in sheet]  # seed 7 reorders
        first = _state(browser)
        assert first["script"] == "ready" and first["pwned"] == 0 and first["images"] == 0
        assert first["progress"] == "0 of 10 answered" and first["position"] == "Output 1 of 10"
        assert first["question"] == page[0]["question"]  # the data, as text
        assert first["output"] == page[0]["output"] and _PWN in first["question"]
        assert first["context"].startswith("document: doc ")
        # nothing that could steer the answer shows before it
        assert not first["revealed"] and first["reference"] == first["verdict"] == ""
        assert first["arm"] == ""
        browser.press("y")
        answered = _state(browser)
        assert answered["revealed"] and answered["reference"] == page[0]["reference"]
        assert answered["arm"] == page[0]["arm"]
        assert answered["verdict"] in ("correct", "incorrect", "no verdict")
        assert answered["position"] == "Output 1 of 10"  # stays to show the reveal
        for key in ("ArrowRight", "n", "Enter", "s", "y", "j", "n", "ArrowRight", "y",
                    "ArrowLeft", "k", "ArrowRight", "y"):
            browser.press(key)
        # 1 correct, 2 incorrect, 3 skipped, 4 correct, 5 incorrect, 6 correct; back to
        # 4 (arrow, k), on to 5, whose answer becomes correct (a changed answer replaces)
        done = _state(browser)
        assert done["progress"] == "5 of 10 answered", done
        assert done["position"] == "Output 5 of 10" and done["revealed"]
        # the answers are kept in the browser's storage; the page reads them back when
        # opened again (the storage is put back before the page's script runs: Chromium
        # commits a page's storage to disk a moment after it is written)
        key = json.dumps(browser.evaluate(
            "'hr-label-sheet:' + JSON.parse(document.getElementById('hr-sheet-data')"
            ".textContent).key"))
        kept = browser.evaluate(f"window.localStorage.getItem({key})")
        assert sorted(json.loads(kept).values()) == ["correct"] * 4 + ["incorrect"]
        browser.call("Page.addScriptToEvaluateOnNewDocument", {
            "source": f"window.localStorage.setItem({key}, {json.dumps(kept)});"})
        browser.events.clear()
        browser.call("Page.reload")
        browser.wait_event("Page.loadEventFired")
        again = _state(browser)
        assert again["progress"] == "5 of 10 answered"
        assert again["position"] == "Output 3 of 10"  # the first unanswered one
        name = browser.download("#download")
        assert browser.errors() == []
    finally:
        browser.close()
    assert name == f"labels-{run_dir.name}-7.jsonl"
    downloaded = tmp_path / "downloads" / name
    lines = [json.loads(line) for line in downloaded.read_text(encoding="utf-8").splitlines()]
    expected = {0: "correct", 1: "incorrect", 3: "correct", 4: "correct", 5: "correct"}
    assert lines == [{"arm": page[i]["arm"], "item": page[i]["item"], "run": page[i]["run"],
                      "label": label} for i, label in expected.items()]
    code, out, _ = hr(capsys, "label", "import", run_dir, downloaded)
    assert code == 0, out
    assert "Imported 5 label(s)" in " ".join(out.split())
    stored = {(x.arm, x.item, x.run): (x.label, x.random) for x in read_labels(run_dir)}
    assert stored == {(page[i]["arm"], page[i]["item"], page[i]["run"]):
                      (label == "correct", True) for i, label in expected.items()}


def test_the_page_runs_no_script_but_its_own(run_dir: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The checks above can fail: a script whose hash the page's policy does not allow is
    refused (and reported), and the sheet never starts."""
    code, out, _ = hr(capsys, "label", "sample", run_dir, "--n", "5", "--seed", "7")
    assert code == 0, out
    page = (run_dir / SHEET_HTML).read_text(encoding="utf-8")
    tampered = tmp_path / "tampered.html"
    tampered.write_text(page.replace('"use strict";', '"use strict"; window.__hr_pwned = 3;'),
                        encoding="utf-8")
    browser = DevTools(tmp_path)
    try:
        browser.open(tampered.as_uri(), tmp_path / "downloads")
        state = _state(browser)
        errors = browser.errors()
    finally:
        browser.close()
    assert state["script"] is None and state["pwned"] == 0
    assert any("Content Security Policy" in e for e in errors), errors
