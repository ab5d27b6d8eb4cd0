"""People's labels on a judged run: the seeded sample, the sheet, importing labels, and the
accuracies they correct (hr_core.judge.human_labels, hr_core.judge.corrected, hr label)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_support import hr

from hr_core.judge import hr_judge_config, hr_scorer_judge
from hr_core.judge.corrected import corrected_accuracy, corrected_title
from hr_core.judge.human_labels import (
    LABELS_FILE,
    SAMPLE_FILE,
    SHEET_FILES,
    HumanLabelError,
    draw_items,
    import_labels,
    read_labels,
    read_sample,
    sample_run,
)
from hr_core.run.session import BenchmarkSession, apply_judge_policy, plan_benchmark
from hr_core.stats.ppi import ppi_mean_ci

ITEMS = [{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}"} for i in range(40)]


def _good(payload: dict) -> str:
    n = int(payload["question"][1:])
    return f"a{n}" if n % 4 else "nope"  # right on 3 items of 4


def _bad(payload: dict) -> str:
    n = int(payload["question"][1:])
    return f"a{n}" if n % 2 else "nope"  # right on odd items


def _truth(arm: str, item: str) -> bool:
    """What people say: the judge (exact match, the mock judge) is right except on items
    divisible by 5, where people call 'nope' correct (and a right answer wrong) for arm bad."""
    n = int(item[1:])
    judge = bool(n % 4) if arm == "good" else bool(n % 2)
    return not judge if (arm == "bad" and n % 5 == 0) else judge


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("labels")
    config = hr_judge_config("mock-model", "Is the response's answer the reference's?",
                             mode="grade")
    plan = plan_benchmark({"good": _good, "bad": _bad}, ITEMS, hr_scorer_judge(config),
                          runs=2, store=str(store), name="labelled")
    apply_judge_policy(plan, "ignore", str(store / "judges"))
    bench = BenchmarkSession(plan).run_sync()
    assert bench.run_dir is not None
    return Path(bench.run_dir)


def _fresh(run_dir: Path, tmp_path: Path) -> Path:
    """A copy of the run folder without labels or sample."""
    import shutil

    copy = tmp_path / "store" / "labelled" / run_dir.name
    shutil.copytree(run_dir, copy)
    for name in (SAMPLE_FILE, LABELS_FILE, *SHEET_FILES):
        (copy / name).unlink(missing_ok=True)
    return copy


def _load(run_dir: Path):
    from hr_core.analysis.benchmark import Benchmark

    return Benchmark.load(run_dir)


def test_sample_is_seeded_recorded_and_its_sheet_asks_every_arm_and_run(
        run_dir: Path, tmp_path: Path) -> None:
    folder = _fresh(run_dir, tmp_path)
    sample, drawn = sample_run(_load(folder), 10, seed=3)
    assert drawn
    assert sample.frame == [f"q{i}" for i in range(40)]
    assert sample.items == draw_items(sample.frame, 10, 3)  # anyone can draw it again
    assert len(set(sample.items)) == 10
    record = json.loads((folder / SAMPLE_FILE).read_text())
    assert (record["seed"], record["n"], record["items"]) == (3, 10, sample.items)
    assert "default_rng(seed)" in record["method"]
    with (folder / SHEET_FILES[1]).open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["arm", "item", "run", "question", "reference", "output", "label"]
    assert len(rows) == 10 * 2 * 2  # items x arms x runs
    assert {r["item"] for r in rows} == set(sample.items)
    assert all(r["label"] == "" for r in rows)
    first = rows[0]
    n = int(first["item"][1:])
    assert (first["question"], first["reference"]) == (f"Q{n}", f"a{n}")
    assert len((folder / SHEET_FILES[0]).read_text().splitlines()) == 40


def test_a_run_keeps_one_sample(run_dir: Path, tmp_path: Path) -> None:
    folder = _fresh(run_dir, tmp_path)
    first, _ = sample_run(_load(folder), 10, seed=3)
    (folder / SHEET_FILES[1]).write_text("someone's work in progress")
    (folder / SHEET_FILES[0]).unlink()
    again, drawn = sample_run(_load(folder), 10)
    assert not drawn and again.items == first.items
    assert (folder / SHEET_FILES[1]).read_text() == "someone's work in progress"
    assert len((folder / SHEET_FILES[0]).read_text().splitlines()) == 40  # rewritten
    with pytest.raises(HumanLabelError, match=r"human_sample.json: this run already has a "
                                              r"sample \(10 items, seed 3\)"):
        sample_run(_load(folder), 12)


def _labelled_sheet(folder: Path, path: Path, extra: list[dict] | None = None) -> None:
    with (folder / SHEET_FILES[1]).open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        row["label"] = "correct" if _truth(row["arm"], row["item"]) else "incorrect"
    rows[-1]["label"] = ""  # not labelled yet: skipped
    rows.extend(extra or [])
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_import_marks_labels_outside_the_sample_not_random(run_dir: Path,
                                                            tmp_path: Path) -> None:
    folder = _fresh(run_dir, tmp_path)
    sample, _ = sample_run(_load(folder), 10, seed=3)
    outside = next(f"q{i}" for i in range(40) if f"q{i}" not in sample.items)
    sheet = tmp_path / "done.csv"
    _labelled_sheet(folder, sheet, [{"arm": "good", "item": outside, "run": "1",
                                     "question": "", "reference": "", "output": "",
                                     "label": "1"}])
    labels, skipped = import_labels(_load(folder), sheet)
    assert skipped == 1
    assert len(labels) == 40
    stored = read_labels(folder)
    assert len(stored) == 40
    assert [x.item for x in stored if not x.random] == [outside]
    # a second import of a label replaces the first
    pd.DataFrame([{"arm": "good", "item": outside, "run": 1, "label": False}]).to_parquet(
        tmp_path / "one.parquet")
    import_labels(_load(folder), tmp_path / "one.parquet")
    again = [x for x in read_labels(folder) if x.item == outside]
    assert len(again) == 1 and again[0].label is False


@pytest.mark.parametrize(("row", "message"), [
    ({"arm": "zzz", "item": "q1", "run": "1", "label": "1"},
     r"rows.csv, row 2, column 'arm': 'zzz' is not an arm of this run \(arms: bad, good\)"),
    ({"arm": "good", "item": "q99", "run": "1", "label": "1"},
     r"rows.csv, row 2, column 'item': 'q99' is not an item of this run"),
    ({"arm": "good", "item": "q1", "run": "3", "label": "1"},
     r"rows.csv, row 2, column 'run': arm 'good' made no run 3 of item 'q1'"),
    ({"arm": "good", "item": "q1", "run": "x", "label": "1"},
     r"rows.csv, row 2, column 'run': 'x' is not a run number"),
    ({"arm": "good", "item": "q1", "run": "1", "label": "maybe"},
     r"rows.csv, row 2, column 'label': 'maybe' is not a label; write correct or incorrect"),
    ({"arm": "good", "item": "q2", "run": "1", "label": "0"},
     r"rows.csv, row 2: the same arm, item and run as row 1"),
])
def test_bad_labels_are_named_by_file_row_and_column(run_dir: Path, tmp_path: Path,
                                                     row: dict, message: str) -> None:
    path = tmp_path / "rows.csv"
    pd.DataFrame([{"arm": "good", "item": "q2", "run": "1", "label": "1"}, row]).to_csv(
        path, index=False)
    with pytest.raises(HumanLabelError, match=message):
        import_labels(_load(run_dir), path)


def test_a_missing_column_is_named(run_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"arm": "good", "item": "q1", "verdict": "correct"}\n')
    with pytest.raises(HumanLabelError, match=r"rows.jsonl: missing column\(s\) run, label"):
        import_labels(_load(run_dir), path)


def _item_arrays(arm: str, sampled: list[str], labelled_pairs: set[tuple[str, int]]):
    """By hand: per item, the judge's share (the arm's answers, the mock judge is exact
    match) and people's share over the labelled runs."""
    judge = {f"q{i}": float(_truth(arm, f"q{i}") if not (arm == "bad" and i % 5 == 0)
                            else not _truth(arm, f"q{i}")) for i in range(40)}
    y, f, rest = [], [], []
    for i in range(40):
        item = f"q{i}"
        runs = [r for r in (1, 2) if (item, r) in labelled_pairs]
        if item in sampled and runs:
            y.append(float(_truth(arm, item)))
            f.append(judge[item])
        else:
            rest.append(judge[item])
    return np.array(y), np.array(f), np.array(rest)


