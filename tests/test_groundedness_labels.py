"""Groundedness corrected by people's labels (issue 36 item 5): the run's groundedness
sample and sheet (each run's passages and answer), the import, and each arm's share of
unsupported answers corrected by the labels (PPI++) in the command's output, ``hr
summary``, report.md and report.html; a hand-computed example of the estimate; bad inputs.
The judge is the offline mock one (an answer is supported when it is one of its passages).
"""

from __future__ import annotations

import csv
import json
import math
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from cli_support import hr

from hr_core import ArmResult, Context
from hr_core.analysis.benchmark import Benchmark
from hr_core.judge.corrected import corrected_groundedness
from hr_core.judge.groundedness import groundedness_config, save_groundedness
from hr_core.judge.human_labels import (
    GROUNDEDNESS,
    SAMPLE_FILE,
    HumanLabel,
    HumanLabelError,
    read_labels,
    read_sample,
    redraw_items,
    sample_run,
)
from hr_core.run.session import BenchmarkSession, plan_benchmark
from hr_core.stats import clopper_pearson
from hr_core.stats.ppi import ppi_mean_ci

ITEMS = [{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}"} for i in range(20)]


def _number(payload: dict[str, Any]) -> int:
    return int(payload["question"][1:])


def _rag(payload: dict[str, Any]) -> ArmResult:
    """Even items: the answer is its first passage (supported); odd: it is not."""
    n = _number(payload)
    text = f"a{n}" if n % 2 == 0 else "the passage says nothing of it"
    return ArmResult(answer=f"a{n}", contexts=[Context(id=f"p{n}", text=text),
                                               Context(id="x", text="another passage")])


def _echo(payload: dict[str, Any]) -> ArmResult:
    n = _number(payload)
    return ArmResult(answer=f"a{n}", contexts=[Context(id=f"p{n}", text=f"a{n}")])


def _shy(payload: dict[str, Any]) -> ArmResult:
    return ArmResult(answer="NOT_IN_DOCUMENT", contexts=[Context(text="a passage")])


def _judge_unsupported(arm: str, n: int) -> bool:
    return arm == "rag" and n % 2 == 1


def _people_unsupported(arm: str, n: int) -> bool:
    """People disagree with the judge on rag's items divisible by 3."""
    return _judge_unsupported(arm, n) != (arm == "rag" and n % 3 == 0)


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of three arms (two runs per item) whose groundedness was judged."""
    store = tmp_path_factory.mktemp("grounded")
    bench = BenchmarkSession(plan_benchmark({"rag": _rag, "echo": _echo, "shy": _shy}, ITEMS,
                                            runs=2, store=str(store), name="grounded")
                             ).run_sync()
    run_dir = Path(bench.run_dir or "")
    from hr_cli import main

    main(["judge", "groundedness", str(run_dir), "--model", "mock-model", "--store",
          str(store / "judges")])
    return run_dir


def _copy(run_dir: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "store" / "grounded" / run_dir.name
    shutil.copytree(run_dir, copy)
    return copy


def _fill(sheet: Path, out: Path, *, skip: int | None = None) -> int:
    """The CSV sheet with people's labels written in (row ``skip`` left empty)."""
    with sheet.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    for index, row in enumerate(rows):
        if index != skip:
            unsupported = _people_unsupported(row["arm"], int(row["item"][1:]))
            row["label"] = "unsupported" if unsupported else "supported"
    with out.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)


