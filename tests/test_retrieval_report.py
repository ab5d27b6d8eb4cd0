"""Contexts and retrieval figures where a user reads a run (issue 36 items 1 and 3): the
report (markdown and HTML), ``hr summary``, ``hr show`` and ``hr diff``."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from cli_support import hr
from rich.cells import cell_len
from rich.console import Console

from hr_cli.commands import show_summary
from hr_cli.show import show_run
from hr_core import ArmResult, Context, diff_runs
from hr_core.analysis.benchmark import Benchmark
from hr_core.report.markdown import report_markdown
from hr_core.run.session import BenchmarkSession, plan_benchmark
from hr_core.stats import clopper_pearson

ITEMS = [{"id": f"q{i}", "question": f"Q{i}", "label": f"a{i}", "gold_contexts": [f"p{i}"]}
         for i in range(8)]


def _number(payload: dict[str, Any]) -> int:
    return int(payload["question"][1:])


def _finds_half(payload: dict[str, Any]) -> ArmResult:
    """Retrieves the gold passage at rank 2 for even items, misses it for odd ones; answers
    right exactly when it found it."""
    n = _number(payload)
    found = n % 2 == 0
    return ArmResult(answer=f"a{n}" if found else "no idea", contexts=[
        Context(id="noise"), Context(id=f"p{n}" if found else "elsewhere", score=0.5)])


def _finds_all(payload: dict[str, Any]) -> ArmResult:
    n = _number(payload)
    return ArmResult(answer=f"a{n}", contexts=[Context(id=f"p{n}", score=0.9)])


def _run(tmp_path: Path, arms: dict[str, Any], name: str = "rag") -> Benchmark:
    plan = plan_benchmark(arms, ITEMS, store=str(tmp_path), name=name)
    return BenchmarkSession(plan).run_sync()


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> Benchmark:
    return _run(tmp_path_factory.mktemp("store"), {"half": _finds_half, "all": _finds_all})


def _printed(fn: Any, *args: Any, **kwargs: Any) -> str:
    out = io.StringIO()
    fn(Console(file=out, width=250, color_system=None), *args, **kwargs)
    return out.getvalue()


def test_the_markdown_report_has_a_retrieval_section_with_intervals(both: Benchmark) -> None:
    text = report_markdown(Benchmark.load(both.run_dir or ""))
    section = text[text.index("## Retrieval"):]
    assert "Relevance: gold passages" in section
    assert "| half | 8 | hit | 0.000 (0.000–0.369) | 0.500 (0.157–0.843) |" in section
    assert "| all | 8 | hit | 1.000 (0.631–1.000) |" in section
    assert "| half | 0.250 (" in section  # MRR: half of the items at rank 2
    assert "Paired differences, all − half:" in section
    assert "| hit@10 | +0.500 (" in section


def test_a_run_without_contexts_has_no_retrieval_section(tmp_path: Path) -> None:
    bench = _run(tmp_path, {"plain": lambda p: "a0"})
    assert "## Retrieval" not in report_markdown(bench)
    assert bench.retrieval_summary().empty and not bench.has_contexts


def test_hr_summary_prints_the_retrieval_table(both: Benchmark) -> None:
    printed = _printed(show_summary, both.run_dir)
    assert "Retrieval (relevance: gold passages; 95% CI)" in printed
    assert "0.250 (" in printed


HEADLINE = "half: of 4 failed answers, 4 (100%, 95% CI 40%–100%) never saw a gold passage"


@pytest.mark.parametrize("width", [60, 120])
def test_hr_summary_prints_why_it_failed_as_the_report_does_within_the_width(
        both: Benchmark, width: int, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Before: the terminal showed the Retrieval table but not the report's split of the
    failed runs; now its rows and line are the report's, in as many columns as there are."""
    monkeypatch.setenv("COLUMNS", str(width))
    code, out, err = hr(capsys, "summary", both.run_dir or "")
    assert code == 0, err
    assert max(cell_len(line) for line in out.splitlines()) <= width
    why = out[out.index("Why it failed"):]
    rows = {line.split()[-4]: line for line in why.splitlines()
            if line.rstrip().endswith("%)") and "CI" not in line}
    assert "4 (100%, 40%–100%)" in rows["miss"] and "0 (0%, 0%–60%)" in rows["error"]
    assert "0 (0%, 0%–60%)" in rows["evidence"]
    assert HEADLINE in " ".join(out.split())
    assert HEADLINE in " ".join(report_markdown(both).split())  # the same words and numbers
    html = (Path(both.run_dir or "") / "report.html").read_text("utf-8")
    assert HEADLINE in html
    if width == 120:
        header = next(line for line in why.splitlines() if "where it broke" in line)
        assert "failed" in header.split() and "MRR: half 0.250 (" in out


