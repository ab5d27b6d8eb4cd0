"""Accuracy by slice: spec and plan, the slice table, the report, hr diff, the regression check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from cli_support import hr
from pydantic import ValidationError

from hr_core import BenchmarkSpec, SpecError, diff_runs
from hr_core.analysis.benchmark import SUMMARY_COLUMNS
from hr_core.analysis.regression import compare_runs
from hr_core.run.session import BenchmarkSession, plan_benchmark
from hr_core.stats import TOO_FEW_ITEMS, accuracy_interval
from hr_core.stats.slices import MISSING_SLICE, slice_values


def _items() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for i in range(30):
        item: dict[str, Any] = {"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}"}
        if i < 24:
            item["kind"] = "even" if i % 2 == 0 else "odd"
        elif i == 24:
            item["kind"] = "rare"  # a slice of one item
        items.append(item)  # q25..q29: no kind at all
    return items


def right_on_even(payload: dict[str, Any]) -> str:
    n = int(payload["question"][1:])
    return f"a{n}" if n % 2 == 0 else "no"


def always_right(payload: dict[str, Any]) -> str:
    return f"a{payload['question'][1:]}"


def _run(store: Path, arm: Any, **options: Any) -> Any:
    plan = plan_benchmark({"x": arm}, _items(), store=str(store), fresh=True, **options)
    return BenchmarkSession(plan).run_sync()


def test_slices_are_recorded_but_do_not_change_the_run_id() -> None:
    plain = plan_benchmark({"x": right_on_even}, _items(), store="/tmp/unused")
    sliced = plan_benchmark({"x": right_on_even}, _items(), store="/tmp/unused",
                            slices=["kind"])
    assert plain.run_id == sliced.run_id
    assert (plain.slices, sliced.slices) == ([], ["kind"])
    spec = BenchmarkSpec.model_validate({"reference": "r.jsonl", "arms": {"a": "m:f"}})
    assert spec.slices is None and "slices" not in spec.model_dump(exclude_none=True)


def test_bad_slices_are_named_in_one_line() -> None:
    with pytest.raises(SpecError, match=r"no item has the field 'knd'.*kind"):
        plan_benchmark({"x": right_on_even}, _items(), store="/tmp/unused", slices=["knd"])
    with pytest.raises(ValidationError, match=r"slices\n.*valid list"):
        BenchmarkSpec.model_validate({"reference": "r.jsonl", "arms": {"a": "m:f"},
                                      "slices": "kind"})
    with pytest.raises(ValidationError, match="at most 8"):
        BenchmarkSpec.model_validate({"reference": "r.jsonl", "arms": {"a": "m:f"},
                                      "slices": [f"f{i}" for i in range(9)]})


def test_the_slice_table_has_a_missing_slice_and_says_when_a_slice_is_too_small(
        tmp_path: Path) -> None:
    bench = _run(tmp_path, right_on_even, slices=["kind"])
    assert bench.manifest["slices"] == ["kind"]
    assert list(bench.summary().columns) == list(SUMMARY_COLUMNS)  # the summary as it was
    table = bench.slice_summary().set_index("value")
    assert table.loc["even", "accuracy"] == 1.0 and table.loc["odd", "accuracy"] == 0.0
    assert table.loc[MISSING_SLICE, "items"] == 5
    assert table.loc[MISSING_SLICE, "accuracy"] == pytest.approx(2 / 5)  # q26, q28
    assert table.loc["rare", "items"] == 1 and table.loc["rare", "note"] == TOO_FEW_ITEMS
    assert table.loc["even", "note"] == ""
    expected = accuracy_interval([1] * 12, [1] * 12)
    assert (table.loc["even", "ci_low"], table.loc["even", "ci_high"]) == (
        expected.low, expected.high)
    stored = pd.read_parquet(Path(bench.run_dir) / "summary_slices.parquet")
    pd.testing.assert_frame_equal(stored, bench.slice_summary())
    page = (Path(bench.run_dir) / "report.html").read_text()
    assert 'id="slices"' in page and "(missing)" in page and TOO_FEW_ITEMS in page


def test_hr_summary_prints_the_slice_table(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    bench = _run(tmp_path, right_on_even, slices=["kind"])
    code, out, err = hr(capsys, "summary", bench.run_dir)
    assert code == 0, err
    assert "Accuracy by slice" in out and "(missing)" in out and "rare" in out


def test_hr_diff_and_the_regression_check_compare_each_slice(tmp_path: Path) -> None:
    before = _run(tmp_path / "a", always_right, slices=["kind"])
    after = _run(tmp_path / "b", right_on_even, slices=["kind"])
    arm = diff_runs(before.run_dir, after.run_dir).arms[0]
    rows = {r.value: r for r in arm.slices}
    assert rows["odd"].verdict == "worse" and rows["odd"].diff == -1.0
    assert rows["even"].verdict == "no detectable change"
    assert rows["rare"].verdict == "too few items" and rows["rare"].n_items == 1
    assert rows[MISSING_SLICE].n_items == 5
    values = slice_values(((i["id"], i) for i in _items()), ["kind"])
    report = compare_runs(after.runs, before.runs, slices=values)
    by_value = {s.value: s for s in report.arms[0].slices}
    assert by_value["odd"].verdict == "worse" and by_value["rare"].verdict == "too few items"
    markdown = report.to_markdown()
    assert "## By slice" in markdown and "| x | kind | odd | 12 | -1.000 |" in markdown


def test_a_spec_file_with_slices_plans_them_under_the_run_id_of_the_spec_without(
        tmp_path: Path) -> None:
    from flows.benchmark import plan_from_spec

    (tmp_path / "ref.jsonl").write_text("".join(json.dumps(i) + "\n" for i in _items()))
    spec = "reference: ref.jsonl\narms:\n  x: hr_core.examples.demo_arms:number_extractor\n"
    (tmp_path / "plain.yaml").write_text(spec)
    (tmp_path / "sliced.yaml").write_text(spec + "slices: [kind]\n")
    plain = plan_from_spec(tmp_path / "plain.yaml", store=str(tmp_path))
    sliced = plan_from_spec(tmp_path / "sliced.yaml", store=str(tmp_path))
    assert sliced.slices == ["kind"] and plain.slices == []
    assert sliced.run_id == plain.run_id


def test_a_rescored_run_keeps_its_slices(tmp_path: Path) -> None:
    from hr_core.run.rescore import rescore_run

    bench = _run(tmp_path, right_on_even, slices=["kind"])
    again = rescore_run(bench.run_dir, "includes")
    assert again.manifest["slices"] == ["kind"]
    assert (Path(again.run_dir) / "summary_slices.parquet").is_file()


def _two_arms(store: Path) -> Any:
    plan = plan_benchmark({"right": always_right, "even": right_on_even}, _items(),
                          store=str(store), fresh=True, slices=["kind"])
    return BenchmarkSession(plan).run_sync()


def test_each_slice_compares_each_arm_with_the_best_arm_bonferroni_corrected(
        tmp_path: Path) -> None:
    from hr_core.stats import compare_paired

    bench = _two_arms(tmp_path)
    table = bench.slice_summary()
    rows = {(r["value"], r["arm"]): r for r in table.to_dict("records")}
    assert set(table["vs"]) == {"right"}  # the verdict's best arm
    assert rows[("odd", "right")]["verdict"] == "" and rows[("odd", "right")]["paired"] == 0
    odd = rows[("odd", "even")]
    ids = [f"q{i}" for i in range(1, 24, 2)]
    # the family: one pair of arms in each value with >= MIN_ITEMS paired items (even, odd)
    expected = compare_paired(bench.item_accuracy("even")[ids].tolist(),
                              bench.item_accuracy("right")[ids].tolist(), family_size=2)
    assert (odd["diff"], odd["diff_low"], odd["diff_high"], odd["p_value"], odd["paired"]) == (
        expected.estimate, expected.low, expected.high, expected.p_value, 12)
    even = rows[("even", "even")]
    assert odd["family"] == 2 and odd["level"] == even["level"] == pytest.approx(0.975)
    assert odd["verdict"] == "worse" and even["verdict"] == "no detectable change"
    # a single-item slice and the items without the key: no verdict, not in the family
    for value, n in (("rare", 1), (MISSING_SLICE, 5)):
        row = rows[(value, "even")]
        assert row["verdict"] == "too few items" and row["paired"] == n
    stored = pd.read_parquet(Path(bench.run_dir) / "summary_slices.parquet")
    pd.testing.assert_frame_equal(stored, table)


def test_the_report_the_markdown_and_hr_summary_show_the_slice_comparison(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = _two_arms(tmp_path)
    run = Path(bench.run_dir)
    page = (run / "report.html").read_text()
    section = page[page.index('id="slices"'):page.index('id="outcomes"')]
    assert "-100.0 points" in section and "worse" in section
    assert "Bonferroni over the 2 comparisons of this field" in section
    assert section.count(TOO_FEW_ITEMS) >= 2  # rare and (missing), as note and verdict
    markdown = (run / "report.md").read_text()
    assert "## By slice" in markdown and "Bonferroni over the 2 comparisons" in markdown
    assert "| odd | even | 12 | 0.0% (" in markdown and ": worse |" in markdown
    table = markdown[markdown.index("## By slice"):].splitlines()
    at = [i for i, line in enumerate(table) if line.startswith("| odd")]
    assert [table[i].split(" | ")[1] for i in at] == ["right", "even"]
    assert at[1] == at[0] + 1  # a value's arms together
    assert "| rare | even | 1 | 100.0% (" in markdown
    code, out, err = hr(capsys, "summary", bench.run_dir)
    assert code == 0, err
    assert "vs best" in out and "Bonferroni" in out and "worse" in out


def test_a_slice_table_without_comparisons_still_renders(tmp_path: Path) -> None:
    from hr_core.report import ReportInputs, render_report

    bench = _two_arms(tmp_path)
    old = bench.slice_summary().iloc[:, :8]  # a table written before the comparison
    page = render_report(ReportInputs(bench.manifest, bench.stat_runs(), bench.summary(),
                                      slices=old))
    assert "has no paired comparisons" in page and "points" not in page.split(
        'id="slices"')[1].split("</section>")[0]
