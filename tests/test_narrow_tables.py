"""Terminal tables fit the terminal's width (issue 32 item 5): ``COLUMNS`` is honoured, and a
table too wide leaves out its least important columns (named in one line) instead of
crushing every column."""

from __future__ import annotations

import pytest
from cli_support import hr
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from test_diff import _run, all_right, erring, first_five

from hr_cli.fit import fit_table


def _header(out: str, first: str) -> list[str]:
    """The words of the first table header line that starts with ``first``."""
    line = next(line for line in out.splitlines() if line.split()[:1] == [first])
    return line.split()


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    tmp = tmp_path_factory.mktemp("narrow")
    before = _run(tmp / "a", {"keyword": all_right, "numbers": erring, "reader": first_five})
    after = _run(tmp / "b", {"keyword": first_five, "numbers": all_right, "reader": erring})
    return str(before.run_dir), str(after.run_dir)


@pytest.mark.parametrize("width", [60, 120])
def test_hr_diff_fits_the_width_and_keeps_arm_difference_interval_and_verdict(
        two_runs: tuple[str, str], width: int, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Before: COLUMNS was ignored (piped output 140 wide: 60 of 104 lines wider than 60);
    forced to 60, rich crushed every column: the per-arm table lost its arm and verdict
    columns and showed '-83' and '[-100.0, -62'."""
    monkeypatch.setenv("COLUMNS", str(width))
    code, out, err = hr(capsys, "diff", *two_runs, "--limit", "2")
    assert code == 1, err
    assert max(cell_len(line) for line in out.splitlines()) <= width
    header = _header(out, "arm")
    assert {"arm", "diff", "CI", "verdict"} <= set(header)
    row = next(line for line in out.splitlines() if line.split()[:1] == ["keyword"])
    assert "-83.3" in row and "[-100.0, -62.4]" in row and "worse" in row
    hidden = [line for line in out.splitlines() if line.startswith("hidden to fit")]
    if width == 60:
        assert hidden and hidden[0].startswith("hidden to fit 60 columns: flips")
        assert "then" not in header
    else:
        assert {"then", "now", "items", "p"} <= set(header)


@pytest.mark.parametrize("width", [60, 120])
def test_hr_summary_fits_the_width_and_keeps_the_arm_its_accuracy_and_the_verdict(
        two_runs: tuple[str, str], width: int, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Before: 140 columns whatever COLUMNS said; crushed to 60, arm names read 'k…' and
    the accuracy '100.0% (88.4%–1…'."""
    monkeypatch.setenv("COLUMNS", str(width))
    code, out, err = hr(capsys, "summary", two_runs[0])
    assert code == 0, err
    assert max(cell_len(line) for line in out.splitlines()) <= width
    assert "accuracy (95% CI)" in out and "100.0% (88.4%–100.0%)" in out
    assert any(line.split()[:1] == ["keyword"] for line in out.splitlines())
    text = " ".join(out.split())
    assert "reader vs keyword: -83.3 points, 98.33% interval [-100.0, -62.4]" in text
    assert "over 30 items: worse" in text
    if width == 60:
        assert "hidden to fit 60 columns: spent now, cost, latency" in text


def test_fit_table_leaves_out_columns_in_the_order_given_and_never_the_others() -> None:
    table = Table("arm", "difference", "interval", "decision", "p", "latency")
    table.add_row("a-long-arm-name", "+12.5", "[+1.0, +24.0]", "no detectable change",
                  "0.031", "1200.0 ms")
    console = Console(width=200)
    assert fit_table(console, table, ["latency", "p"], width=200) == []
    assert fit_table(console, table, ["latency", "p"], width=40) == ["latency", "p"]
    assert [str(c.header) for c in table.columns] == ["arm", "difference", "interval",
                                                      "decision"]


def test_print_fitted_prints_the_kept_columns_whole_and_names_the_others() -> None:
    from io import StringIO

    from rich.table import Column

    from hr_cli.fit import print_fitted

    table = Table(*(Column(name, no_wrap=True) for name in
                    ("arm", "accuracy (95% CI)", "latency", "cost")))
    table.add_row("keyword", "100.0% (88.4%–100.0%)", "1200.0 ms", "$0.0100")
    stream = StringIO()
    console = Console(file=stream, width=40, color_system=None)
    assert print_fitted(console, table, ["cost", "latency"]) == ["cost", "latency"]
    text = stream.getvalue()
    assert "100.0% (88.4%–100.0%)" in text and "keyword" in text and "…" not in text
    assert max(cell_len(line) for line in text.splitlines()) <= 40
    assert "hidden to fit 40 columns: cost, latency" in " ".join(text.split())