def test_hr_show_and_the_html_report_show_each_failed_runs_contexts(both: Benchmark) -> None:
    printed = _printed(show_run, both.run_dir, arm="half")
    assert "contexts" in printed and "noise, elsewhere (0.5)" in printed
    assert "why" in printed and "retrieval miss" in printed
    html = (Path(both.run_dir or "") / "report.html").read_text("utf-8")
    assert '>contexts</th>' in html
    assert "noise, elsewhere (0.5)" in html and ">why</th>" in html


def test_hr_diff_shows_the_contexts_of_the_flipped_items(tmp_path: Path) -> None:
    then = _run(tmp_path, {"rag": _finds_half})
    now = _run(tmp_path, {"rag": _finds_all})
    found = diff_runs(then, now)
    flip = next(f for f in found.flips if f.item_id == "q1")
    assert flip.direction == "wrong→right"
    assert flip.contexts_a == "noise, elsewhere (0.5)" and flip.contexts_b == "p1 (0.9)"
    assert r"no idea (wrong) ⟨noise, elsewhere \(0.5\)⟩" in found.to_markdown()


def test_the_report_splits_each_arms_failures_by_where_the_chain_broke(
        both: Benchmark) -> None:
    runs = both.runs.set_index(["arm", "item_id"])
    assert runs.loc[("half", "q1"), "attribution"] == "retrieval miss"
    assert runs.loc[("half", "q0"), "attribution"] is None or pd.isna(
        runs.loc[("half", "q0"), "attribution"])  # correct: not attributed
    split = both.attribution_summary().set_index(["arm", "attribution"])
    miss = split.loc[("half", "retrieval miss")]
    assert (miss["count"], miss["attributed"], miss["share"]) == (4, 4, 1.0)
    assert miss["ci_low"] == pytest.approx(clopper_pearson(4, 4).low)
    text = report_markdown(both)
    assert "| half | 4 | 4 (100%, 40%–100%) | 0 (0%, 0%–60%) | 0 (0%, 0%–60%) |" in text
    assert f"{HEADLINE}." in text


def test_report_html_has_the_retrieval_tables_when_made_and_when_made_again(
        both: Benchmark, tmp_path: Path) -> None:
    from hr_core.report import write_report

    made = (Path(both.run_dir or "") / "report.html").read_text("utf-8")
    again = Path(write_report(both.run_dir or "", tmp_path / "again.html")).read_text("utf-8")
    for html in (made, again):
        assert 'id="table-retrieval"' in html and 'id="table-attribution"' in html
        assert "0.250 (" in html  # half's MRR
        assert "4 (100%, 40%–100%)" in html


def test_report_html_without_contexts_has_no_retrieval_table(tmp_path: Path) -> None:
    bench = _run(tmp_path, {"plain": lambda p: "a0"})
    assert "table-retrieval" not in (Path(bench.run_dir or "") / "report.html").read_text(
        "utf-8")


