"""Regression checks: paired differences per arm, and finding the previous run."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from hr_core.analysis.regression import compare_runs, find_previous_run, spec_fingerprint
from hr_core.stats.accuracy import item_accuracy

ITEMS = [f"q{i}" for i in range(20)]


def _runs(correct_by_arm: dict[str, list[bool | None]], runs: int = 1) -> pd.DataFrame:
    rows = [
        {"arm": arm, "item_id": item, "run": r, "correct": ok}
        for arm, oks in correct_by_arm.items()
        for item, ok in zip(ITEMS, oks, strict=True)
        for r in range(1, runs + 1)
    ]
    frame = pd.DataFrame(rows)
    frame["correct"] = frame["correct"].astype("boolean")
    return frame


def test_an_arm_that_got_worse_is_a_regression_and_the_other_is_not() -> None:
    before = _runs({"good": [True] * 20, "steady": [True] * 10 + [False] * 10})
    after = _runs({"good": [True] * 8 + [False] * 12, "steady": [True] * 10 + [False] * 10})
    report = compare_runs(after, before, threshold=0.1, run_id="r2", previous_run_id="r1")
    by_arm = {a.arm: a for a in report.arms}
    assert by_arm["good"].status == "regression"
    assert by_arm["good"].diff == pytest.approx(-0.6)
    assert by_arm["good"].ci_high is not None and by_arm["good"].ci_high < 0
    assert by_arm["steady"].status == "no_change"
    assert [a.arm for a in report.regressions] == ["good"]
    assert report.regressed
    assert "| good | regression | 20 | 1.000 | 0.400 | -0.600 |" in report.to_markdown()


def test_equal_runs_show_no_regression() -> None:
    runs = _runs({"a": [True, False] * 10, "b": [True] * 20})
    report = compare_runs(runs, runs.copy())
    assert not report.regressed
    assert {a.status for a in report.arms} == {"no_change"}
    assert all(a.diff == 0 for a in report.arms)
    assert report.to_markdown().startswith("# Regression check: no regression\n")


def test_a_significant_drop_smaller_than_the_threshold_is_not_a_regression() -> None:
    before = _runs({"a": [True] * 20})
    after = _runs({"a": [False] * 6 + [True] * 14})
    report = compare_runs(after, before, threshold=0.35)
    assert report.arms[0].diff == pytest.approx(-0.3)
    assert report.arms[0].ci_high is not None and report.arms[0].ci_high < 0
    assert report.arms[0].status == "no_change"
    assert compare_runs(after, before, threshold=0.2).arms[0].status == "regression"


def test_a_better_arm_is_an_improvement() -> None:
    before = _runs({"a": [False] * 20})
    after = _runs({"a": [True] * 15 + [False] * 5})
    assert compare_runs(after, before).arms[0].status == "improvement"


def test_only_items_scored_in_both_runs_are_paired() -> None:
    before = _runs({"a": [None] * 5 + [True] * 15})
    after = _runs({"a": [False] * 5 + [True] * 15})
    change = compare_runs(after, before).arms[0]
    assert change.n_items == 15
    assert change.status == "no_change"


def test_an_arm_in_only_one_run_is_not_comparable() -> None:
    before = _runs({"a": [True] * 20})
    after = _runs({"a": [True] * 20, "new": [False] * 20})
    statuses = {a.arm: a.status for a in compare_runs(after, before).arms}
    assert statuses == {"a": "no_change", "new": "not_comparable"}


def test_item_accuracy_averages_scored_runs_per_item() -> None:
    runs = _runs({"a": [True] * 10 + [None] * 10}, runs=2)
    runs.loc[(runs["item_id"] == "q0") & (runs["run"] == 2), "correct"] = False
    acc = item_accuracy(runs, "a")
    assert len(acc) == 10
    assert acc["q0"] == 0.5


@pytest.mark.parametrize("threshold", [-0.1, 1.0])
def test_a_threshold_outside_zero_to_one_is_refused(threshold: float) -> None:
    runs = _runs({"a": [True] * 20})
    with pytest.raises(ValueError, match="threshold"):
        compare_runs(runs, runs, threshold=threshold)


def _write_manifest(root: Path, run_id: str, **fields: object) -> None:
    manifest = {
        "name": "demo",
        "run_id": run_id,
        "reference_hash": "ref1",
        "arms": {"a": "pkg.mod:arm"},
        "scorer": "exact",
        "status": "completed",
        "started_at": f"2026-11-{run_id[-2:]}T02:00:00+00:00",
    }
    manifest.update(fields)
    (root / run_id).mkdir(parents=True)
    (root / run_id / "manifest.json").write_text(json.dumps(manifest))


def test_the_previous_run_is_the_latest_completed_run_of_the_same_name_whatever_changed(
    tmp_path: Path,
) -> None:
    """Before (the lookup kept runs of the same spec fingerprint): run-11, every run with
    another reference or arm left out, so an edited arm compared with nothing."""
    root = tmp_path / "results" / "demo"
    _write_manifest(root, "run-10")
    _write_manifest(root, "run-11")
    _write_manifest(root, "run-12", status="failed")
    _write_manifest(root, "run-13", reference_hash="ref2")
    _write_manifest(root, "run-14", arms={"a": "pkg.mod:other_arm"})
    _write_manifest(root, "run-16")
    (root / "run-15").mkdir()
    (root / "run-15" / "manifest.json").write_text("{not json")
    current = json.loads((root / "run-16" / "manifest.json").read_text())
    current["started_at"] = "2026-11-15T02:00:00+00:00"
    found = find_previous_run(str(root), current)
    assert found is not None
    assert found.manifest["run_id"] == "run-14"
    assert Path(found.run_dir) == root / "run-14"
    _write_manifest(root, "run-17", status="interrupted", started_at="2026-11-14T12:00:00Z")
    _write_manifest(root, "run-18", status="running", started_at="2026-11-14T13:00:00Z")
    _write_manifest(root, "run-19", name="Demo", started_at="2026-11-14T14:00:00Z")
    found = find_previous_run(str(root), {**current, "name": "demo"})
    assert found is not None and found.manifest["run_id"] == "run-14"


def _write_run(root: Path, run_id: str, started: str, *, name: str = "nightly",
               status: str = "completed", code: str = "s1") -> None:
    """A finished run folder as the store holds it: manifest and runs table."""
    from hr_core.analysis.benchmark import runs_frame

    folder = root / name / run_id
    folder.mkdir(parents=True)
    rows = [{"arm": "steady", "item_id": item, "run": 1, "correct": True} for item in ITEMS]
    runs_frame(rows).to_parquet(folder / "runs.parquet", index=False)
    manifest = {"name": name, "run_id": run_id, "status": status, "started_at": started,
                "reference_hash": "ref1", "scorer": "exact", "n_items": len(ITEMS),
                "arms": {"steady": {"kind": "python", "path": f"drift_arms:{code}",
                                    "source_sha256": code}}}
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_the_regression_task_compares_an_edited_arm_with_the_latest_completed_run(
    tmp_path: Path,
) -> None:
    """Before: ``None`` (compared with nothing), the arm's new code excluding every run."""
    from tasks.regression import check_regression

    store = tmp_path / "results"
    _write_run(store, "run-01", "2026-11-01T02:00:00Z")
    _write_run(store, "run-02", "2026-11-02T02:00:00Z")
    _write_run(store, "run-03", "2026-11-03T02:00:00Z", status="interrupted")
    _write_run(store, "run-04", "2026-11-04T02:00:00Z", name="other")
    _write_run(store, "run-05", "2026-11-05T02:00:00Z", code="s2")
    report = check_regression.fn(str(store / "nightly" / "run-05"))
    assert report is not None
    assert (report.run_id, report.previous_run_id) == ("run-05", "run-02")
    assert report.previous_run_dir is not None
    assert Path(report.previous_run_dir) == store / "nightly" / "run-02"
    assert check_regression.fn(str(store / "nightly" / "run-01")) is None  # the first run
    assert check_regression.fn(str(store / "other" / "run-04")) is None


