"""Growing a run's sample (``hr label sample --n N --grow``, issue 35): a larger sample
once ``hr plan --label-width`` says more labels are needed, its new items drawn uniformly
from the rest of the same seeded frame, recorded for audit; the union is a uniform sample
(shown here by simulation against the exact 1 / C(N, n))."""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from itertools import combinations
from pathlib import Path

import pytest
from cli_support import hr

from hr_core.analysis.benchmark import Benchmark
from hr_core.judge import hr_judge_config, hr_scorer_judge
from hr_core.judge.corrected import corrected_accuracy
from hr_core.judge.human_labels import (
    SAMPLE_FILE,
    SHEET_FILES,
    HumanLabelError,
    draw_items,
    grow_items,
    import_labels,
    read_labels,
    read_sample,
    redraw_items,
    sample_run,
    sheet_names,
)
from hr_core.run.session import BenchmarkSession, apply_judge_policy, plan_benchmark

ITEMS = [{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}"} for i in range(40)]


def _arm(payload: dict) -> str:
    n = int(payload["question"][1:])
    return f"a{n}" if n % 3 else "nope"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("grow")
    config = hr_judge_config("mock-model", "Is the response's answer the reference's?",
                             mode="grade")
    plan = plan_benchmark({"x": _arm, "y": _arm}, ITEMS, hr_scorer_judge(config), runs=2,
                          store=str(store), name="grown")
    apply_judge_policy(plan, "ignore", str(store / "judges"))
    bench = BenchmarkSession(plan).run_sync()
    assert bench.run_dir is not None
    return Path(bench.run_dir)


@pytest.fixture
def folder(made: Path, tmp_path: Path) -> Path:
    import shutil

    copy = tmp_path / "grown" / made.name
    shutil.copytree(made, copy)
    return copy


def _label(folder: Path, sheet: str, out: Path) -> int:
    """Answer every row of a CSV sheet (correct unless the output is 'nope')."""
    with (folder / sheet).open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        row["label"] = "incorrect" if row["output"] == "nope" else "correct"
    with out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    import_labels(Benchmark.load(folder), out)
    return len(rows)


def test_a_sample_grows_with_new_items_from_the_rest_of_its_frame_recorded_for_audit(
        folder: Path, tmp_path: Path) -> None:
    """Before: another --n was refused once a sample existed, so a sample could not grow
    after `hr plan --label-width` said more labels were needed."""
    first, _ = sample_run(Benchmark.load(folder), 10, seed=3)
    assert _label(folder, SHEET_FILES[1], tmp_path / "first.csv") == 10 * 2 * 2
    (folder / SHEET_FILES[1]).write_text("someone's work in progress")
    grown, drawn = sample_run(Benchmark.load(folder), 16, grow=True)
    assert drawn and grown.n == 16 and grown.seed == 3
    assert grown.items[:10] == first.items  # the first draw stays
    added = grown.items[10:]
    assert len(added) == 6 and not set(added) & set(first.items)
    assert added == grow_items(first.frame, first.items, 16, [3, 1])
    record = json.loads((folder / SAMPLE_FILE).read_text())
    [growth] = record["grown"]
    assert (growth["step"], growth["n_before"], growth["n"], growth["entropy"],
            growth["added"]) == (1, 10, 16, [3, 1], added)
    assert "default_rng(entropy)" in growth["method"]
    stored = read_sample(folder)
    assert stored is not None and redraw_items(stored) == stored.items  # anyone can check
    # the first sheet is left alone; the new items have a sheet of their own
    assert (folder / SHEET_FILES[1]).read_text() == "someone's work in progress"
    new_sheet = sheet_names(1)
    with (folder / new_sheet[1]).open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 6 * 2 * 2 and {r["item"] for r in rows} == set(added)
    page = (folder / new_sheet[2]).read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert f'"file": "labels-{folder.name}-3-grow1.jsonl"' in page  # its own download
    assert len((folder / new_sheet[0]).read_text().splitlines()) == 24
    # the labels already imported stay random; the new ones are random too
    _label(folder, new_sheet[1], tmp_path / "more.csv")
    labels = read_labels(folder)
    assert len(labels) == 16 * 2 * 2 and all(x.random for x in labels)
    found = corrected_accuracy(Benchmark.load(folder))
    assert found is not None
    assert {a.corrected.labelled for a in found.arms} == {16}
    # asked again with the grown n: found, nothing drawn
    again, drawn = sample_run(Benchmark.load(folder), 16)
    assert not drawn and again.items == grown.items


def test_a_sample_only_grows_and_says_how(folder: Path) -> None:
    sample_run(Benchmark.load(folder), 10, seed=3)
    with pytest.raises(HumanLabelError, match=r"already has a sample \(10 items, seed 3\).*"
                                              r"grow it with `--n 12 --grow`"):
        sample_run(Benchmark.load(folder), 12)
    with pytest.raises(HumanLabelError, match=r"--n 8 --grow: the sample already asks for "
                                              r"10 items; a sample only grows"):
        sample_run(Benchmark.load(folder), 8, grow=True)
    with pytest.raises(HumanLabelError, match=r"drawn with seed 3, not 4"):
        sample_run(Benchmark.load(folder), 12, seed=4, grow=True)
    whole, _ = sample_run(Benchmark.load(folder), 40, grow=True)
    assert sorted(whole.items) == sorted(whole.frame)
    with pytest.raises(HumanLabelError, match=r"already holds every item of its frame \(40\)"):
        sample_run(Benchmark.load(folder), 41, grow=True)
    twice = read_sample(folder)
    assert twice is not None and [g.step for g in twice.grown] == [1]


def test_hr_label_sample_grow(folder: Path, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = hr(capsys, "label", "sample", folder, "--n", "10", "--seed", "3")
    assert code == 0, out
    _label(folder, SHEET_FILES[1], tmp_path / "first.csv")  # a pilot
    code, out, _ = hr(capsys, "plan", folder, "--label-width", "0.4")
    text = " ".join(out.split())
    assert code == 0, out
    assert "the run's sample has 10: grow it with hr label sample" in text and "--grow" in text
    code, out, err = hr(capsys, "label", "sample", folder, "--n", "16")
    assert code != 0 and "--grow" in " ".join((out + err).split())
    code, out, _ = hr(capsys, "label", "sample", folder, "--n", "16", "--grow")
    text = " ".join(out.split())
    assert code == 0, out
    assert "Grew the sample from 10 to 16 of 40 items: 6 new ones drawn uniformly" in text
    assert "label_sheet_grow1.html" in text and "label_sheet_grow1.csv" in text


def _chi_square(counts: Counter, cells: int, total: int) -> float:
    expected = total / cells
    return sum((counts.get(c, 0) - expected) ** 2 / expected for c in range(cells))


def test_the_grown_sample_is_a_uniform_sample_of_its_size() -> None:
    """Every 4 of 6 items is the union of a draw of 2 and a growth to 4 with probability
    1 / C(6, 4) = 1/15 (docs/statistics.md, "Growing a sample"); 6,000 seeded draws give a
    chi-square on 14 degrees of freedom under its 0.999 quantile (36.12), fixed seeds so
    the same figure every time. Growing by the frame's first items left (not random)
    fails the same check."""
    frame = [f"q{i}" for i in range(6)]
    subsets = {frozenset(c): i for i, c in enumerate(combinations(frame, 4))}
    assert len(subsets) == math.comb(6, 4) == 15
    draws = 6000
    grown: Counter = Counter()
    biased: Counter = Counter()
    for seed in range(draws):
        first = draw_items(frame, 2, seed)
        grown[subsets[frozenset(first + grow_items(frame, first, 4, [seed, 1]))]] += 1
        rest = [f for f in frame if f not in first]
        biased[subsets[frozenset(first + rest[:2])]] += 1
    assert _chi_square(grown, 15, draws) < 36.12
    assert _chi_square(biased, 15, draws) > 36.12
    # and each item is in the sample 4/6 of the time
    share = Counter(i for s, n in grown.items() for i in
                    next(k for k, v in subsets.items() if v == s) for _ in range(n))
    assert all(abs(share[f] / draws - 4 / 6) < 0.03 for f in frame)
