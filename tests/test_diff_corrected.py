"""hr diff of two judged runs with people's labels: each run's accuracy corrected (PPI++)
and the paired difference now - then corrected, on the terminal, markdown and HTML
(hr_core.judge.corrected_diff, hr_core.analysis.diff_corrected)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from cli_support import hr

from hr_core.analysis.benchmark import Benchmark
from hr_core.judge import hr_judge_config, hr_scorer_judge
from hr_core.judge.corrected_diff import diff_runs_corrected
from hr_core.judge.human_labels import SHEET_FILES, draw_items, import_labels, sample_run
from hr_core.run.session import BenchmarkSession, apply_judge_policy, plan_benchmark
from hr_core.stats import compare_estimate
from hr_core.stats.ppi import ppi_mean_ci

ITEMS = [{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}"} for i in range(40)]


def _then(payload: dict) -> str:
    n = int(payload["question"][1:])
    return f"a{n}" if n % 2 else "nope"  # right on odd items (the mock judge: exact match)


def _now(payload: dict) -> str:
    n = int(payload["question"][1:])
    return f"a{n}" if n % 4 else "nope"  # right on 3 items of 4


def _judge(run: str, n: int) -> bool:
    return bool(n % 2) if run == "then" else bool(n % 4)


def _people(run: str, n: int) -> bool:
    """People overrule the judge on items divisible by 3 of run 'then' (they call the
    answers there the other way round): the judge's difference is biased."""
    return (not _judge(run, n)) if (run == "then" and n % 3 == 0) else _judge(run, n)


def _run(store: Path, arm) -> Path:
    config = hr_judge_config("mock-model", "Is the response's answer the reference's?",
                             mode="grade")
    plan = plan_benchmark({"x": arm}, ITEMS, hr_scorer_judge(config), runs=2,
                          store=str(store), name="diffed")
    apply_judge_policy(plan, "ignore", str(store / "judges"))
    bench = BenchmarkSession(plan).run_sync()
    assert bench.run_dir is not None
    return Path(bench.run_dir)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    store = tmp_path_factory.mktemp("corrected-diff")
    return _run(store, _then), _run(store, _now)


def _label(folder: Path, run: str, n: int, seed: int) -> list[str]:
    """Sample ``n`` items with ``seed`` and import people's labels on every run of them."""
    sample, _ = sample_run(Benchmark.load(folder), n, seed=seed)
    with (folder / SHEET_FILES[1]).open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        row["label"] = "correct" if _people(run, int(row["item"][1:])) else "incorrect"
    path = folder / "done.csv"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    import_labels(Benchmark.load(folder), path)
    return sample.items