def test_corrected_accuracy_is_ppi_on_item_shares(run_dir: Path, tmp_path: Path) -> None:
    folder = _fresh(run_dir, tmp_path)
    sample, _ = sample_run(_load(folder), 10, seed=3)
    _labelled_sheet(folder, tmp_path / "done.csv")
    import_labels(_load(folder), tmp_path / "done.csv")
    found = corrected_accuracy(_load(folder))
    assert found is not None
    assert found.labels == 39 and found.title == corrected_title(39)
    by_arm = {x.arm: x for x in found.arms}
    pairs = {arm: {(x.item, x.run) for x in read_labels(folder) if x.arm == arm}
             for arm in ("good", "bad")}
    for arm in ("good", "bad"):
        y, f, rest = _item_arrays(arm, sample.items, pairs[arm])
        expected = ppi_mean_ci(y, f, rest, method="share")
        got = by_arm[arm].corrected
        assert (got.estimate, got.low, got.high) == pytest.approx(
            (expected.estimate, expected.low, expected.high))
        assert got.labelled == 10 and got.judged == 30
    assert by_arm["good"].judge_accuracy == pytest.approx(0.75)
    [diff] = found.differences
    assert (diff.a, diff.b) == ("bad", "good")
    assert diff.comparison.low <= diff.comparison.estimate <= diff.comparison.high


