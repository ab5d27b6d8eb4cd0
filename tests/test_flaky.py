"""Flaky items: with runs >= 2, an item whose runs disagree, per arm."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from cli_support import hr
from test_diff import _run, all_right, odd_runs_right

from hr_core.analysis.regression import compare_runs


def test_the_flaky_share_per_arm_is_in_the_summary_output_and_the_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = _run(tmp_path, {"steady": all_right, "flaky": odd_runs_right}, runs=3)
    shares = bench.flaky_summary().set_index("arm")
    assert shares.loc["steady", "flaky"] == 0
    assert shares.loc["flaky", "flaky"] == 10  # items 10-19: right on runs 1 and 3 only
    assert shares.loc["flaky", "flaky_share"] == pytest.approx(10 / 30)
    code, out, err = hr(capsys, "summary", bench.run_dir)
    assert code == 0, err
    assert "Flaky items (their runs disagree): steady 0% (0 of 30), flaky 33% (10 of 30)" in out
    page = (Path(bench.run_dir) / "report.html").read_text()
    section = page.split('id="flaky"', 1)[1].split("</section>", 1)[0]
    assert "table-flaky-" in section and ">q10<" in section and ">2/3<" in section
    assert ">q9<" not in section  # right on every run: stable


def test_one_run_per_item_has_no_flaky_item(tmp_path: Path) -> None:
    bench = _run(tmp_path, {"x": odd_runs_right}, runs=1)
    assert bench.flaky_summary()["flaky"].tolist() == [0]
    page = (Path(bench.run_dir) / "report.html").read_text()
    assert "One run per item: no item can be flaky" in page


def _table(outcomes: dict[str, list[bool]]) -> pd.DataFrame:
    rows = [{"arm": "a", "item_id": item, "run": run, "correct": ok}
            for item, oks in outcomes.items() for run, ok in enumerate(oks, start=1)]
    frame = pd.DataFrame(rows)
    frame["correct"] = frame["correct"].astype("boolean")
    return frame


def test_the_regression_check_counts_flips_on_flaky_items_apart() -> None:
    before = _table({**{f"s{i}": [True] * 3 for i in range(10)},
                     **{f"f{i}": [True, True, False] for i in range(4)}})
    after = _table({**{f"s{i}": [False] * 3 for i in range(3)},
                    **{f"s{i}": [True] * 3 for i in range(3, 10)},
                    **{f"f{i}": [False, True, False] for i in range(4)}})
    change = compare_runs(after, before).arms[0]
    assert (change.right_to_wrong, change.wrong_to_right) == (7, 0)
    assert change.flaky_flips == 4  # f0..f3 were flaky (2 of 3), now 1 of 3: flipped
    row = next(line for line in compare_runs(after, before).to_markdown().splitlines()
           if line.startswith("| a |"))
    assert row.endswith("| 7 / 0 | 4 |")