def test_no_previous_run_when_the_store_has_none(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    _write_manifest(root, "run-10")
    only = json.loads((root / "run-10" / "manifest.json").read_text())
    assert find_previous_run(str(root), only) is None
    assert find_previous_run(str(tmp_path / "missing"), only) is None


def test_the_fingerprint_ignores_run_details_but_not_the_spec() -> None:
    base = {"reference_hash": "r", "arms": {"a": 1}, "scorer": "exact"}
    assert spec_fingerprint(base) == spec_fingerprint({**base, "run_id": "x", "status": "y"})
    assert spec_fingerprint(base) != spec_fingerprint({**base, "arms": {"a": 2}})


def test_runs_a_budget_stopped_are_left_out_of_the_comparison() -> None:
    before = _runs({"a": [True] * 20})
    after = _runs({"a": [True] * 10 + [False] * 10})
    after["failure_kind"] = [None] * 10 + ["budget_stop"] * 10
    change = compare_runs(after, before).arms[0]
    assert (change.n_items, change.status, change.diff) == (10, "no_change", 0.0)


def test_no_regression_is_flagged_from_two_items() -> None:
    """Before: 2 items right then wrong gave CI [-1, -1], p = 0 and a regression."""
    before = _runs({"a": [True] * 2 + [None] * 18})
    after = _runs({"a": [False] * 2 + [None] * 18})
    change = compare_runs(after, before).arms[0]
    assert (change.n_items, change.status) == (2, "too_few_items")
    assert change.ci_low == -1.0 and change.ci_high is not None and change.ci_high > 0
    assert change.p_value == 0.5
    assert not compare_runs(after, before).regressed
    assert "| a | too few items to tell | 2 |" in compare_runs(after, before).to_markdown()


def test_the_regression_accuracy_is_the_summary_accuracy() -> None:
    from hr_core import Benchmark
    from hr_core.analysis.benchmark import runs_frame

    kinds = [None] * 12 + ["budget_stop"] * 4 + ["wrong"] * 4
    runs = runs_frame([{"arm": "a", "item_id": item, "run": 1, "correct": kind is None,
                        "failure_kind": kind} for item, kind in zip(ITEMS, kinds, strict=True)])
    change = compare_runs(runs, runs).arms[0]
    summary = Benchmark(runs, {}).summary().iloc[0]
    assert change.accuracy == summary["accuracy"] == 0.75


def test_the_previous_run_is_found_in_an_fsspec_store() -> None:
    import fsspec

    fs = fsspec.filesystem("memory")
    for run_id, started in (("r1", "2026-11-01T02:00:00Z"), ("r2", "2026-11-02T02:00:00Z")):
        manifest = {"run_id": run_id, "reference_hash": "h", "arms": {}, "scorer": "exact",
                    "status": "completed", "started_at": started}
        fs.pipe(f"/hr-test-store/demo/{run_id}/manifest.json", json.dumps(manifest).encode())
    current = {"run_id": "r3", "reference_hash": "h", "arms": {}, "scorer": "exact",
               "started_at": "2026-11-03T02:00:00Z"}
    found = find_previous_run("memory://hr-test-store/demo", current)
    assert found is not None
    assert found.manifest["run_id"] == "r2"
    assert found.run_dir.startswith("memory://") and found.run_dir.endswith("/demo/r2")
    fs.rm("/hr-test-store", recursive=True)


def test_runs_started_in_the_same_second_go_by_the_latest_written_manifest(
    tmp_path: Path,
) -> None:
    import os

    root = tmp_path / "demo"
    same = {"started_at": "2026-11-29T21:33:02Z", "ended_at": "2026-11-29T21:33:02Z"}
    _write_manifest(root, "run-01", **same)
    _write_manifest(root, "run-02", **same)
    os.utime(root / "run-01" / "manifest.json", (2_000_000_000, 2_000_000_000))
    os.utime(root / "run-02" / "manifest.json", (1_000_000_000, 1_000_000_000))
    current = {**json.loads((root / "run-01" / "manifest.json").read_text()),
               "run_id": "run-03", "started_at": "2026-11-29T21:33:03Z"}
    found = find_previous_run(str(root), current)
    assert found is not None and found.manifest["run_id"] == "run-01"


def test_runs_in_the_same_second_go_by_their_microseconds_not_the_write_time(
    tmp_path: Path,
) -> None:
    import os

    root = tmp_path / "demo"
    _write_manifest(root, "run-01", started_at="2026-11-29T21:33:02.100000Z")
    _write_manifest(root, "run-02", started_at="2026-11-29T21:33:02.900000Z")
    os.utime(root / "run-01" / "manifest.json", (2_000_000_000, 2_000_000_000))
    os.utime(root / "run-02" / "manifest.json", (1_000_000_000, 1_000_000_000))
    current = {**json.loads((root / "run-01" / "manifest.json").read_text()),
               "run_id": "run-03", "started_at": "2026-11-29T21:33:03.000001Z"}
    found = find_previous_run(str(root), current)
    assert found is not None and found.manifest["run_id"] == "run-02"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [("2026-11-29T21:33:02Z", "2026-11-29T21:33:02.500000Z", "run-new"),
     ("2026-11-29T21:33:03Z", "2026-11-29T21:33:02.500000Z", "run-old"),
     ("2026-11-29T22:33:02+01:00", "2026-11-29T21:33:02.500000Z", "run-new")],
)
def test_old_second_times_and_new_microsecond_times_compare_as_instants(
    tmp_path: Path, old: str, new: str, expected: str,
) -> None:
    root = tmp_path / "demo"
    _write_manifest(root, "run-old", started_at=old)
    _write_manifest(root, "run-new", started_at=new)
    current = {**json.loads((root / "run-old" / "manifest.json").read_text()),
               "run_id": "run-now", "started_at": "2026-11-29T21:40:00.000000Z"}
    found = find_previous_run(str(root), current)
    assert found is not None and found.manifest["run_id"] == expected