def test_no_random_labels_no_correction(run_dir: Path, tmp_path: Path) -> None:
    folder = _fresh(run_dir, tmp_path)
    path = tmp_path / "l.csv"
    pd.DataFrame([{"arm": "good", "item": "q1", "run": 1, "label": "correct"}]).to_csv(
        path, index=False)
    labels, _ = import_labels(_load(folder), path)  # no sample: kept, not random
    assert [x.random for x in labels] == [False]
    assert corrected_accuracy(_load(folder)) is None


def test_hr_label_sample_import_and_summary(run_dir: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    folder = _fresh(run_dir, tmp_path)
    code, out, _ = hr(capsys, "label", "sample", folder, "--n", "10", "--seed", "3")
    assert code == 0, out
    assert "Drew 10 of 40 items uniformly at random (seed 3)" in out
    assert "label_sheet.csv" in " ".join(out.split())
    _labelled_sheet(folder, tmp_path / "done.csv")
    code, out, _ = hr(capsys, "label", "import", folder, tmp_path / "done.csv")
    assert code == 0, out
    text = " ".join(out.split())
    assert "Imported 39 label(s)" in text and "1 row(s) without a label skipped" in text
    assert "Accuracy corrected by 39 human labels (PPI++), 95% intervals:" in text
    code, out, _ = hr(capsys, "summary", folder)
    assert code == 0, out
    assert "corrected by 39 human labels (PPI++)" in " ".join(out.split())


def test_hr_label_import_bad_file_is_one_line(run_dir: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("arm,item,run,label\ngood,q1,1,perhaps\n")
    code, out, err = hr(capsys, "label", "import", run_dir, path)
    assert code == 2
    message = (out + err).strip()
    assert "bad.csv, row 1, column 'label': 'perhaps' is not a label" in " ".join(
        message.split())
    assert "Traceback" not in message
    assert read_sample(run_dir) is None


def test_reports_show_the_corrected_accuracy_beside_the_judges(run_dir: Path,
                                                                tmp_path: Path) -> None:
    from hr_core.report import write_report
    from hr_core.report.markdown import report_markdown

    folder = _fresh(run_dir, tmp_path)
    before = Path(write_report(folder)).read_text()
    assert 'id="corrected"' not in before
    sample_run(_load(folder), 10, seed=3)
    _labelled_sheet(folder, tmp_path / "done.csv")
    import_labels(_load(folder), tmp_path / "done.csv")
    page = Path(write_report(folder)).read_text()
    assert '<h3 id="corrected">Accuracy corrected by 39 human labels (PPI++)</h3>' in page
    found = corrected_accuracy(_load(folder))
    assert found is not None
    good = next(x for x in found.arms if x.arm == "good").corrected
    assert (f"<td>{good.estimate:.1%} ({good.low:.1%}–{good.high:.1%})</td>") in page
    assert "1 item(s) of the sample have no label yet" not in page  # every item has a label
    markdown = report_markdown(_load(folder))
    assert "**Accuracy corrected by 39 human labels (PPI++), 95% intervals:**" in markdown
    assert f"- good: {good.estimate:.1%} [{good.low * 100:.1f}, {good.high * 100:.1f}]" in (
        markdown)


def test_arm_names_are_data_on_every_page(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    from hr_core.report import write_report

    hostile = "<b>[bold]x\x1b[2J"
    config = hr_judge_config("mock-model", "Same answer?", mode="grade")
    plan = plan_benchmark({hostile: _good, "plain": _bad}, ITEMS[:12], hr_scorer_judge(config),
                          store=str(tmp_path / "store"), name="hostile")
    apply_judge_policy(plan, "ignore", str(tmp_path / "judges"))
    folder = Path(BenchmarkSession(plan).run_sync().run_dir or "")
    sample_run(_load(folder), 12, seed=1)
    rows = pd.read_csv(folder / SHEET_FILES[1], dtype=str, keep_default_na=False)
    rows["label"] = "correct"
    rows.to_csv(tmp_path / "done.csv", index=False)
    import_labels(_load(folder), tmp_path / "done.csv")
    code, out, _ = hr(capsys, "summary", folder)
    assert code == 0, out
    assert "\x1b[2J" not in out and "\\x1b[2J" in out and "[bold]x" in out
    page = Path(write_report(folder)).read_text()
    assert "&lt;b&gt;[bold]x" in page and "<b>[bold]x" not in page