def test_the_corrected_share_by_hand(tmp_path: Path) -> None:
    """Ten items of one run each; the judge says unsupported on q0, q1, q7, gives no
    verdict on q9 (its f is 1/2), supported elsewhere; people labelled q0-q5 of the random
    sample: unsupported on q0 and q3."""
    supported = [False, False, True, True, True, True, True, False, True, None]
    verdicts = pd.DataFrame({"arm": "a", "item_id": [f"q{i}" for i in range(10)],
                             "item_index": range(10), "run": 1, "status": "ok",
                             "verdict": None, "supported": supported})
    save_groundedness(str(tmp_path), verdicts, groundedness_config("mock-model"))
    now = datetime.now(UTC)
    people = [False, True, True, False, True, True]  # supported?
    labels = [HumanLabel(arm="a", item=f"q{i}", run=1, label=x, random=True, source="t",
                         imported_at=now) for i, x in enumerate(people)]
    labels.append(HumanLabel(arm="a", item="q8", run=1, label=False, random=False,
                             source="t", imported_at=now))  # outside the sample: not used
    found = corrected_groundedness(str(tmp_path), labels=labels)
    assert found is not None and found.labels == 6 and found.not_random == 1
    assert found.judge_hash == groundedness_config("mock-model").hash
    arm = found.arms[0]
    assert arm.judge_accuracy == pytest.approx(3 / 9)  # the judge's share: q9 left out
    est = arm.corrected
    # by hand: y (people's unsupported) and f (the judge's) on q0-q5, f on q6-q9
    y = np.array([1, 0, 0, 1, 0, 0.0])
    f = np.array([1, 1, 0, 0, 0, 0.0])
    rest = np.array([0, 1, 0, 0.5])
    # lambda = [sum((y - 1/3)(f - 1/3)) / 6] / [(1 + 6/4) var(all f, ddof=1)]
    #        = (1/18) / (2.5 * 0.225) = 8/81
    assert est.lam == pytest.approx(8 / 81)
    lam = 8 / 81
    assert est.estimate == pytest.approx(82 / 243)  # lam * 3/8 + 1/3 - lam / 3
    residual = y - lam * f
    variance = lam ** 2 * rest.var() / 4 + residual.var() / 6
    assert est.se == pytest.approx(math.sqrt(variance))
    assert variance == pytest.approx(lam ** 2 * 0.171875 / 4 + residual.var() / 6)
    # Korn and Graubard: n_eff = p(1-p)/var * (z / t_5)^2 (at most 10), Clopper-Pearson
    z, t5 = 1.959964, 2.570582
    p = 82 / 243
    n_eff = min(p * (1 - p) / variance * (z / t5) ** 2, 10)
    _, low, high = clopper_pearson(p * n_eff, n_eff)
    assert (est.low, est.high) == pytest.approx((low, high), abs=1e-5)
    assert (round(est.low, 4), round(est.high, 4)) == (0.0154, 0.8760)
    # the labels alone: 2 of 6, se^2 = (2/9) / 6, n_eff = 6 (z / t_5)^2
    n_alone = (1 / 3) * (2 / 3) / (2 / 9 / 6) * (z / t5) ** 2
    _, low, high = clopper_pearson(n_alone / 3, n_alone)
    assert tuple(est.labels_only)[1:] == pytest.approx((low, high), abs=1e-5)
    assert (est.labelled, est.judged) == (6, 4)