def test_a_drop_that_is_significant_alone_is_not_a_regression_across_three_arms() -> None:
    """Each of three arms loses 6 of 40 items: alone its interval is below zero (worse), but
    made at the Bonferroni-corrected level over the three arms it covers zero, so no arm
    regressed (the Holm step that did this is gone: the correction is the comparison's)."""
    import pandas as pd

    from hr_core.analysis.regression import compare_runs

    def table(arms: list[str], drop: bool) -> pd.DataFrame:
        rows = [{"arm": arm, "item_id": f"q{i}", "failure_kind": None,
                 "correct": not (drop and i < 6)} for arm in arms for i in range(40)]
        frame = pd.DataFrame(rows)
        frame["correct"] = frame["correct"].astype("boolean")
        return frame

    three = compare_runs(table(["a", "b", "c"], True), table(["a", "b", "c"], False))
    assert [a.status for a in three.arms] == ["no_change"] * 3
    arm = three.arms[0]
    assert arm.decision == "no detectable change" and arm.method.endswith("Bonferroni over 3")
    assert arm.ci_low is not None and arm.ci_high is not None and arm.ci_low < 0 < arm.ci_high
    assert arm.p_value is not None and 0.05 / 3 <= arm.p_value < 0.05
    one = compare_runs(table(["a"], True), table(["a"], False))
    assert one.arms[0].status == "regression"
