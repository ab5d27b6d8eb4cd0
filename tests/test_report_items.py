"""Single items in the report: failed runs by arm and kind, disagreements, verdict, arm order."""

from __future__ import annotations

import re

import pandas as pd
from report_data import fake_inputs

from hr_core.analysis.items import (
    ROWS_PER_GROUP,
    ItemText,
    arm_order,
    disagreements,
    excerpt,
    failed_runs,
)
from hr_core.analysis.verdict import verdict
from hr_core.report import render_report


def _runs(n: int, arms: dict[str, str]) -> pd.DataFrame:
    """``n`` items; each arm answers ``"right"`` (correct), ``"wrong"`` or ``"error"``."""
    rows = []
    for arm, how in arms.items():
        for i in range(n):
            kind = None if how == "right" else how
            rows.append({"arm": arm, "item_id": f"q{i}", "run": 1,
                         "output": None if how == "error" else f"{arm} answer {i}",
                         "correct": how == "right", "failure_kind": kind,
                         "error": "KeyError: 'questoin'" if how == "error" else None,
                         "latency_s": 0.01, "tokens_in": None, "tokens_out": None,
                         "cost_usd": None})
    frame = pd.DataFrame(rows)
    frame["correct"] = frame["correct"].astype("boolean")
    return frame


def _summary(runs: pd.DataFrame) -> pd.DataFrame:
    acc = runs.groupby("arm", sort=False)["correct"].mean().astype(float)
    return pd.DataFrame({"arm": acc.index, "accuracy": acc.to_numpy(), "ci_low": acc.to_numpy(),
                         "ci_high": acc.to_numpy(),
                         "runs": runs.groupby("arm", sort=False).size().to_numpy(),
                         "error": runs.groupby("arm", sort=False)["failure_kind"].agg(
                             lambda s: int((s == "error").sum())).to_numpy()})


def test_failed_runs_carry_item_question_label_output_and_error() -> None:
    runs = _runs(3, {"good": "right", "typo": "error"})
    items = {f"q{i}": ItemText(f"question {i}?", f"label {i}") for i in range(3)}
    rows = failed_runs(runs, items)
    assert rows.columns.tolist() == ["arm", "failure_kind", "item_id", "run", "question",
                                     "label", "output", "error"]
    assert rows.iloc[0].tolist() == ["typo", "error", "q0", 1, "question 0?", "label 0", "",
                                     "KeyError: 'questoin'"]
    assert len(failed_runs(runs, items, arm="good")) == 0
    assert failed_runs(runs, items, item="q2")["item_id"].tolist() == ["q2"]
    assert len(failed_runs(runs, items, kind="wrong")) == 0


def test_disagreements_put_the_two_arms_side_by_side() -> None:
    runs = pd.concat([_runs(4, {"a": "right"}), _runs(4, {"b": "wrong"}).iloc[:2],
                      _runs(4, {"b": "right"}).iloc[2:]])
    rows = disagreements(runs, "a", "b", {})
    assert rows["item_id"].tolist() == ["q0", "q1"]
    assert rows[["a_output", "a_correct", "b_output", "b_correct"]].iloc[0].tolist() == [
        "a answer 0", "correct", "b answer 0", "wrong"]


def test_disagreements_leave_out_runs_a_budget_stopped() -> None:
    """Before: a budget-stopped run (correct False) of b counted as b being wrong."""
    runs = pd.concat([_runs(4, {"a": "right"}), _runs(4, {"b": "right"}),
                      _runs(4, {"b": "budget_stop"}).assign(run=2)])
    assert disagreements(runs, "a", "b", {}).empty


def test_excerpt_is_one_short_line() -> None:
    assert excerpt("a\n  b", 10) == "a b"
    assert excerpt("x" * 50, 10) == "x" * 9 + "…"
    assert excerpt(None) == "" and excerpt(["A", 1]) == '["A",1]'


def test_item_tables_are_capped_per_group_and_say_how_many_more() -> None:
    n = ROWS_PER_GROUP + 40
    runs = _runs(n, {"good": "right", "typo": "error"})
    inputs = fake_inputs(with_judges=False)
    page = render_report(type(inputs)(inputs.manifest, runs, _summary(runs)))
    table = re.search(r'id="table-failed-2-typo-error"[^>]*>(.*?)</table>', page, re.S)
    assert table is not None
    assert table.group(1).count("<tr>") == ROWS_PER_GROUP + 1  # header + capped rows
    assert "40 more error runs of typo not shown" in page
    assert "runs.parquet" in page