def test_sample_sheet_import_and_the_corrected_share_everywhere(
        judged: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _copy(judged, tmp_path)
    code, out, _ = hr(capsys, "label", "sample", folder, "--n", "12", "--seed", "5",
                      "--groundedness")
    assert code == 0, out
    text = " ".join(out.split())
    assert "Drew 12 of 20 items uniformly at random (seed 5)" in text
    assert "groundedness_sheet.html" in text and "--groundedness" in text
    sample = read_sample(folder, GROUNDEDNESS)
    assert sample is not None and sample.arms == ["rag", "echo"]  # shy made no claim
    assert not (folder / SAMPLE_FILE).exists()  # the accuracy's sample: another one
    rows = [json.loads(x) for x in (folder / "groundedness_sheet.jsonl").read_text(
        "utf-8").splitlines()]
    assert len(rows) == 12 * 2 * 2  # two arms, two runs
    assert list(rows[0]) == ["arm", "item", "run", "question", "passages", "answer", "label"]
    first = next(r for r in rows if r["arm"] == "rag" and int(r["item"][1:]) % 2)
    assert first["passages"] == "[1] the passage says nothing of it\n\n[2] another passage"
    n = first["item"][1:]
    assert (first["answer"], first["question"], first["label"]) == (f"a{n}", f"Q{n}", "")
    page = (folder / "groundedness_sheet.html").read_text("utf-8")
    assert '"words": ["supported", "unsupported"]' in page and "<h2>Passages</h2>" in page
    assert "Is every claim of each answer supported by the passages" in page
    assert '"passages": "[1] the passage says nothing of it' in page
    assert f'"file": "groundedness-labels-{judged.name}-5.jsonl"' in page

    count = _fill(folder / "groundedness_sheet.csv", tmp_path / "done.csv", skip=0)
    code, out, _ = hr(capsys, "label", "import", folder, tmp_path / "done.csv",
                      "--groundedness")
    assert code == 0, out
    text = " ".join(out.split())
    assert f"Imported {count - 1} label(s)" in text and "groundedness_labels.jsonl" in text
    heading = (f"Answers not supported by their passages corrected by {count - 1} human "
               f"labels (PPI++), judge {groundedness_config('mock-model').hash[:12]}, 95% "
               "intervals:")
    assert heading in text
    assert not (folder / "human_labels.jsonl").exists()

    # the expected figure: items the units (an item's two runs agree, so its shares are
    # 0 or 1 even where one run's label was skipped); y from people, f from the judge
    expected = {}
    for arm in ("rag", "echo"):
        y, f, rest = [], [], []
        for i in range(20):
            judge = float(_judge_unsupported(arm, i))
            if f"q{i}" in sample.items:
                y.append(float(_people_unsupported(arm, i)))
                f.append(judge)
            else:
                rest.append(judge)
        expected[arm] = ppi_mean_ci(y, f, rest, method="share")
    rag = expected["rag"]
    shown = (f"rag: {rag.estimate:.1%} [{rag.low * 100:.1f}, {rag.high * 100:.1f}] (judge "
             "50.0%; labels alone")
    assert shown in text
    assert rag.lam > 0 and rag.labelled == 12 and rag.judged == 8
    echo = expected["echo"]
    assert f"echo: {echo.estimate:.1%} [{echo.low * 100:.1f}, {echo.high * 100:.1f}]" in text

    report = (folder / "report.md").read_text("utf-8")  # re-made by the import
    assert f"**{heading}**" in report
    assert f"- rag: {rag.estimate:.1%} [{rag.low * 100:.1f}, {rag.high * 100:.1f}]" in report
    code, out, _ = hr(capsys, "summary", folder)
    assert code == 0 and heading in " ".join(out.split())
    code, out, _ = hr(capsys, "judge", "groundedness", folder, "--model", "mock-model",
                      "--store", tmp_path / "judges")
    assert code == 0 and heading in " ".join(out.split())  # labels outlive a re-judging
    assert f"**{heading}**" in (folder / "report.md").read_text("utf-8")
    code, out, _ = hr(capsys, "report", folder)
    assert code == 0, out
    html = (folder / "report.html").read_text("utf-8")
    assert 'id="table-corrected-groundedness"' in html
    assert f"{rag.estimate:.1%} ({rag.low:.1%}–{rag.high:.1%})" in html
    (folder / "groundedness.parquet").unlink()  # the labels stay; nothing to correct
    assert corrected_groundedness(str(folder)) is None
    code, out, _ = hr(capsys, "summary", folder)
    assert code == 0 and "Answers not supported" not in out


def test_labels_outside_the_sample_are_kept_not_used(judged: Path, tmp_path: Path) -> None:
    folder = _copy(judged, tmp_path)
    bench = Benchmark.load(folder)
    sample, drawn = sample_run(bench, 4, seed=2, kind=GROUNDEDNESS)
    assert drawn and sample_run(bench, 4, kind=GROUNDEDNESS) == (sample, False)
    outside = next(f"q{i}" for i in range(20) if f"q{i}" not in sample.items)
    inside = sample.items[0]
    from hr_core.judge.human_labels import import_labels

    frame = pd.DataFrame({"arm": "rag", "item": [inside, outside], "run": 1,
                          "label": ["1", "0"]})
    read, skipped = import_labels(bench, frame, GROUNDEDNESS)
    assert [x.random for x in read] == [True, False] and skipped == 0
    assert [x.label for x in read_labels(folder, GROUNDEDNESS)] == [True, False]
    found = corrected_groundedness(str(folder))
    assert found is not None and found.labels == 1 and found.not_random == 1
    assert found.sampled_unlabelled == 3
    grown, drawn = sample_run(bench, 6, kind=GROUNDEDNESS, grow=True)
    assert drawn and grown.items[:4] == sample.items and len(grown.items) == 6
    assert redraw_items(grown) == grown.items
    rows = (folder / "groundedness_sheet_grow1.jsonl").read_text("utf-8").splitlines()
    assert {json.loads(x)["item"] for x in rows} == set(grown.items[4:])
    assert not (folder / "label_sheet_grow1.jsonl").exists()


def test_bad_inputs_are_one_line(judged: Path, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    folder = _copy(judged, tmp_path)
    (folder / "groundedness.parquet").unlink()
    code, out, err = hr(capsys, "label", "sample", folder, "--n", "3", "--groundedness")
    message = " ".join((out + err).split())
    assert code == 2 and "groundedness.parquet: not found" in message
    assert "hr judge groundedness" in message and "Traceback" not in message
    assert not (folder / "groundedness_sample.json").exists()

    folder = _copy(judged, tmp_path / "second")
    hr(capsys, "label", "sample", folder, "--n", "3", "--seed", "1", "--groundedness")
    bad = tmp_path / "bad.csv"
    bad.write_text("arm,item,run,label\nrag,q1,1,correct\n")  # accuracy's word
    code, out, err = hr(capsys, "label", "import", folder, bad, "--groundedness")
    message = " ".join((out + err).split())
    assert code == 2 and "Traceback" not in message
    assert ("bad.csv, row 1, column 'label': 'correct' is not a label; write supported or "
            "unsupported (or 1 or 0)") in message
    bad.write_text("arm,item,run,label\nrag,q1,1,supported\nshy,q1,1,supported\n")
    code, out, err = hr(capsys, "label", "import", folder, bad, "--groundedness")
    message = " ".join((out + err).split())
    assert code == 2 and ("bad.csv, row 2, column 'arm': 'shy' is not an arm of this run with "
                          "judged answers (arms: echo, rag)") in message
    assert read_labels(folder, GROUNDEDNESS) == []  # nothing kept from a bad file
    code, out, err = hr(capsys, "label", "sample", folder, "--n", "5", "--groundedness")
    message = " ".join((out + err).split())
    assert code == 2 and "groundedness_sample.json: this run already has a sample" in message
    assert "`--n 5 --grow --groundedness`" in message
    with pytest.raises(HumanLabelError, match=r"groundedness_sample\.json: not a sample"):
        (folder / "groundedness_sample.json").write_text("{}")
        read_sample(folder, GROUNDEDNESS)


def test_the_groundedness_sheet_in_chromium(judged: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The page shows each run's own passages and answer, y/n write supported/unsupported,
    and its download is what `hr label import --groundedness` reads."""
    from devtools_support import DevTools

    folder = _copy(judged, tmp_path)
    code, out, _ = hr(capsys, "label", "sample", folder, "--n", "2", "--seed", "3",
                      "--groundedness")
    assert code == 0, out
    browser = DevTools(tmp_path)
    try:
        browser.open((folder / "groundedness_sheet.html").as_uri(), tmp_path / "downloads")
        rows = browser.evaluate(
            "JSON.parse(document.getElementById('hr-sheet-data').textContent).rows")
        shown = []
        for key in ("y", "ArrowRight", "n", "ArrowRight"):
            if key == "ArrowRight":
                shown.append(browser.evaluate(
                    "[document.getElementById('context').textContent,"
                    " document.getElementById('output').textContent,"
                    " document.getElementById('verdict').textContent]"))
            browser.press(key)
        name = browser.download("#download")
        assert browser.errors() == []
    finally:
        browser.close()
    for (context, output, verdict), row in zip(shown, rows, strict=False):
        assert context == row["passages"] and output == row["output"]  # the run's own
        arm, n = row["arm"], int(row["item"][1:])
        assert verdict == ("unsupported" if _judge_unsupported(arm, n) else "supported")
    assert name == f"groundedness-labels-{folder.name}-3.jsonl"
    downloaded = tmp_path / "downloads" / name
    lines = [json.loads(x) for x in downloaded.read_text("utf-8").splitlines()]
    assert [x["label"] for x in lines] == ["supported", "unsupported"]
    code, out, _ = hr(capsys, "label", "import", folder, downloaded, "--groundedness")
    assert code == 0, out
    stored = {(x.arm, x.item, x.run): x.label for x in read_labels(folder, GROUNDEDNESS)}
    assert stored == {(r["arm"], r["item"], r["run"]): label
                      for r, label in zip(rows[:2], (True, False), strict=True)}