def _copies(runs: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    import shutil

    out = []
    for folder in runs:
        copy = tmp_path / folder.name
        shutil.copytree(folder, copy)
        out.append(copy)
    return out[0], out[1]


def test_the_corrected_difference_is_ppi_over_items_labelled_in_both(
        runs: tuple[Path, Path], tmp_path: Path) -> None:
    a, b = _copies(runs, tmp_path)
    sampled = _label(a, "then", 16, seed=5)
    assert _label(b, "now", 16, seed=5) == sampled  # one seed, one frame: the same items
    found = diff_runs_corrected(a, b)
    [row] = found.corrected
    # by hand: per item, now - then of people's values and of the judge's (both runs of
    # an item share its answer, so an item's share is its one verdict)
    d = np.array([_people("now", int(i[1:])) - _people("then", int(i[1:])) for i in sampled],
                 dtype=float)
    g = np.array([_judge("now", int(i[1:])) - _judge("then", int(i[1:])) for i in sampled],
                 dtype=float)
    rest = np.array([_judge("now", n) - _judge("then", n) for n in range(40)
                     if f"q{n}" not in sampled], dtype=float)
    est = ppi_mean_ci(d, g, rest, bounds=(-1.0, 1.0))
    expected = compare_estimate(est.estimate, est.se, 16, family_size=1, bounds=(-1.0, 1.0),
                                continuity=1 / 16)  # compare_paired's correction
    assert (row.diff, row.ci_low, row.ci_high, row.p_value) == pytest.approx(
        (expected.estimate, expected.low, expected.high, expected.p_value))
    assert row.se == pytest.approx(est.se) and row.lam == pytest.approx(est.lam)
    assert row.verdict == expected.decision and row.method.startswith("PPI++")
    assert (row.paired_items, row.judged_items) == (16, 24)
    alone = ppi_mean_ci(d, g, rest, lam=0.0)  # the labels alone, by the same comparison
    by_labels = compare_estimate(alone.estimate, alone.se, 16, bounds=(-1.0, 1.0),
                                 continuity=1 / 16)
    assert alone.estimate == pytest.approx(d.mean())
    assert row.labels_only == pytest.approx((by_labels.low, by_labels.high))
    # the judge's own difference is biased: the corrected one is not the judge's
    [arm] = found.arms
    assert arm.diff is not None and abs(row.diff - arm.diff) > 0.02
    assert row.then is not None and row.now is not None
    assert row.then.labels == 32 and row.now.labels == 32  # 16 items x 2 runs
    assert row.then.labelled_items == 16 and row.then.judged_items == 24
    # the judge's verdict and exit status are untouched
    assert found.exit_status == (1 if arm.verdict == "worse" else 0)


def test_independent_samples_pair_on_their_common_items(runs: tuple[Path, Path],
                                                        tmp_path: Path) -> None:
    a, b = _copies(runs, tmp_path)
    first = set(_label(a, "then", 20, seed=1))
    second = set(_label(b, "now", 20, seed=2))
    [row] = diff_runs_corrected(a, b).corrected
    assert row.paired_items == len(first & second) < 20
    assert row.judged_items == 40 - len(first & second)


def test_one_run_without_labels_says_what_to_label(runs: tuple[Path, Path],
                                                   tmp_path: Path) -> None:
    a, b = _copies(runs, tmp_path)
    _label(a, "then", 12, seed=9)
    [row] = diff_runs_corrected(a, b).corrected
    assert row.then is not None and row.now is None and row.diff is None
    assert row.note is not None and "run b has no random human label" in row.note
    assert "--n 12 --seed 9" in row.note  # run a's sample, to draw the same items
    sample_run(Benchmark.load(b), 12, seed=9)  # drawn, not labelled yet: label it
    [row] = diff_runs_corrected(a, b).corrected
    assert row.note is not None and "label its sample (seed 9) and `hr label import" in row.note
    a2, b2 = _copies(runs, tmp_path / "apart")
    first = _label(a2, "then", 3, seed=9)
    frame = [f"q{n}" for n in range(40)]
    seed = next(s for s in range(1000) if not set(draw_items(frame, 3, s)) & set(first))
    _label(b2, "now", 3, seed=seed)  # another seed: no item in common with run a's sample
    [row] = diff_runs_corrected(a2, b2).corrected
    assert row.then is not None and row.now is not None and row.diff is None
    assert row.note is not None and f"samples (seeds 9 and {seed}) share 0 item(s)" in row.note
    a2, b2 = _copies(runs, tmp_path / "none")
    assert diff_runs_corrected(a2, b2).corrected == []  # no labels anywhere: nothing shown


def test_hr_diff_shows_the_corrected_figures_on_every_page(
        runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _copies(runs, tmp_path)
    _label(a, "then", 16, seed=5)
    _label(b, "now", 16, seed=5)
    page = tmp_path / "diff.html"
    code, out, err = hr(capsys, "diff", a, b, "-o", page)
    assert code in (0, 1), out + err
    text = " ".join(out.split())
    [row] = diff_runs_corrected(a, b).corrected
    assert "Accuracy corrected by human labels (PPI++), 95% intervals:" in text
    assert f"now − then: {row.diff * 100:+.1f} points" in text
    assert "16 items labelled in both runs" in text
    html = page.read_text()
    assert 'id="table-corrected"' in html and f"{row.diff * 100:+.1f}" in html
    markdown = diff_runs_corrected(a, b).to_markdown()
    assert "### Accuracy corrected by human labels (PPI++)" in markdown
    assert "| x | " in markdown and "labels alone" in markdown