def test_the_two_best_arms_disagreements_are_in_the_report() -> None:
    page = render_report(fake_inputs())
    section = page[page.index('<section id="disagreements">'):]
    section = section[:section.index("</section>")]
    assert "<b>keyword</b> and <b>numbers</b>" in section
    assert re.search(r'<th class="l">keyword: output</th>.*<th class="l">numbers: output</th>',
                     section)
    assert "What is answer" in section  # the question, from the reference


def test_failed_runs_section_groups_each_arm_by_kind() -> None:
    page = render_report(fake_inputs())
    section = page[page.index('<section id="failures">'):]
    section = section[:section.index("</section>")]
    headings = re.findall(r"<h3>([^<]+)</h3>", section)
    assert headings == ["keyword", "numbers", "abstain"]
    assert "TimeoutError: slow" in section and "What is answer" in section
    assert "never started: the budget ran out" in section


def test_the_verdict_comes_first_with_best_arm_differences_coverage_and_errors() -> None:
    page = render_report(fake_inputs())
    sections = re.findall(r'<section id="([^"]+)">', page)
    assert sections[0] == "verdict" and sections[-1] == "facts"
    table = re.search(r'id="table-verdict">(.*?)</table>', page, re.S)
    assert table is not None
    rows = re.findall(r"<tr>(.*?)</tr>", table.group(1), re.S)
    assert "coverage" in rows[0] and "errors" in rows[0] and "p-value" in rows[0]
    assert "keyword</b> (best)" in rows[1]
    assert "keyword is the best arm" in page


def test_arms_are_in_one_order_in_every_table_and_figure() -> None:
    inputs = fake_inputs()
    reversed_runs = inputs.runs.iloc[::-1].reset_index(drop=True)  # abstain first in the runs
    page = render_report(type(inputs)(inputs.manifest, reversed_runs,
                                      inputs.summary.iloc[::-1].reset_index(drop=True),
                                      items=inputs.items))
    expected = ["keyword", "numbers", "abstain"]
    for table_id in ("table-verdict", "table-summary", "table-outcomes"):
        table = re.search(f'id="{table_id}">(.*?)</table>', page, re.S)
        assert table is not None
        assert re.findall(r'<tr><td class="l"><b>([a-z]+)</b>', table.group(1)) == expected
    differences = re.search(r'id="table-differences">(.*?)</table>', page, re.S)
    assert differences is not None
    assert re.findall(r'<tr><td class="l"><b>([a-z]+)</b>', differences.group(1)) == expected[1:]
    for fig in ("fig-accuracy", "fig-outcomes", "fig-forest", "fig-latency-cost"):
        svg = re.search(f'<figure id="{fig}">(.*?)</figure>', page, re.S)
        assert svg is not None
        labels = re.findall(r">(keyword|numbers|abstain)<", svg.group(1))
        assert labels == (expected[1:] if fig == "fig-forest" else expected), (fig, labels)


def test_verdict_and_arm_order_of_a_run() -> None:
    runs = _runs(20, {"typo": "error", "good": "right", "bad": "wrong"})
    summary = _summary(runs)
    assert arm_order(summary) == ["good", "typo", "bad"] or arm_order(summary)[0] == "good"
    result = verdict(runs, summary)
    assert result.best == "good"
    typo = next(r for r in result.rows if r.arm == "typo")
    assert typo.errors == 20 and typo.significant and typo.diff == -1.0


def test_the_verdict_says_too_few_items_to_tell_below_the_minimum() -> None:
    """Before: 3 items all right against all wrong were 'significantly worse' (CI [-1, -1])."""
    runs = _runs(3, {"good": "right", "bad": "wrong"})
    result = verdict(runs, _summary(runs))
    bad = next(r for r in result.rows if r.arm == "bad")
    assert not bad.significant and bad.too_few_items
    assert "Too few items to tell against bad (3 paired)." in result.headline()
    assert "Significantly worse" not in result.headline()


def test_name_codes_of_a_categorical_match_the_comparison_per_name() -> None:
    """The categorical path (codes and categories) gives what one comparison per name gives:
    missing values, categories not named, names not among the categories, unused ones."""
    import numpy as np

    from hr_core.stats.accuracy import name_codes

    values = ["b", None, "a", "c", "b", None, "d"]
    plain = pd.Series(values, dtype=object)
    coded = pd.Series(pd.Categorical(values, categories=["d", "c", "b", "a", "unused"]))
    for names in (["a", "b"], ["b", "x", "a", "c", "d"], [], ["unused"], ["x"]):
        want = name_codes(names, plain)
        assert np.array_equal(name_codes(names, coded), want), names
        assert name_codes(names, coded).dtype == want.dtype
    empty = pd.Series(pd.Categorical([], categories=["a"]))
    assert name_codes(["a"], empty).tolist() == []
    assert name_codes(["a"], pd.Series(pd.Categorical([None, None]))).tolist() == [-1, -1]
