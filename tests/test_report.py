"""The HTML report: every section, figure and table present; self-contained; facts shown."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from report_data import VALIDATION, fake_inputs, fake_run_dir

from hr_core.analysis.outcomes import OUTCOMES, outcome_counts, paired_differences
from hr_core.report import (
    REPORT_SECTIONS,
    ReportError,
    attach_comparison,
    load_report_inputs,
    render_report,
    write_report,
)


@pytest.fixture(scope="module")
def page() -> str:
    return render_report(fake_inputs())


@pytest.mark.parametrize("section", [s for s, _ in REPORT_SECTIONS])
def test_every_section_is_present(page: str, section: str) -> None:
    assert f'<section id="{section}">' in page


@pytest.mark.parametrize(
    "figure",
    ["fig-accuracy", "fig-outcomes", "fig-forest", "fig-latency-cost", "fig-confusion-1",
     "fig-win-rate"],
)
def test_every_figure_is_an_inline_svg(page: str, figure: str) -> None:
    match = re.search(f'<figure id="{figure}">(.*?)</figure>', page, re.S)
    assert match is not None, figure
    assert match.group(1).startswith("<svg")
    assert "<figcaption>" in match.group(1)


@pytest.mark.parametrize(
    "table",
    ["table-facts", "table-summary", "table-outcomes", "table-differences", "table-validation-1",
     "table-pairwise"],
)
def test_every_table_is_present(page: str, table: str) -> None:
    assert re.search(f'<table[^>]*id="{table}"', page), table


def test_the_page_loads_nothing_from_anywhere(page: str) -> None:
    from hr_core.report.html import SEARCH_SCRIPT

    # one inline script, the search boxes, allowed by its hash (no other script may run)
    assert page.count("<script") == 1 and f"<script>{SEARCH_SCRIPT}</script>" in page
    policy = page.split("script-src")[1].split('"')[0]
    assert policy.startswith(" 'sha256-") and "unsafe" not in policy
    assert "<link" not in page
    assert "<img" not in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert not re.search(r"url\((['\"])?(https?:)?//", page)
    assert "@import" not in page
    assert "default-src 'none'" in page


def test_svg_ids_are_unique_across_figures(page: str) -> None:
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert len(ids) == len(set(ids))


def test_every_internal_svg_reference_points_to_an_id(page: str) -> None:
    ids = set(re.findall(r'\sid="([^"]+)"', page))
    refs = set(re.findall(r"url\(#([^)]+)\)", page)) | set(
        re.findall(r'href="#([^"]+)"', page)
    )
    assert refs - ids == set()


def test_run_facts_show_hashes_arms_scorer_budget_times_and_versions(page: str) -> None:
    facts = re.search(r'<table class="facts" id="table-facts">(.*?)</table>', page, re.S)
    assert facts is not None
    text = facts.group(1)
    for expected in ("ab" * 32, "keyword", "numbers", "abstain", "exact", "max_cost_usd",
                     "2026-11-29T21:00:00Z", "2026-11-29T21:00:09Z", "hr 0.1.0", "deadbeef"):
        assert expected in text, expected


def test_judge_hash_and_validation_status_appear_when_the_scorer_is_a_judge() -> None:
    inputs = fake_inputs()
    manifest = {**inputs.manifest, "judge": {"hash": "feedbeef" * 8, "validation": "valid"}}
    page = render_report(type(inputs)(manifest, inputs.runs, inputs.summary))
    assert "feedbeef" * 8 in page
    assert 'Judge feedbeeffeed: valid</span>' in page  # hr judge check's words


def test_validation_shows_agreement_kappa_consistency_and_confusion(page: str) -> None:
    section = page[page.index('<section id="judge-validation">'):]
    section = section[: section.index("</section>")]
    for expected in ("83.0%", "70.0% – 91.0%", "0.66", "100.0%", "mock-model",
                     VALIDATION["hash"][:12]):
        assert expected in section, expected


def test_summary_table_has_a_row_per_arm_best_first(page: str) -> None:
    table = re.search(r'id="table-summary">(.*?)</table>', page, re.S)
    assert table is not None
    arms = re.findall(r"<tr><td class=\"l\"><b>([^<]+)</b>", table.group(1))
    assert arms == ["keyword", "numbers", "abstain"]


def test_missing_judges_leave_a_note_not_a_gap() -> None:
    page = render_report(fake_inputs(with_judges=False))
    assert "No judge validation is attached" in page
    assert "No pairwise comparison is attached" in page
    assert 'id="fig-win-rate"' not in page


def test_text_from_the_run_is_escaped() -> None:
    inputs = fake_inputs(with_judges=False)
    runs = inputs.runs.copy()
    runs["arm"] = runs["arm"].replace({"keyword": "<script>alert(1)</script>"})
    summary = inputs.summary.copy()
    summary["arm"] = summary["arm"].replace({"keyword": "<script>alert(1)</script>"})
    page = render_report(type(inputs)({"name": "<b>x</b>"}, runs, summary))
    assert "<script>alert" not in page and page.count("<script>") == 1
    assert "&lt;script&gt;" in page


def test_outcome_counts_cover_every_run_once() -> None:
    inputs = fake_inputs()
    counts = outcome_counts(inputs.runs)
    assert list(counts.columns) == list(OUTCOMES)
    assert counts.sum(axis=1).tolist() == inputs.runs.groupby("arm", sort=False).size().tolist()


def test_outcomes_split_correct_failure_kinds_and_unscored() -> None:
    runs = pd.DataFrame({
        "arm": ["a"] * 4,
        "correct": pd.array([True, False, None, None], dtype="boolean"),
        "failure_kind": [None, "refusal", None, "budget_stop"],
    })
    row = outcome_counts(runs).loc["a"]
    assert (row["correct"], row["refusal"], row["unscored"], row["budget_stop"]) == (1, 1, 1, 1)


def test_paired_differences_are_against_the_best_arm() -> None:
    rows = paired_differences(fake_inputs().runs)
    assert {r.baseline for r in rows} == {"keyword"}
    assert [r.arm for r in rows] == ["numbers", "abstain"]
    assert all(r.ci_low <= r.diff <= r.ci_high for r in rows)
    assert rows[1].diff < rows[0].diff < 0


def test_write_report_reads_a_run_dir_and_its_attachments(tmp_path: Path) -> None:
    run_dir = fake_run_dir(tmp_path / "run")
    out = write_report(run_dir)
    assert out == run_dir / "report.html"
    text = out.read_text(encoding="utf-8")
    assert 'id="fig-confusion-1"' in text and 'id="fig-win-rate"' in text


def test_write_report_to_another_file(tmp_path: Path) -> None:
    run_dir = fake_run_dir(tmp_path / "run", with_judges=False)
    out = write_report(run_dir, tmp_path / "elsewhere" / "r.html")
    assert out.is_file() and not (run_dir / "report.html").exists()


def test_attachments_are_json_files_in_the_run_dir(tmp_path: Path) -> None:
    path = attach_comparison(tmp_path, {"hash": "abc123"}, pd.DataFrame(
        [{"a": "x", "b": "y", "win_rate": float("nan")}]))
    assert path.parent.name == "comparisons"
    assert json.loads(path.read_text())["summary"][0]["win_rate"] is None


@pytest.mark.parametrize("missing", ["manifest.json", "runs.parquet", "summary.parquet"])
def test_an_incomplete_run_dir_names_what_is_missing(tmp_path: Path, missing: str) -> None:
    run_dir = fake_run_dir(tmp_path / "run", with_judges=False)
    (run_dir / missing).unlink()
    with pytest.raises(ReportError, match=missing.split(".")[0]):
        load_report_inputs(run_dir)


def test_a_bad_manifest_is_a_report_error(tmp_path: Path) -> None:
    run_dir = fake_run_dir(tmp_path / "run", with_judges=False)
    (run_dir / "manifest.json").write_text("{not json")
    with pytest.raises(ReportError, match=r"manifest\.json"):
        load_report_inputs(run_dir)


def test_a_select_comparison_is_a_table_of_shares() -> None:
    inputs = fake_inputs(with_judges=False)
    select = [{"arm": a, "n": 20, "chosen": c, "share": c / 20, "ci_low": 0.1, "ci_high": 0.6,
               "consistency": 0.5, "no_verdict": 4} for a, c in (("keyword", 12), ("numbers", 8))]
    page = render_report(type(inputs)(
        inputs.manifest, inputs.runs, inputs.summary,
        comparisons=[{"judge": {"hash": "ab", "mode": "select"}, "summary": select}]))
    table = re.search(r'id="table-select">(.*?)</table>', page, re.S)
    assert table is not None and "60.0%" in table.group(1)


def test_a_judge_scorer_s_record_comes_from_the_store_the_run_named(tmp_path: Path) -> None:
    run_dir = fake_run_dir(tmp_path / "run", with_judges=False)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["judge"] = {"hash": VALIDATION["hash"], "validation": "stale",
                         "differences": ["rubric"], "store": str(tmp_path / "judges")}
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    (tmp_path / "judges").mkdir()
    (tmp_path / "judges" / f"{VALIDATION['hash']}.json").write_text(json.dumps(VALIDATION))
    inputs = load_report_inputs(run_dir)
    assert [v["hash"] for v in inputs.validations] == [VALIDATION["hash"]]
    page = render_report(inputs)
    assert "not validated: changed config: differs in rubric" in page
    assert 'id="fig-confusion-1"' in page


def test_a_judge_below_the_thresholds_shows_why_in_the_report(tmp_path: Path) -> None:
    run_dir = fake_run_dir(tmp_path / "run", with_judges=False)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["judge"] = {"hash": VALIDATION["hash"], "validation": "insufficient",
                         "differences": [], "reasons": [
                             "too few items: 48 < min_items 50",
                             "agreement too low: lower bound 66.3% < min_agreement 70.0%"]}
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    page = render_report(load_report_inputs(run_dir))
    assert ("not valid: too few items: 48 &lt; min_items 50; agreement too low: "
            "lower bound 66.3% &lt; min_agreement 70.0%</span>") in page


def test_judge_failure_counts_appear_in_the_summary_when_there_are_any() -> None:
    inputs = fake_inputs(with_judges=False)
    summary = inputs.summary.assign(judge_no_consensus=[3, 0, 0], judge_error=[0, 0, 0])
    page = render_report(type(inputs)(inputs.manifest, inputs.runs, summary))
    table = re.search(r'id="table-summary">(.*?)</table>', page, re.S)
    assert table is not None
    assert "judge no consensus" in table.group(1) and "judge error" not in table.group(1)


def test_reference_lines_are_read_whatever_their_shape_and_parsed_when_shown(
        tmp_path: Path) -> None:
    """The report reads each item's id from the line's start and parses the rest only for
    the items a table shows (issue 14: 333k items); other line shapes are parsed whole."""
    run_dir = fake_run_dir(tmp_path / "run", with_judges=False)
    (run_dir / "reference.jsonl").write_text(
        '{"id":"q\\"1","payload":{"question":"Why?"},"label":"because"}\n'
        "\n"
        '{"label": "two", "id": "q2", "payload": "What is 2?"}\n'
        '{"id":7,"payload":"seven","label":7}\n'
        '{"id":"q9","payload":"broken\n', encoding="utf-8")
    items = load_report_inputs(run_dir).items
    assert sorted(items) == ['7', 'q"1', "q2", "q9"]
    assert (items['q"1'].question, items['q"1'].label) == ("Why?", "because")
    assert (items["q2"].question, items["7"].label) == ("What is 2?", "7")
    with pytest.raises(ReportError, match=r"reference\.jsonl, line 5: not a readable JSON"):
        items["q9"]
