"""The nightly regression check is ``hr diff`` plus a policy (issue 32 item 4): one
computation, so the regression artifact, the diff page and the terminal show the same
figures and the check's status is the diff's decision under the threshold."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pytest
from test_diff import ITEMS, _run, all_right, first_five, first_sixteen

from hr_core import diff_runs
from hr_core.analysis.diff import RunDiff
from hr_core.analysis.regression import ArmChange, RegressionReport, compare_runs, regression_check

_EXPECTED_STATUS = {"worse": "regression", "better": "improvement",
                    "too few items": "too_few_items"}


def _agrees(change: ArmChange, arm_diff: object, threshold: float) -> None:
    """The regression row shows the diff's figures, and its status is the diff's decision
    under the threshold."""
    from hr_core.analysis.diff import ArmDiff

    assert isinstance(arm_diff, ArmDiff)
    assert change.arm == arm_diff.label
    assert (change.previous_accuracy, change.accuracy, change.n_items) == (
        arm_diff.accuracy_a, arm_diff.accuracy_b, arm_diff.n_items)
    assert (change.diff, change.ci_low, change.ci_high, change.p_value) == (
        arm_diff.diff, arm_diff.ci_low, arm_diff.ci_high, arm_diff.p_value)
    assert (change.decision, change.method) == (arm_diff.verdict, arm_diff.method)
    assert (change.right_to_wrong, change.wrong_to_right) == (
        arm_diff.right_to_wrong, arm_diff.wrong_to_right)
    expected = _EXPECTED_STATUS.get(arm_diff.verdict, "no_change")
    if expected in ("regression", "improvement") and abs(arm_diff.diff or 0) <= threshold:
        expected = "no_change"
    assert change.status == expected


def test_the_nightly_check_shows_hr_diffs_figures_and_decisions(tmp_path: Path) -> None:
    """The reference grew from 20 to 30 items between the runs. Before (compare_runs, its
    own pandas computation): the artifact's 'now' accuracy of ``drop`` was 0.250 (over the
    20 items in common) while ``hr diff`` of the same pair said 16.7% (its 30 items); the
    scheduled flow computed both. After: one diff, the check is its decisions."""
    from tasks.regression import check_regression

    first = _run(tmp_path, {"keep": all_right, "drop": all_right, "gain": first_five},
                 ITEMS[:20])
    second = _run(tmp_path, {"keep": all_right, "drop": first_five, "gain": all_right,
                             "new": all_right}, ITEMS)
    report = check_regression.fn(str(second.run_dir), threshold=0.1)
    assert report is not None and report.diff is not None
    assert report.previous_run_id == first.run_id and report.run_id == second.run_id
    shown = diff_runs(first.run_dir, second.run_dir)  # what `hr diff A B` computes
    assert [a.model_dump() for a in report.diff.arms] == [a.model_dump() for a in shown.arms]
    statuses = {a.arm: a.status for a in report.arms}
    assert statuses == {"keep": "no_change", "drop": "regression", "gain": "improvement",
                        "new": "not_comparable"}
    for change, arm_diff in zip(report.arms, shown.arms, strict=False):
        _agrees(change, arm_diff, 0.1)
    drop = next(a for a in report.arms if a.arm == "drop")
    assert drop.accuracy == pytest.approx(5 / 30)  # the diff's (and the summary's) figure
    assert "| drop | regression | 20 | 1.000 | 0.167 | -0.750 |" in report.to_markdown()
    assert report.diff_page is not None and Path(report.diff_page).is_file()


@pytest.mark.parametrize(("then", "now", "threshold"), [
    ({"a": all_right, "b": first_sixteen}, {"a": first_sixteen, "b": all_right}, 0.05),
    ({"a": all_right, "b": all_right}, {"a": first_five, "b": all_right}, 0.05),
    ({"a": all_right, "b": all_right}, {"a": first_five, "b": all_right}, 0.9),
    ({"a": first_five}, {"a": first_five}, 0.0),
])
def test_each_arms_status_is_the_diffs_decision_under_the_threshold(
        tmp_path: Path, then: dict[str, object], now: dict[str, object],
        threshold: float) -> None:
    before = _run(tmp_path / "a", then, ITEMS[:20])
    after = _run(tmp_path / "b", now, ITEMS[:20])
    found = diff_runs(before.run_dir, after.run_dir)
    report = regression_check(found, threshold=threshold)
    assert len(report.arms) == len(found.arms)
    for change, arm_diff in zip(report.arms, found.arms, strict=True):
        _agrees(change, arm_diff, threshold)
    assert report.regressed == any(
        a.verdict == "worse" and -(a.diff or 0) > threshold for a in found.arms)


def test_regression_check_refuses_a_threshold_outside_zero_to_one() -> None:
    from hr_core.analysis.diff import ReferenceDiff

    same = ReferenceDiff(hash_a="h", hash_b="h", items_a=1, items_b=1, common=1, added=0,
                         removed=0, changed=0)
    empty = RunDiff(run_a="a", run_b="b", id_a="a", id_b="b", level=0.95, changes=[],
                    reference=same, arms=[], flips=[], flips_per_arm=0)
    with pytest.raises(ValueError, match="threshold"):
        regression_check(empty, threshold=1.0)
    assert isinstance(regression_check(empty), RegressionReport)


def test_compare_runs_is_a_deprecated_alias_of_the_diff_and_the_policy() -> None:
    rows = [{"arm": "a", "item_id": f"q{i}", "run": 1, "correct": True} for i in range(20)]
    before = pd.DataFrame(rows).astype({"correct": "boolean"})
    after = before.assign(correct=pd.array([i >= 12 for i in range(20)], dtype="boolean"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = compare_runs(after, before, run_id="r2", previous_run_id="r1")
    assert any(issubclass(w.category, DeprecationWarning) and "regression_check" in
               str(w.message) for w in caught)
    assert report.diff is not None and (report.run_id, report.previous_run_id) == ("r2", "r1")
    assert [a.status for a in report.arms] == ["regression"]
    _agrees(report.arms[0], report.diff.arms[0], 0.05)


FEW = [{"id": f"f{i}", "question": f"Q{i}", "label": f"a{i}"} for i in range(60)]


def eight_wrong(payload: dict[str, object]) -> str:
    n = int(str(payload["question"])[1:])
    return "n" if n % 7 == 0 and n < 56 else f"a{n}"


def test_hr_diff_of_a_stop_rule_run_shows_the_sequence_verdict_and_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Run b had a stop rule (it used every item, its sequence undecided on a vs b); arm b
    lost 8 of 60 items since run a. Before: hr diff applied the fixed-sample test to the
    items the rule used, 'worse' with [-25.2, -1.5], p 0.011 (exit 1), and the regression check
    called it a regression; neither said which kind of verdict it showed. After: the
    sequence's verdict, undecided, named as an anytime-valid confidence sequence in the
    terminal, the markdown and the HTML page, and the check agrees."""
    from cli_support import hr

    from hr_core.report.diff_html import write_diff_html

    then = _run(tmp_path / "a", {"a": all_right, "b": all_right}, FEW)
    now = _run(tmp_path / "b", {"a": all_right, "b": eight_wrong}, FEW,
               stop={"batch": 20, "min_items": 20})
    assert not now.manifest["sequential"]["stopped"]
    found = diff_runs(then.run_dir, now.run_dir)
    assert found.verdict_kind == "anytime-valid confidence sequence"
    arm = {a.label: a for a in found.arms}["b"]
    assert arm.diff == pytest.approx(-8 / 60)
    assert arm.verdict == "undecided" and arm.p_value is None
    assert arm.ci_low is not None and arm.ci_high is not None and arm.ci_low < 0 < arm.ci_high
    assert arm.method.startswith("anytime-valid confidence sequence")
    assert found.exit_status == 0
    change = {c.arm: c for c in regression_check(found).arms}["b"]
    assert (change.status, change.decision) == ("no_change", "undecided")
    assert "anytime-valid confidence sequence" in found.to_markdown()
    assert f"run b ({now.run_id}) used a stop rule (every item ran)" in found.verdict_text
    page = Path(write_diff_html(found, str(tmp_path / "diff.html"))).read_text()
    assert "anytime-valid confidence sequence" in page
    code, out, err = hr(capsys, "diff", str(then.run_dir), str(now.run_dir))
    assert code == 0, err
    text = " ".join(out.split())
    assert "Verdict: anytime-valid confidence sequence" in text and "undecided" in text
    plain = diff_runs(then.run_dir, then.run_dir)
    assert plain.verdict_kind == "fixed-sample paired test"
    assert plain.verdict_text.startswith("Verdict: fixed-sample paired test at 95%")
    assert "Verdict: fixed-sample paired test" in plain.to_markdown()


def test_a_stop_rule_run_against_itself_gives_its_own_sequence(tmp_path: Path) -> None:
    """The diff feeds the run's drawn order: arm b against arm a of one stop-rule run is the
    sequence the run monitored (mirrored: the run's is a - b)."""
    bench = _run(tmp_path, {"a": all_right, "b": eight_wrong}, FEW,
                 stop={"batch": 20, "min_items": 20})
    pair = bench.manifest["sequential"]["pairs"][0]
    assert (pair["arm"], pair["other"]) == ("a", "b")
    arm = diff_runs(bench.run_dir, bench.run_dir, arms={"a": "b"}).arms[0]
    assert arm.verdict == pair["decision"]
    assert (arm.ci_low, arm.ci_high) == pytest.approx((-pair["cs_high"], -pair["cs_low"]),
                                                      abs=1e-5)