def test_hr_diff_says_whether_retrieval_got_better(tmp_path: Path) -> None:
    from hr_cli.diff import run_diff

    then = _run(tmp_path, {"rag": _finds_half})
    now = _run(tmp_path, {"rag": _finds_all})
    found = diff_runs(then, now)
    change = {r.figure: r for r in found.arms[0].retrieval}
    assert set(change) == {"hit@10", "recall@10", "mrr"}
    hit = change["hit@10"]
    assert (hit.then, hit.now, hit.n_items) == (0.5, 1.0, 8)
    assert hit.diff == pytest.approx(0.5) and hit.decision in ("better", "no detectable change")
    assert change["mrr"].then == pytest.approx(0.25) and change["mrr"].now == 1.0
    assert "| rag | mrr | 0.250 | 1.000 |" in found.to_markdown()
    printed = _printed(run_diff, then.run_dir, now.run_dir, [], None, 10)
    assert "Retrieval: now - then over the paired items" in printed
    plain = _run(tmp_path, {"rag": lambda p: "a0"})
    assert diff_runs(plain, now).arms[0].retrieval == []  # then had no contexts


def test_the_diff_page_shows_the_contexts_of_the_flipped_items(tmp_path: Path) -> None:
    from hr_core.report.diff_html import write_diff_html

    found = diff_runs(_run(tmp_path, {"rag": _finds_half}), _run(tmp_path, {"rag": _finds_all}))
    page = Path(write_diff_html(found, tmp_path / "diff.html")).read_text("utf-8")
    assert "then: contexts" in page and "noise, elsewhere (0.5)" in page


def test_the_regression_check_compares_retrieval_too(tmp_path: Path) -> None:
    from hr_core.analysis.diff import diff_runs
    from hr_core.analysis.regression import regression_check

    then = _run(tmp_path / "then", {"rag": _finds_half})
    now = _run(tmp_path / "now", {"rag": _finds_all})
    report = regression_check(diff_runs(then, now), threshold=0.05)
    change = {r.figure: r for r in report.arms[0].retrieval}
    assert set(change) == {"hit@10", "recall@10", "mrr"}
    assert (change["hit@10"].then, change["hit@10"].now) == (0.5, 1.0)
    assert "## Retrieval" in report.to_markdown()
    with pytest.warns(DeprecationWarning):
        plain = compare_runs_plain(now, then)
    assert plain.arms[0].retrieval == []


def compare_runs_plain(now: Benchmark, then: Benchmark) -> Any:
    """The deprecated in-memory check, on runs tables without contexts."""
    from hr_core.analysis.regression import compare_runs

    return compare_runs(now.runs[["arm", "item_id", "run", "correct"]],
                        then.runs[["arm", "item_id", "run", "correct"]])


def _misreads_or_misses(payload: dict[str, Any]) -> ArmResult:
    """Items 0-3: the gold passage never retrieved, answer wrong (retrieval misses); 4-5:
    retrieved and misread (reading errors); 6-7: right."""
    n = _number(payload)
    found = n >= 4
    return ArmResult(answer=f"a{n}" if n >= 6 else "wrong", contexts=[
        Context(id=f"p{n}" if found else "elsewhere")])


def test_hr_diff_says_why_the_answers_that_flipped_to_wrong_failed(tmp_path: Path) -> None:
    """"Of the 6 answers that flipped to wrong, 4 never saw the passage": one run per
    item, so the share's interval is Clopper-Pearson's (4 of 6: 0.223-0.957)."""
    from hr_cli.diff import run_diff

    found = diff_runs(_run(tmp_path, {"rag": _finds_all}),
                      _run(tmp_path, {"rag": _misreads_or_misses}))
    arm = found.arms[0]
    assert arm.right_to_wrong == 6
    blame = {b.attribution: b for b in arm.flipped_blame}
    miss, misread = blame["retrieval miss"], blame["reading error"]
    assert (miss.count, miss.attributed, misread.count) == (4, 6, 2)
    assert miss.share == pytest.approx(4 / 6)
    assert (miss.ci_low, miss.ci_high) == pytest.approx((0.2228, 0.9567), abs=1e-4)
    assert (miss.ci_low, miss.ci_high) == pytest.approx(tuple(clopper_pearson(4, 6))[1:])
    assert blame["refusal despite evidence"].count == 0
    assert "| rag | retrieval miss | 4 of 6 | 67% | 22%-96% |" in found.to_markdown()
    printed = _printed(run_diff, found.run_a, found.run_b, [], None, 10)
    assert "Why the 6 answer(s) that flipped right→wrong failed now" in printed
    assert "4 of 6" in printed and "[22.3%, 95.7%]" in printed
    from hr_core.report.diff_html import write_diff_html

    page = Path(write_diff_html(found, tmp_path / "diff.html")).read_text("utf-8")
    assert 'id="table-blame-1"' in page and "4 of 6" in page
    no_gold = diff_runs(_run(tmp_path, {"rag": _finds_all}),
                        _run(tmp_path, {"rag": lambda p: "wrong"}))
    assert no_gold.arms[0].flipped_blame == []  # now without contexts: nothing to blame


def test_retrieval_figures_per_slice(tmp_path: Path) -> None:
    """hit@k by slice: _finds_half finds every even item's passage and no odd one's; 4
    items a slice (too few for a verdict), so each interval is Clopper-Pearson's of 4."""
    items = [{**item, "parity": "even" if i % 2 == 0 else "odd"} for i, item in enumerate(ITEMS)]
    plan = plan_benchmark({"half": _finds_half}, items, store=str(tmp_path), name="sliced",
                          slices=["parity"])
    bench = BenchmarkSession(plan).run_sync()
    table = bench.retrieval_slices()
    hit = table[(table["figure"] == "hit") & (table["k"] == 10)].set_index("slice_value")
    assert hit.loc["even", "value"] == 1.0 and hit.loc["odd", "value"] == 0.0
    assert (hit.loc["even", "ci_low"], hit.loc["even", "ci_high"]) == pytest.approx(
        tuple(clopper_pearson(4, 4))[1:])
    assert hit.loc["even", "ci_low"] == pytest.approx(0.3976, abs=1e-4)
    assert (hit["items"] == 4).all() and (hit["note"] != "").all()
    mrr = table[table["figure"] == "mrr"].set_index("slice_value")["value"]
    assert mrr["even"] == 0.5 and mrr["odd"] == 0.0  # found at rank 2
    text = report_markdown(Benchmark.load(bench.run_dir or ""))
    assert "### Retrieval by slice" in text
    assert "| parity | even | half | 4 | 1.000 (0.398–1.000) | 0.500 (" in text
    assert _run(tmp_path, {"half": _finds_half}, name="unsliced").retrieval_slices().empty
def test_the_markdown_retrieval_tables_are_narrow_enough_for_the_dashboard(
        both: Benchmark) -> None:
    """Before: one table of arm, items, figure and four depths (and a 5-column differences
    table), wider than the Prefect dashboard's artifact pane, which cut @10 and the
    decision off; now at most two depths a table, and a differences table per pair of arms
    with the p-value beside the difference."""
    text = report_markdown(both)
    section = text[text.index("## Retrieval"):text.index("### Why it failed")]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    assert max(line.count(" | ") + 1 for line in rows) <= 5
    headers = [line for line in rows if line.startswith("| arm | items | figure |")]
    assert headers == ["| arm | items | figure | @1 | @3 |", "| arm | items | figure | @5 | @10 |"]
    assert "| half | 8 | hit | 0.500 (0.157–0.843) | 0.500 (0.157–0.843) |" in section  # @5, @10
    assert "Paired differences, all − half:" in section
    assert "| hit@10 | +0.500 (" in section and "), p " in section


def test_the_terminal_s_why_it_failed_shows_an_arm_name_as_itself(tmp_path: Path) -> None:
    """An arm named like markup or an escape sequence is printed as its text in the table
    and in the line under it (hr_cli.literal.cell), never interpreted."""
    from hr_cli.commands import print_item_tables

    hostile = "[red]x[/] \x1b[2J"
    bench = _run(tmp_path, {hostile: _finds_half})
    printed = _printed(print_item_tables, Benchmark.load(bench.run_dir or ""))
    assert "\x1b" not in printed
    assert "[red]x[/] \\x1b[2J: of 4 failed answers, 4 (100%, 95% CI 40%–100%)" in printed
    assert printed.count("[red]x[/] \\x1b[2J") >= 3  # retrieval table, attribution table, line
